"""Pearson's correlation of predictions with targets, over all the batches seen."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export

_SUMS = ("weight", "true", "pred", "true_squared", "pred_squared", "product")
# Machine epsilon of each float dtype: a variance below 128 epsilons of the
# mean square is rounding noise of the sums, so the input counts as constant.
_EPSILON = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23,
            "float64": 2.0**-52}


def correlation(sxx, syy, sxy, defined):
    """``sxy / sqrt(sxx * syy)`` (centred sums of squares and products),
    clipped to [-1, 1], where ``defined``; NaN elsewhere."""
    safe_sxx = ops.where(defined, sxx, ops.ones_like(sxx))
    safe_syy = ops.where(defined, syy, ops.ones_like(syy))
    value = ops.clip(sxy / (ops.sqrt(safe_sxx) * ops.sqrt(safe_syy)), -1.0, 1.0)
    return ops.where(defined, value, ops.full_like(value, float("nan")))


def _check_sizes(y_true, y_pred, name):
    """Equal numbers of values, where the shapes say so before running."""
    true_size, pred_size = y_true.shape[0], y_pred.shape[0]
    if None not in (true_size, pred_size) and true_size != pred_size:
        raise ValueError(
            f"{name}: `y_true` has {true_size} values but `y_pred` has "
            f"{pred_size}; pass one prediction per target.")


@kzoo_export("kzoo.metrics.PearsonCorrelation")
class PearsonCorrelation(keras.metrics.Metric):
    """Pearson's correlation coefficient of `y_pred` with `y_true`, over
    every value of every update since the last reset.

    The metric of regression benchmarks such as STS-B: the result equals
    `scipy.stats.pearsonr(all_y_true, all_y_pred)` on the concatenation of
    every batch, unlike `keras.metrics.PearsonCorrelation`, which averages
    one correlation per batch row. Both tensors are flattened, so `[batch]`
    targets go with `[batch, 1]` predictions.

    The state is six running sums (of the weights, the values, their
    squares and their products), so batches can come in any order and
    size, the metric runs inside `model.fit` and `model.evaluate` on every
    backend (JAX's stateless metrics included), and the replicas of a
    `tf.distribute` strategy add up.

    `sample_weight` (non-negative, one per value or one per row) weighs
    each pair: an integer weight counts as that many copies of the pair,
    and weight 0 leaves it out. The result is NaN while the correlation is
    undefined: fewer than two distinct pairs, or a constant `y_true` or
    `y_pred` (as scipy returns NaN for constant input). It is clipped to
    [-1, 1] like scipy's.

    Precision: the sums are kept in `dtype`, and a variance is a
    difference of two of them, so values whose spread is small next to
    their mean lose digits. A variance below 128 machine epsilons of the
    mean square is rounding noise and counts as constant (NaN): in
    float32, a standard deviation below about 0.4% of the mean (say, a
    mean of 1000 and a standard deviation of 1). Center such values first,
    or pass `dtype="float64"` on TensorFlow or PyTorch (JAX computes in
    float32 unless `jax_enable_x64` is set).

    Args:
        dtype: a float dtype for the sums and the result. Defaults to
            float32.
        name: str. Defaults to "pearson_correlation".

    Example:
    >>> metric = kzoo.metrics.PearsonCorrelation()
    >>> metric.update_state([1.0, 2.0], [1.0, 3.0])
    >>> metric.update_state([3.0, 4.0], [2.0, 5.0])
    >>> round(float(metric.result()), 4)  # scipy.stats.pearsonr: 0.8315
    0.8315
    """

    def __init__(self, dtype="float32", name="pearson_correlation", **kwargs):
        if "float" not in str(keras.backend.standardize_dtype(dtype)):
            raise ValueError(
                f"`dtype` must be a floating point type, got dtype={dtype}.")
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.sums = [
            self.add_variable(shape=(), initializer="zeros", dtype=self.dtype,
                              name=f"sum_{name}")
            for name in _SUMS
        ]

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.cast(y_pred, self.dtype)
        y_true = ops.reshape(ops.cast(y_true, self.dtype), (-1,))
        _check_sizes(y_true, ops.reshape(y_pred, (-1,)), self.name)
        weight = ops.ones_like(y_pred)
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, self.dtype)
            rank = len(y_pred.shape)
            while len(sample_weight.shape) > rank and sample_weight.shape[-1] == 1:
                sample_weight = ops.squeeze(sample_weight, -1)
            while len(sample_weight.shape) < rank:
                sample_weight = ops.expand_dims(sample_weight, -1)
            weight = weight * sample_weight
        y_pred, weight = ops.reshape(y_pred, (-1,)), ops.reshape(weight, (-1,))
        terms = (weight, weight * y_true, weight * y_pred,
                 weight * y_true * y_true, weight * y_pred * y_pred,
                 weight * y_true * y_pred)
        for total, term in zip(self.sums, terms):
            total.assign_add(ops.sum(term))

    def result(self):
        n, x, y, xx, yy, xy = (ops.convert_to_tensor(total) for total in self.sums)
        safe_n = ops.where(ops.greater(n, 0), n, ops.ones_like(n))
        sxx = xx - x * x / safe_n
        syy = yy - y * y / safe_n
        sxy = xy - x * y / safe_n
        # The dtype the backend computes in (JAX may hold float64 as float32).
        tolerance = 128 * _EPSILON[keras.backend.standardize_dtype(n.dtype)]
        defined = ops.logical_and(ops.greater(sxx, tolerance * xx),
                                  ops.greater(syy, tolerance * yy))
        return correlation(sxx, syy, sxy, defined)

    def reset_state(self):
        for total in self.sums:
            total.assign(0.0)
