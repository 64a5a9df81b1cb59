"""Spearman's rank correlation of predictions with targets, over all the batches seen."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.metrics.pearson_correlation import correlation


def _average_ranks(values, count):
    """1-based ranks of `values` among the first `count` of them, ties given
    the mean of their ranks; the entries from `count` on must be +inf."""
    ordered = ops.sort(values)
    below = ops.searchsorted(ordered, values, side="left")
    # A real +inf ties with the padding: only the `count` real values count.
    up_to = ops.minimum(ops.searchsorted(ordered, values, side="right"),
                        ops.cast(count, "int32"))
    below, up_to = ops.cast(below, values.dtype), ops.cast(up_to, values.dtype)
    return (below + 1 + up_to) / 2  # the mean of ranks below + 1 .. up_to


@kzoo_export("kzoo.metrics.SpearmanCorrelation")
class SpearmanCorrelation(keras.metrics.Metric):
    """Spearman's rank correlation of `y_pred` with `y_true`, over every
    value of every update since the last reset.

    The metric of STS-B and the other semantic-similarity benchmarks: the
    result equals `scipy.stats.spearmanr(all_y_true, all_y_pred)` on the
    concatenation of every batch, that is Pearson's correlation of the
    ranks, tied values getting the mean of their ranks. Both tensors are
    flattened, so `[batch]` targets go with `[batch, 1]` predictions.

    Ranks need every value, so the metric keeps them: two buffers of
    `capacity` values each (`2 * capacity * 4` bytes in float32) that
    updates fill in order, and a count. Fixed-size state is what lets the
    metric run inside `model.fit` and `model.evaluate` on every backend,
    JAX's stateless (compiled) metrics included. Past `capacity` values
    since the last reset (an evaluation, or an epoch of `fit`) the result
    is NaN, never a number computed on part of the data: raise `capacity`
    to the number of values. Each `result()` sorts both whole buffers, and
    Keras asks for the result after every step, so a capacity far above
    that number costs time for nothing. The replicas of a `tf.distribute`
    strategy cannot join their buffers (Keras adds metric variables up):
    there the variables are made with `aggregation="none"`, so that
    `update_state` fails ("Could not convert from `tf.VariableAggregation`
    ... NONE") instead of giving a wrong number; compute this metric on
    one replica, or on `predict`'s output.

    `sample_weight` is refused: ranks of weighted values have no single
    definition. To leave values out, drop them from the batch. The result
    is NaN while the correlation is undefined (fewer than two values, or
    all of `y_true` or of `y_pred` tied, as scipy returns NaN for constant
    input) and when a value is NaN.

    Args:
        capacity: int. The most values kept between resets. Defaults to
            16384, enough for the STS benchmarks' splits.
        dtype: a float dtype for the values and the result. Defaults to
            float32.
        name: str. Defaults to "spearman_correlation".

    Example:
    >>> metric = kzoo.metrics.SpearmanCorrelation(capacity=16)
    >>> metric.update_state([1.0, 2.0, 3.0], [10.0, 30.0, 20.0])
    >>> metric.update_state([4.0, 5.0], [40.0, 40.0])
    >>> round(float(metric.result()), 4)  # scipy.stats.spearmanr: 0.8721
    0.8721
    """

    def __init__(self, capacity=16384, dtype="float32",
                 name="spearman_correlation", **kwargs):
        if "float" not in str(keras.backend.standardize_dtype(dtype)):
            raise ValueError(
                f"`dtype` must be a floating point type, got dtype={dtype}.")
        if not isinstance(capacity, int) or capacity < 2:
            raise ValueError(
                f"`capacity` must be an int of at least 2, got {capacity!r}.")
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.capacity = capacity
        self.true_values = self.add_variable(
            shape=(capacity,), initializer="zeros", dtype=self.dtype,
            name="true_values", aggregation="none")  # see the docstring
        self.pred_values = self.add_variable(
            shape=(capacity,), initializer="zeros", dtype=self.dtype,
            name="pred_values", aggregation="none")
        # Every value seen, also those past the capacity (the result is NaN then).
        self.count = self.add_variable(
            shape=(), initializer="zeros", dtype="int32", name="count",
            aggregation="none")

    def update_state(self, y_true, y_pred, sample_weight=None):
        if sample_weight is not None:
            raise ValueError(
                "SpearmanCorrelation takes no `sample_weight`: ranks of "
                "weighted values have no single definition. Drop the values "
                "to leave out from the batch, or use PearsonCorrelation, which "
                "weighs values (pass the metric in `metrics=`, not "
                "`weighted_metrics=`).")
        y_true = ops.reshape(ops.cast(y_true, self.dtype), (-1,))
        y_pred = ops.reshape(ops.cast(y_pred, self.dtype), (-1,))
        true_size, size = y_true.shape[0], y_pred.shape[0]
        if None not in (true_size, size) and true_size != size:
            raise ValueError(
                f"{self.name}: `y_true` has {true_size} values but `y_pred` "
                f"has {size}; pass one prediction per target.")
        size = ops.shape(y_pred)[0]
        if isinstance(size, int) and size > self.capacity:
            raise ValueError(
                f"A batch of {size} values does not fit in the capacity of "
                f"{self.name} ({self.capacity}): build it with "
                f"SpearmanCorrelation(capacity=...) of at least the number of "
                "values to rank.")
        count = ops.convert_to_tensor(self.count)
        size = ops.cast(size, "int32")
        # Past the capacity, the last slots are overwritten and `count` tells
        # result() to give NaN.
        start = ops.maximum(ops.minimum(count, self.capacity - size), 0)
        for buffer, values in ((self.true_values, y_true), (self.pred_values, y_pred)):
            buffer.assign(ops.slice_update(
                ops.convert_to_tensor(buffer), [start], values))
        self.count.assign(count + size)

    def result(self):
        count = ops.convert_to_tensor(self.count)
        kept = ops.minimum(count, self.capacity)
        valid = ops.less(ops.arange(self.capacity, dtype="int32"), kept)
        inf = ops.full((self.capacity,), float("inf"), dtype=self.dtype)
        true_values = ops.where(valid, ops.convert_to_tensor(self.true_values), inf)
        pred_values = ops.where(valid, ops.convert_to_tensor(self.pred_values), inf)
        mask = ops.cast(valid, self.dtype)
        n = ops.cast(kept, self.dtype)
        mean_rank = (n + 1) / 2  # ranks with ties averaged keep their sum
        true_ranks = (_average_ranks(true_values, kept) - mean_rank) * mask
        pred_ranks = (_average_ranks(pred_values, kept) - mean_rank) * mask
        sxx = ops.sum(true_ranks * true_ranks)
        syy = ops.sum(pred_ranks * pred_ranks)
        sxy = ops.sum(true_ranks * pred_ranks)
        has_nan = ops.any(ops.logical_and(
            valid, ops.logical_or(ops.isnan(true_values), ops.isnan(pred_values))))
        defined = ops.logical_and(
            ops.logical_and(ops.greater(sxx, 0), ops.greater(syy, 0)),
            ops.logical_and(ops.less_equal(count, self.capacity),
                            ops.logical_not(has_nan)))
        return correlation(sxx, syy, sxy, defined)

    def reset_state(self):
        self.true_values.assign(ops.zeros((self.capacity,), dtype=self.dtype))
        self.pred_values.assign(ops.zeros((self.capacity,), dtype=self.dtype))
        self.count.assign(0)

    def get_config(self):
        config = super().get_config()
        config.update({"capacity": self.capacity})
        return config
