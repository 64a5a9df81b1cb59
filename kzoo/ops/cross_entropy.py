"""Cross-entropy of integer labels against logits over a large vocabulary.

`sparse_logits_cross_entropy_reference` is the formula, in `keras.ops`:
`logsumexp(logits) - logits[label]`, which gathers the true class's logit
instead of building the one-hot `[..., vocabulary]` target that Keras' JAX
and TensorFlow backends build. `sparse_logits_cross_entropy` runs it where
it is the faster one (JAX, TensorFlow) and Keras' own
`ops.sparse_categorical_crossentropy` on PyTorch, whose native
`cross_entropy` kernel makes no one-hot target either and is faster there
(bench/lm_loss.py). Both give the same value and gradient (tested).
"""

import keras
from keras import ops


def sparse_logits_cross_entropy(labels, logits):
    """Per-example cross-entropy of `labels` against `logits`, unreduced.

    Args:
        labels: int tensor `[...]`, each in `[0, vocabulary)`.
        logits: float tensor `[..., vocabulary]`.

    Returns:
        Float tensor `[...]`: `logsumexp(logits) - logits[label]`.

    Example:
    >>> logits = np.array([[2.0, 0.5, -1.0]], "float32")
    >>> loss = kzoo.ops.sparse_logits_cross_entropy(np.array([0]), logits)
    >>> round(float(ops.convert_to_numpy(loss)[0]), 4)
    0.2413
    """
    if keras.backend.backend() == "torch":
        return ops.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    return sparse_logits_cross_entropy_reference(labels, logits)


def sparse_logits_cross_entropy_reference(labels, logits):
    """`sparse_logits_cross_entropy` in `keras.ops` on every backend: the
    true class's logit gathered and subtracted from the `logsumexp`."""
    labels = ops.cast(labels, "int32")
    picked = ops.take_along_axis(logits, ops.expand_dims(labels, -1), axis=-1)
    return ops.logsumexp(logits, axis=-1) - ops.squeeze(picked, axis=-1)
