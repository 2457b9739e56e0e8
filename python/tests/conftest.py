"""Shared by the Python tests (run by CTest with PYTHONPATH=build/python)."""
import os
import subprocess

import pytest

SOURCE_DIR = os.environ.get("TESSERA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TESSERA_BIN = os.environ.get("TESSERA_BIN", os.path.join(SOURCE_DIR, "build", "tessera"))


def run_tessera(*args, env=None):
    """The real `tessera` binary: (exit status, stdout, stderr)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run([TESSERA_BIN, *args], capture_output=True, text=True, env=full_env, timeout=600)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def source_dir():
    return SOURCE_DIR
