"""A pretraining run killed (SIGKILL) after its first epoch and started again
with the same command finishes with the model of an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import keras
import numpy as np

from tests.cli.conftest import TINY, write_corpus


# The `kzoo` command, whose run waits once its first epoch's checkpoint is
# written: the test kills it there whatever the machine's speed (a run left
# to go on could finish its second epoch before a busy test process looks).
_WAITS_AFTER_FIRST_EPOCH = """
import sys, time
from kzoo.callbacks.epoch_checkpoint import EpochCheckpoint
from kzoo.cli import main

save = EpochCheckpoint.save

def save_then_wait(self, epoch):
    save(self, epoch)
    if epoch == 1:
        while True:
            time.sleep(60)

EpochCheckpoint.save = save_then_wait
sys.argv[0] = "kzoo"
sys.exit(main())
"""


def _command(corpus, output, wait_after_first_epoch=False):
    program = (["-c", _WAITS_AFTER_FIRST_EPOCH] if wait_after_first_epoch
               else ["-m", "kzoo.cli"])
    return [sys.executable, *program, "pretrain", "gpt", "--corpus", corpus,
            "--output", str(output), "--epochs", "2", "--backend",
            keras.config.backend(), *TINY["gpt"], "--batch-size", "8"]


def _weights(preset):
    values = {}
    for name in ("model.weights.h5", "task.weights.h5"):
        with h5py.File(os.path.join(preset, name)) as f:
            f.visititems(lambda key, item: values.__setitem__(
                f"{name}/{key}", item[()]) if isinstance(item, h5py.Dataset) else None)
    return values


def _finished_epochs(output):
    try:
        with open(os.path.join(f"{output}.run", "checkpoint", "state.json")) as f:
            return json.load(f)["epoch"]
    except (FileNotFoundError, json.JSONDecodeError):
        return 0


def test_killed_run_resumes_to_the_same_model(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.txt", documents=24)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]),
               KERAS_BACKEND=keras.config.backend())
    reference = subprocess.Popen(_command(corpus, tmp_path / "reference"), env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    killed = tmp_path / "killed"
    victim_log = open(tmp_path / "victim.log", "w+")
    victim = subprocess.Popen(_command(corpus, killed, wait_after_first_epoch=True),
                              env=env, stdout=subprocess.DEVNULL, stderr=victim_log)
    deadline = time.monotonic() + 1800  # a generous bound for a loaded machine
    while _finished_epochs(killed) < 1 and victim.poll() is None:
        assert time.monotonic() < deadline, "no checkpoint after 1800 s"
        time.sleep(0.05)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    victim_log.seek(0)
    assert victim.returncode == -signal.SIGKILL, (
        "the run ended before the kill: " + victim_log.read()[-3000:])
    victim_log.close()
    assert _finished_epochs(killed) == 1 and not os.path.exists(killed)

    resumed = subprocess.run(_command(corpus, killed), env=env, capture_output=True,
                             text=True, timeout=1800)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming from" in resumed.stdout
    assert reference.wait(timeout=1800) == 0, reference.stderr.read()[-3000:]
    expected, got = _weights(tmp_path / "reference"), _weights(killed)
    assert expected.keys() == got.keys()
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-6,
                                   err_msg=key)
