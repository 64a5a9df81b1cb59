"""Weights kept in a CPU kernel's own layout for a loop that reads them at
every step (a generation loop).

A generation step multiplies one row per sequence by every weight matrix
of the model. On PyTorch on a CPU, oneDNN's product reads a matrix it has
reordered into its blocked layout ("packed") about twice as fast at such a
step's few rows as the same product from the matrix as it lies (GPT-2's
shape in bfloat16 and float32, 1 and 8 rows: `bench/gpt.py`); the result
is the same product (in bfloat16 the same bits). Packing a matrix costs
about as much as a few steps, so the packed copy is made once and kept.

``packed_weights()`` is the scope in which the backend's step kernels
(``kzoo.ops.cached_decoder_block``'s one-token step, ``embedding_logits``
on a few rows) read the packed copies; outside it nothing is packed. The
copies are kept for the next generation, one per weight, for as long as
the weight lives; a weight written since (``assign``, a training step,
``load_weights``) is packed again when next read. They hold as many bytes
as the weights they copy: ``release_packed_weights()`` frees them all.
Other backends, other devices and a PyTorch without oneDNN pack nothing.
"""

import contextlib
import contextvars
import importlib

import keras

_PACKING = contextvars.ContextVar("kzoo_packed_weights", default=False)


@contextlib.contextmanager
def packed_weights():
    """A scope in which the step kernels read packed weights (see the
    module docstring). Nested scopes are one scope."""
    token = _PACKING.set(True)
    try:
        yield
    finally:
        _PACKING.reset(token)


def packing():
    """Whether the caller is inside ``packed_weights()``."""
    return _PACKING.get()


def release_packed_weights():
    """Frees every packed copy; returns how many there were. The next
    generation packs what it reads again."""
    if keras.backend.backend() != "torch":
        return 0
    return importlib.import_module("kzoo.ops.packed_torch").release()
