"""Perplexity: the exponential of the mean token cross-entropy."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.losses.sparse_logits_cross_entropy import SparseLogitsCrossEntropy


@kzoo_export("kzoo.metrics.Perplexity")
class Perplexity(keras.metrics.Metric):
    """The exponential of the mean cross-entropy of the true tokens.

    Over every update since the last reset: `exp(sum(w * ce) / sum(w))`,
    where `ce` is each position's sparse categorical cross-entropy and `w`
    its weight (`sample_weight`, times 0 where the target is
    `mask_token_id`; 1 when neither is given). With no weight at all the
    result is 0. The same arguments and values as keras-hub's
    `keras_hub.metrics.Perplexity`, in `keras.ops` only (no TensorFlow on
    JAX and PyTorch); weights of a lower rank than the targets (one per
    sequence) are broadcast over the positions, and count once per
    position.

    Args:
        from_logits: bool. `y_pred` holds logits (else probabilities).
        mask_token_id: int or None. Targets equal to it get weight 0.
        dtype: a float dtype for the computation. Defaults to float32.
        name: str. Defaults to "perplexity".

    Example:
    >>> metric = kzoo.metrics.Perplexity(from_logits=True)
    >>> logits = np.log([[[0.5, 0.25, 0.25], [0.25, 0.5, 0.25]]])
    >>> metric.update_state(np.array([[0, 2]]), logits,
    ...                     sample_weight=np.array([[1.0, 1.0]]))
    >>> round(float(metric.result()), 4)  # exp((log 2 + log 4) / 2)
    2.8284
    """

    def __init__(self, from_logits=False, mask_token_id=None, dtype="float32",
                 name="perplexity", **kwargs):
        if "float" not in str(keras.backend.standardize_dtype(dtype)):
            raise ValueError(
                f"`dtype` must be a floating point type, got dtype={dtype}.")
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.from_logits = from_logits
        self.mask_token_id = mask_token_id
        self._cross_entropy = (
            SparseLogitsCrossEntropy(reduction=None, dtype=self.dtype)
            if from_logits else None)
        self.aggregate_cross_entropy = self.add_variable(
            shape=(), initializer="zeros", dtype=self.dtype,
            name="aggregate_cross_entropy")
        self.number_of_samples = self.add_variable(
            shape=(), initializer="zeros", dtype=self.dtype,
            name="number_of_samples")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.cast(y_pred, self.dtype)
        if self.from_logits:
            cross_entropy = self._cross_entropy.call(y_true, y_pred)
        else:
            cross_entropy = keras.losses.sparse_categorical_crossentropy(
                ops.cast(y_true, self.dtype), y_pred, from_logits=False)
        cross_entropy = ops.cast(cross_entropy, self.dtype)
        weight = ops.ones_like(cross_entropy)
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, self.dtype)
            rank = len(cross_entropy.shape)
            while len(sample_weight.shape) > rank and sample_weight.shape[-1] == 1:
                sample_weight = ops.squeeze(sample_weight, -1)
            while len(sample_weight.shape) < rank:
                sample_weight = ops.expand_dims(sample_weight, -1)
            weight = weight * sample_weight
        if self.mask_token_id is not None:
            labels = ops.convert_to_tensor(y_true)
            if len(labels.shape) > len(cross_entropy.shape):
                labels = ops.squeeze(labels, -1)
            weight = weight * ops.cast(
                ops.not_equal(labels, self.mask_token_id), self.dtype)
        self.aggregate_cross_entropy.assign_add(ops.sum(cross_entropy * weight))
        self.number_of_samples.assign_add(ops.sum(weight))

    def result(self):
        count = ops.convert_to_tensor(self.number_of_samples)
        total = ops.convert_to_tensor(self.aggregate_cross_entropy)
        safe = ops.where(ops.equal(count, 0), ops.ones_like(count), count)
        return ops.where(ops.equal(count, 0), ops.zeros_like(count),
                         ops.exp(total / safe))

    def reset_state(self):
        self.aggregate_cross_entropy.assign(0.0)
        self.number_of_samples.assign(0.0)

    def get_config(self):
        config = super().get_config()
        config.update({"from_logits": self.from_logits,
                       "mask_token_id": self.mask_token_id})
        return config
