"""The C allocator setting that keeps PyTorch's freed CPU memory for reuse
(opt-in: kzoo leaves the process's malloc alone unless asked).

PyTorch keeps no cache of CPU memory: every tensor is a fresh ``malloc``
and every freed one a ``free``. glibc serves large blocks with ``mmap``
(unmapped again when freed) and trims freed memory off the top of its heap,
so a training step's activations, gradients and optimizer temporaries come
back as new pages every step, each page a fault. ``reuse_freed_memory``
makes glibc serve every block from its heap and keep up to 256 MiB of freed
memory at the heap's top. Measured on a small BERT's fine-tuning step
(PyTorch, 2 cores, interleaved A/B runs): 17,000-88,000 minor page faults a
step by default, 1 with the setting; 0.619 s a step by default, 0.574 s with
it; the same peak memory (1.89 GiB against 1.86).

The setting is process-wide (``mallopt``: ``M_MMAP_THRESHOLD`` 32 MiB,
``M_MMAP_MAX`` 0, ``M_TRIM_THRESHOLD`` 256 MiB), so kzoo never makes it by
default. Turn it on either way:

- ``KZOO_MALLOC_TUNING=1`` in the environment: a kzoo task's ``fit`` /
  ``train_on_batch`` (``kzoo.models.Task``) and the sparse word2vec step
  make it when PyTorch starts training (``tune_malloc_if_asked``);
- an explicit ``kzoo.ops.memory.reuse_freed_memory()`` call, anywhere.

On C libraries other than glibc (musl, macOS, Windows) nothing is changed.
"""

import ctypes
import os
import platform

import keras

#: set to "1" to let kzoo's PyTorch training make the allocator setting
MALLOC_ENV = "KZOO_MALLOC_TUNING"
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -3, -4
_malloc_tuned = False


def malloc_tuning_asked():
    """Whether ``KZOO_MALLOC_TUNING=1`` asks for the allocator setting."""
    return os.environ.get(MALLOC_ENV, "0") == "1"


def malloc_tuned():
    """Whether this process's malloc has been given the setting."""
    return _malloc_tuned


def reuse_freed_memory():
    """Lets glibc's malloc reuse freed blocks, such as PyTorch's CPU
    tensors' (process-wide; once per process; see the module's notes).

    From the call on, every block comes from the heap (no ``mmap``), and the
    heap keeps up to 256 MiB of freed memory at its top. Returns whether the
    setting is in effect (False where the C library is not glibc).
    """
    global _malloc_tuned
    if _malloc_tuned:
        return True
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mallopt(_M_MMAP_THRESHOLD, 32 * 2**20)  # the largest it takes
    mallopt(_M_MMAP_MAX, 0)  # and none larger either
    mallopt(_M_TRIM_THRESHOLD, 256 * 2**20)
    _malloc_tuned = True
    return True


def tune_malloc_if_asked():
    """Makes the setting where PyTorch trains, if ``KZOO_MALLOC_TUNING=1``
    asks for it; otherwise (the default, and on other backends, whose
    allocators keep freed memory themselves) changes nothing."""
    if malloc_tuning_asked() and keras.backend.backend() == "torch":
        reuse_freed_memory()
