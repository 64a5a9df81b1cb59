"""The choice of a generation step: the index of each row's largest logit.

``argmax_reference`` is ``keras.ops.argmax`` over the last axis. ``argmax``
runs it where it is one fast kernel (PyTorch, TensorFlow) and, on JAX, the
same index found by two plain reductions: the row's maximum, then the
lowest position holding it. XLA:CPU compiles ``argmax`` to one reduction of
(value, index) pairs that it does not vectorize, several times slower than
the two (a greedy step's ``[batch, vocabulary]`` logits, ``bench/gpt.py``).
Both give the same index: the first of tied maxima, the first NaN in a row
that has one (tested).
"""

import keras
from keras import ops


def argmax(x):
    """The index of the largest value along the last axis (the first of
    equal ones; the first NaN where a row has NaN).

    Args:
        x: float tensor ``[..., n]``.

    Returns:
        int32 tensor ``[...]``.

    Example:
    >>> logits = np.array([[0.5, 2.0, 2.0], [3.0, -1.0, 0.0]], "float32")
    >>> ops.convert_to_numpy(kzoo.ops.argmax(logits)).tolist()
    [1, 0]
    """
    if keras.backend.backend() != "jax":
        return argmax_reference(x)
    x = ops.convert_to_tensor(x)
    largest = ops.max(x, axis=-1, keepdims=True)  # NaN where a row has NaN
    hits = ops.logical_or(ops.equal(x, largest), ops.isnan(x))
    n = x.shape[-1]
    positions = ops.where(hits, ops.arange(n, dtype="int32"),
                          ops.convert_to_tensor(n, "int32"))
    return ops.min(positions, axis=-1)


def argmax_reference(x):
    """``argmax`` as ``keras.ops.argmax(x, axis=-1)``, in int32."""
    return ops.cast(ops.argmax(x, axis=-1), "int32")
