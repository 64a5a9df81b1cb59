"""Processes talking over 127.0.0.1 and several logical devices: JAX
multi-process DataParallel, TensorFlow's MirroredStrategy, PyTorch DDP.
Each runs only on its own backend (the engine exists only there)."""

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(job, tmp_path, count=1, backend=None, **variables):
    """Starts ``count`` worker processes, waits, returns their outputs."""
    port = _free_port()
    processes = []
    for index in range(count):
        env = dict(os.environ, KERAS_BACKEND=backend or os.environ.get(
            "KERAS_BACKEND", "tensorflow"), **{k: str(v) for k, v in variables.items()})
        env.update(
            KZOO_TEST_PROCESSES=str(count), KZOO_TEST_PROCESS_ID=str(index),
            KZOO_TEST_COORDINATOR=f"127.0.0.1:{port}",
            RANK=str(index), WORLD_SIZE=str(count), MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        output = tmp_path / f"{job}_{count}_{index}.npz"
        processes.append((output, subprocess.Popen(
            [sys.executable, WORKER, job, str(output)], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    logs = []
    try:
        for _, process in processes:
            logs.append(process.communicate(timeout=1800)[0])
    finally:  # a failed or hung process must not leave its peers waiting
        for _, process in processes:
            if process.poll() is None:
                process.kill()
    for (output, process), log in zip(processes, logs):
        assert process.returncode == 0, log[-3000:]
    return [dict(np.load(output)) for output, _ in processes]


def _weights(result):
    count = len([k for k in result if k.startswith("weight_")])
    return [result[f"weight_{i}"] for i in range(count)]


@pytest.mark.backends("jax")
def test_jax_two_processes_train_like_one(tmp_path):
    # One CPU device per process: the two processes make a mesh of 2.
    both = _run("jax_data_parallel", tmp_path, count=2, XLA_FLAGS="")
    alone = _run("jax_data_parallel", tmp_path, count=1, XLA_FLAGS="")[0]
    assert [int(r["devices"]) for r in both] == [2, 2]
    assert int(alone["devices"]) == 1
    np.testing.assert_allclose(both[0]["losses"], both[1]["losses"], atol=1e-6)
    np.testing.assert_allclose(both[0]["losses"], alone["losses"], atol=1e-5)
    for a, b in zip(_weights(both[0]), _weights(alone)):
        np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.backends("tensorflow")
def test_tensorflow_mirrored_strategy_trains_like_one_device(tmp_path):
    # Each replica averages its loss over its own real tokens: equal to one
    # device when the replicas hold as many real tokens each, as here (every
    # LM text fills its window).
    result = _run("tf_mirrored", tmp_path)[0]
    assert int(result["replicas"]) == 2
    for name in ("bert", "gpt"):
        assert len(result[f"{name}_mirrored"]) == 2
        np.testing.assert_allclose(result[f"{name}_mirrored"],
                                   result[f"{name}_one_device"], rtol=1e-5, atol=1e-5)
        assert float(result[f"{name}_difference"]) <= 1e-5
        assert float(result[f"{name}_moved"]) > 1e-3


@pytest.mark.backends("torch")
def test_torch_ddp_two_processes_equal_one_process_on_the_whole_batch(tmp_path):
    import kzoo
    from tests.distribution import tiny_models

    ranks = _run("torch_ddp", tmp_path, count=2)
    assert [int(r["rank"]) for r in ranks] == [0, 1]
    model = tiny_models.bert_classifier()
    initial = model.get_weights()
    kzoo.distribution.torch_ddp.fit(model, tiny_models.TEXTS, tiny_models.LABELS,
                                    batch_size=8, steps=2, shuffle=False, verbose=False)
    for a, b, c, start in zip(_weights(ranks[0]), _weights(ranks[1]),
                              model.get_weights(), initial):
        np.testing.assert_array_equal(a, b)  # DDP keeps the ranks identical
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
    assert max(np.abs(a - b).max() for a, b in zip(model.get_weights(), initial)) > 1e-4
