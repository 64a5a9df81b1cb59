"""`kzoo.ops.sparse_rows`: the allocator setting of the PyTorch step."""

import platform
import resource

import keras
import pytest

from kzoo.ops import sparse_rows


@pytest.mark.skipif(keras.backend.backend() != "torch",
                    reason="the setting is made for PyTorch's sparse step")
@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_freed_tensors_come_back_without_page_faults(monkeypatch):
    import torch

    monkeypatch.delenv(sparse_rows.MALLOC_ENV, raising=False)
    monkeypatch.setattr(sparse_rows, "_malloc_tuned", False)
    sparse_rows.reuse_freed_memory()
    assert sparse_rows._malloc_tuned
    size = 10 * 2**20 // 4  # 10 MiB of float32: 2,560 pages of 4 KiB
    for _ in range(3):
        torch.empty(size).fill_(1.0)  # the heap grows to hold it once
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        torch.empty(size).fill_(1.0)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    # Served by mmap or trimmed off the heap, each block would fault on every
    # page: 20 x 2,560. Reused, none do (a few from other threads at most).
    assert faults < 2_000, faults


def test_opting_out_changes_nothing(monkeypatch):
    calls = []
    monkeypatch.setenv(sparse_rows.MALLOC_ENV, "0")
    monkeypatch.setattr(sparse_rows, "_malloc_tuned", False)
    monkeypatch.setattr(sparse_rows.ctypes, "CDLL",
                        lambda *a: calls.append(a) or pytest.fail("CDLL called"))
    sparse_rows.reuse_freed_memory()
    sparse_rows.reuse_freed_memory()
    assert calls == [] and sparse_rows._malloc_tuned
