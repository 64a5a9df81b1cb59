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


def test_opting_out_changes_nothing(monkeypatch):
    calls = []
    monkeypatch.setenv(memory.MALLOC_ENV, "0")
    monkeypatch.setattr(memory, "_malloc_tuned", False)
    monkeypatch.setattr(memory.ctypes, "CDLL",
                        lambda *a: calls.append(a) or pytest.fail("CDLL called"))
    memory.reuse_freed_memory()
    memory.reuse_freed_memory()
    assert calls == []


def test_other_backends_change_nothing(monkeypatch):
    monkeypatch.delenv(memory.MALLOC_ENV, raising=False)
    monkeypatch.setattr(memory, "_malloc_tuned", False)
    monkeypatch.setattr(memory.keras.backend, "backend", lambda: "jax")
    monkeypatch.setattr(memory.ctypes, "CDLL", lambda *a: pytest.fail("CDLL called"))
    memory.reuse_freed_memory()
    assert not memory._malloc_tuned


def test_a_task_sets_it_before_training(monkeypatch):
    import kzoo

    calls = []
    monkeypatch.setattr(memory, "reuse_freed_memory", lambda: calls.append(1))
    monkeypatch.setattr(kzoo.ops, "reuse_freed_memory", lambda: calls.append(1))
    backbone = kzoo.BertBackbone(vocabulary_size=20, num_layers=1, num_heads=2,
                                 hidden_dim=8, intermediate_dim=16,
                                 max_sequence_length=8)
    task = kzoo.BertClassifier(backbone=backbone, num_classes=2, preprocessor=None)
    task.compile(optimizer="sgd",
                 loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = {"token_ids": np.ones((2, 8), "int32"), "segment_ids": np.zeros((2, 8), "int32"),
         "padding_mask": np.ones((2, 8), "int32")}
    task.train_on_batch(x, np.array([0, 1]))
    assert calls
