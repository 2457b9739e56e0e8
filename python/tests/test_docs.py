"""docs/python.md stays true: its first kernel is docs/examples/python/first_kernel.py
word for word, and both of its examples run."""
import os
import re
import subprocess
import sys

from conftest import SOURCE_DIR

DOC = os.path.join(SOURCE_DIR, "docs", "python.md")
FIRST = os.path.join(SOURCE_DIR, "docs", "examples", "python", "first_kernel.py")


def blocks():
    return re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)


def test_the_first_kernel_in_the_guide_is_the_example_file():
    assert open(FIRST).read() in blocks()


def test_the_first_kernel_runs():
    p = subprocess.run([sys.executable, FIRST], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "scaled_relu on small:" in p.stdout and "numerics match" in p.stdout


def test_the_notebook_example_runs():
    notebook = next(b for b in blocks() if "for config in" in b)
    p = subprocess.run([sys.executable, "-c", notebook], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "neuroncore-v4" in p.stdout
