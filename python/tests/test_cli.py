"""Python kernels through the `tessera` binary: --plugin FILE.py (or
TESSERA_PLUGINS) on list, run, regress and sweep, as C++ plugins."""
import json
import os

from conftest import SOURCE_DIR, run_tessera

FIRST = os.path.join(SOURCE_DIR, "docs", "examples", "python", "first_kernel.py")


def test_list_shows_the_python_kernel_and_its_file():
    status, out, err = run_tessera("list", "kernels", "--plugin", FIRST)
    assert status == 0, err
    line = next(l for l in out.splitlines() if l.startswith("scaled_relu "))
    assert "F=512,bufs=2" in line and os.path.realpath(FIRST) in line


def test_run_takes_params_and_checks_the_numpy_reference():
    status, out, err = run_tessera("run", "--plugin", FIRST, "--config", "small", "--kernel", "scaled_relu",
                                   "--fidelity", "tlm", "--param", "F=100,bufs=3", "--json")
    assert status == 0, err
    r = json.loads(out)
    assert r["params"] == {"F": 100, "bufs": 3}
    assert r["checked"] and r["correct"]


def test_the_environment_loads_it_too():
    status, out, err = run_tessera("run", "--config", "tiny", "--kernel", "scaled_relu", "--fidelity", "tlm",
                                   "--shape", "R=8,C=40", env={"TESSERA_PLUGINS": FIRST})
    assert status == 0, err
    assert "numerics: match" in out


def test_regress_and_sweep_run_python_kernels(tmp_path):
    suite = tmp_path / "py.yaml"
    suite.write_text("description: python kernels\n"
                     "defaults: {fidelity: tlm}\n"
                     "tests:\n"
                     "  - {name: relu, kernel: scaled_relu, configs: [tiny, small], shapes: [{R: 20, C: 50}],\n"
                     "     params: [{F: 16}, {F: 64, bufs: 1}]}\n")
    status, out, err = run_tessera("regress", str(suite), "--plugin", FIRST, "-j", "2", "--out", str(tmp_path / "r"))
    assert status == 0, out + err
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert [r["status"] for r in results] == ["pass"] * 4
    study = tmp_path / "study.yaml"
    study.write_text("description: relu against HBM bandwidth\nbase: small\nfidelity: tlm\n"
                     "parameters:\n  - {name: hbm, key: hbm.bandwidth_gbps, values: [32, 128]}\n"
                     "kernels:\n  - {kernel: scaled_relu, shapes: [{R: 64, C: 1024}]}\n")
    status, out, err = run_tessera("sweep", str(study), "--plugin", FIRST, "--no-plots", "--out", str(tmp_path / "s"))
    assert status == 0, out + err
    points = json.loads((tmp_path / "s" / "results.json").read_text())["points"]
    assert [p["status"] for p in points] == ["pass", "pass"]
    assert points[0]["report"]["time_ns"] > points[1]["report"]["time_ns"]  # more bandwidth, less time


def test_a_broken_python_plugin_is_an_error_naming_the_file(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import tessera\nraise RuntimeError('this plugin is broken')\n")
    status, out, err = run_tessera("list", "kernels", "--plugin", str(bad))
    assert status == 2
    assert f"plugin {bad}" in err and "this plugin is broken" in err
