"""bench/_timing.py: a row of ``run_commands`` runs in the interpreter it names."""

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.without_tensorflow  # needs no Keras at all

# A worker as the benchmarks write them: timed calls that take turns, then
# one JSON line (here: the interpreter it runs in).
WORKER = """
import json, sys
sys.path.insert(0, sys.argv[1])
import _timing
timing = _timing.time_calls(lambda: None, 1, 2)
print(json.dumps({"python": sys.executable, "calls": len(timing["times_s"])}))
"""


@pytest.fixture(scope="module")
def timing():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("bench_timing", ROOT / "bench" / "_timing.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return module


@pytest.mark.parametrize("interleave", [True, False])
def test_a_row_runs_in_the_interpreter_it_names(timing, tmp_path, interleave):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    other = tmp_path / "other-python"  # another path to an interpreter
    os.symlink(sys.executable, other)
    argv = [str(script), str(ROOT / "bench")]
    rows = [("own", argv, {}), ("other", argv, {}, str(other))]
    results = dict(timing.run_commands([rows], timeout=60, interleave=interleave))
    assert results["own"]["python"] == sys.executable, results
    assert results["other"]["python"] == str(other), results
    assert results["own"]["calls"] == results["other"]["calls"] == 2


_PREPARED = """
import sys
sys.path.insert(0, sys.argv[1])
import _timing
_timing.prepare_worker(sys.argv[2], None, sys.argv[3])
from kzoo.ops import memory
print(memory.malloc_tuned())
"""


@pytest.mark.parametrize("backend, asked, tuned", [
    ("torch", None, False), ("torch", "1", True), ("jax", "1", False)])
def test_a_pytorch_worker_tunes_malloc_only_when_asked(backend, asked, tuned):
    import subprocess

    pytest.importorskip(backend)
    env = {k: v for k, v in os.environ.items() if k != "KZOO_MALLOC_TUNING"}
    if asked:
        env["KZOO_MALLOC_TUNING"] = asked
    out = subprocess.run([sys.executable, "-c", _PREPARED, str(ROOT / "bench"), backend,
                          str(ROOT)], env=env, check=True, capture_output=True,
                         text=True).stdout.split()
    # Every row of the worker, kzoo's or not, runs after this setup.
    assert out[-1] == str(tuned and sys.platform == "linux")
