"""`kzoo.ops.memory`: the allocator setting under PyTorch's training steps."""

import platform
import subprocess
import sys

import keras
import numpy as np
import pytest

from kzoo.ops import memory

TORCH = pytest.mark.skipif(keras.backend.backend() != "torch",
                           reason="the setting is made for PyTorch's steps")
GLIBC = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")


_FAULTS = """
import importlib.util, resource, statistics, sys, torch
# the module alone (kzoo's package would import much more)
spec = importlib.util.spec_from_file_location("memory", sys.argv[2])
memory = importlib.util.module_from_spec(spec)
spec.loader.exec_module(memory)
if sys.argv[1] == "tuned":
    memory.reuse_freed_memory()
size = 48 * 2**20 // 4  # 48 MiB of float32 (12,288 pages of 4 KiB), over
                        # the largest size glibc's mmap threshold takes
for _ in range(3):
    torch.empty(size).fill_(1.0)  # the heap grows to hold it once
counts = []
for _ in range(15):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    torch.empty(size).fill_(1.0)
    counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(statistics.median(counts))
"""


@TORCH
@GLIBC
def test_freed_tensors_come_back_without_page_faults(monkeypatch):
    # In a fresh process, as a training script starts.
    monkeypatch.delenv(memory.MALLOC_ENV, raising=False)
    monkeypatch.setenv("KERAS_BACKEND", "torch")

    def faults(mode):  # the median block's page faults
        out = subprocess.run([sys.executable, "-c", _FAULTS, mode, memory.__file__],
                             check=True, capture_output=True, text=True).stdout
        return float(out)

    # Served by mmap, a block faults on every page; reused, on none.
    assert faults("default") > 10_000
    assert faults("tuned") < 100


_TRAIN = """
import resource, statistics
import numpy as np, keras, torch, kzoo
from kzoo.ops import memory
backbone = kzoo.BertBackbone(vocabulary_size=20, num_layers=1, num_heads=2,
                             hidden_dim=8, intermediate_dim=16, max_sequence_length=8)
task = kzoo.BertClassifier(backbone=backbone, num_classes=2, preprocessor=None)
task.compile(optimizer="sgd",
             loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
x = {"token_ids": np.ones((2, 8), "int32"), "segment_ids": np.zeros((2, 8), "int32"),
     "padding_mask": np.ones((2, 8), "int32")}
task.train_on_batch(x, np.array([0, 1]))
size = 48 * 2**20 // 4  # as in _FAULTS: over glibc's largest mmap threshold
for _ in range(3):
    torch.empty(size).fill_(1.0)
counts = []
for _ in range(9):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    torch.empty(size).fill_(1.0)
    counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(memory.malloc_tuned(), statistics.median(counts))
"""


def _train_in_fresh_process(monkeypatch, tuning):
    """A fresh PyTorch process that trains a tiny kzoo task, then allocates
    48 MiB blocks: whether kzoo tuned malloc, and a block's page faults."""
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    if tuning is None:
        monkeypatch.delenv(memory.MALLOC_ENV, raising=False)
    else:
        monkeypatch.setenv(memory.MALLOC_ENV, tuning)
    out = subprocess.run([sys.executable, "-c", _TRAIN], check=True,
                         capture_output=True, text=True).stdout.split()
    return out[-2] == "True", float(out[-1])


@TORCH
@GLIBC
def test_training_leaves_malloc_alone_by_default(monkeypatch):
    tuned, faults = _train_in_fresh_process(monkeypatch, None)
    assert not tuned
    assert faults > 10_000  # glibc's default: the block is mmap'ed afresh


@TORCH
@GLIBC
def test_training_tunes_malloc_when_asked(monkeypatch):
    tuned, faults = _train_in_fresh_process(monkeypatch, "1")
    assert tuned
    assert faults < 100


def test_not_asked_changes_nothing(monkeypatch):
    for value in (None, "0", ""):
        if value is None:
            monkeypatch.delenv(memory.MALLOC_ENV, raising=False)
        else:
            monkeypatch.setenv(memory.MALLOC_ENV, value)
        monkeypatch.setattr(memory, "_malloc_tuned", False)
        monkeypatch.setattr(memory.ctypes, "CDLL", lambda *a: pytest.fail("CDLL called"))
        memory.tune_malloc_if_asked()
        assert not memory.malloc_tuned()


def test_other_backends_change_nothing_when_asked(monkeypatch):
    monkeypatch.setenv(memory.MALLOC_ENV, "1")
    monkeypatch.setattr(memory, "_malloc_tuned", False)
    monkeypatch.setattr(memory.keras.backend, "backend", lambda: "jax")
    monkeypatch.setattr(memory.ctypes, "CDLL", lambda *a: pytest.fail("CDLL called"))
    memory.tune_malloc_if_asked()
    assert not memory.malloc_tuned()
