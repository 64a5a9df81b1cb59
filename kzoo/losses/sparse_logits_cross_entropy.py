"""Cross-entropy on logits over a large vocabulary, without one-hot targets."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.ops import sparse_logits_cross_entropy


@kzoo_export("kzoo.losses.SparseLogitsCrossEntropy")
class SparseLogitsCrossEntropy(keras.losses.SparseCategoricalCrossentropy):
    """`SparseCategoricalCrossentropy(from_logits=True)`, computed as
    `logsumexp(logits) - logits[label]`.

    Keras' JAX backend builds a one-hot `[..., vocabulary]` target and
    multiplies it with the log-softmax; a language model's vocabulary makes
    that the biggest tensor of the loss. Here the true class's logit is
    gathered instead, which is faster on JAX and TensorFlow; on PyTorch
    Keras' own computation is the faster one and is the one used
    (`kzoo.ops.sparse_logits_cross_entropy`; bench/lm_loss.py,
    docs/benchmarks.md). The value and its
    gradient are Keras' (tested on every backend); reduction, sample weights
    and the config are `SparseCategoricalCrossentropy`'s. Labels outside
    `[0, vocabulary)` are clipped into it: they are padding, whose weight is
    0 (Keras' one-hot gives them a loss of `logsumexp`, as here for 0).

    Args:
        reduction, name, dtype: as `SparseCategoricalCrossentropy`'s.

    Example:
    >>> loss = kzoo.losses.SparseLogitsCrossEntropy()
    >>> logits = np.array([[2.0, 0.5, -1.0]])
    >>> reference = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    >>> labels = np.array([0])
    >>> bool(abs(float(loss(labels, logits)) - float(reference(labels, logits))) < 1e-6)
    True
    """

    def __init__(self, reduction="sum_over_batch_size",
                 name="sparse_logits_cross_entropy", dtype=None, **kwargs):
        kwargs.pop("from_logits", None)
        super().__init__(from_logits=True, reduction=reduction, name=name,
                         dtype=dtype, **kwargs)

    def call(self, y_true, y_pred):
        if (self._fn_kwargs.get("ignore_class") is not None
                or self._fn_kwargs.get("axis", -1) != -1):
            return super().call(y_true, y_pred)
        logits = ops.convert_to_tensor(y_pred)
        labels = ops.convert_to_tensor(y_true)
        if len(labels.shape) == len(logits.shape) and labels.shape[-1] == 1:
            labels = ops.squeeze(labels, axis=-1)
        labels = ops.clip(ops.cast(labels, "int32"), 0, logits.shape[-1] - 1)
        return sparse_logits_cross_entropy(labels, logits)

    def get_config(self):
        config = super().get_config()
        config.pop("from_logits", None)
        return config
