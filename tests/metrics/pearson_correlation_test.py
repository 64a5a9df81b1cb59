"""`kzoo.metrics.PearsonCorrelation` against `scipy.stats.pearsonr` on the
concatenated batches: standalone, with weights, inside `model.fit` /
`model.evaluate` on the current backend, and over the replicas of a
`tf.distribute` strategy."""

import subprocess
import sys

import keras
import numpy as np
import pytest

from kzoo.metrics import PearsonCorrelation

pytestmark = pytest.mark.without_tensorflow

stats = pytest.importorskip("scipy.stats")


def _batches(rng, sizes, column=False):
    batches = []
    for size in sizes:
        y_true = rng.normal(size=size).astype("float32")
        y_pred = (0.6 * y_true + rng.normal(size=size)).astype("float32")
        batches.append((y_true, y_pred[:, None] if column else y_pred))
    return batches


def _concatenated(batches):
    return (np.concatenate([t.reshape(-1) for t, _ in batches]),
            np.concatenate([p.reshape(-1) for _, p in batches]))


@pytest.mark.parametrize("seed", range(6))
def test_batches_match_scipy(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 5, 16, 33], size=rng.integers(1, 8))  # few shapes to compile
    sizes[0] = 5
    batches = _batches(rng, sizes, column=bool(seed % 2))
    metric = PearsonCorrelation()
    for y_true, y_pred in batches:
        metric.update_state(y_true, y_pred)
    expected = stats.pearsonr(*_concatenated(batches)).statistic
    np.testing.assert_allclose(float(metric.result()), expected, rtol=1e-5, atol=1e-6)


def test_integer_weights_count_as_copies():
    rng = np.random.default_rng(10)
    metric = PearsonCorrelation()
    true_parts, pred_parts = [], []
    for y_true, y_pred in _batches(rng, [12, 5, 20], column=True):
        weight = rng.integers(0, 4, size=len(y_true))  # one per row; 0 drops it
        metric.update_state(y_true, y_pred, sample_weight=weight)
        true_parts.append(np.repeat(y_true, weight))
        pred_parts.append(np.repeat(y_pred[:, 0], weight))
    expected = stats.pearsonr(np.concatenate(true_parts),
                              np.concatenate(pred_parts)).statistic
    np.testing.assert_allclose(float(metric.result()), expected, rtol=1e-5, atol=1e-6)


def test_undefined_is_nan_and_reset_starts_over():
    metric = PearsonCorrelation()
    assert np.isnan(float(metric.result()))  # nothing seen
    metric.update_state([1.0], [2.0])
    assert np.isnan(float(metric.result()))  # one pair
    metric.update_state([2.0, 3.0], [2.0, 2.0])
    assert np.isnan(float(metric.result()))  # constant predictions
    metric.reset_state()
    metric.update_state([0.1, 0.2, 0.3], [3.3, 3.3, 3.3])  # constant, not round
    assert np.isnan(float(metric.result()))
    metric.reset_state()
    metric.update_state([1.0, 2.0, 3.0], [3.0, 2.0, 1.0])
    np.testing.assert_allclose(float(metric.result()), -1.0, atol=1e-6)


def _far_from_zero():
    rng = np.random.default_rng(5)
    x = 1000 + rng.normal(size=2000)
    return x, x + rng.normal(size=2000)


def test_float32_spread_below_rounding_is_nan():
    # A standard deviation of 0.1% of the mean is below what float32 sums
    # resolve: NaN (counted as constant), not a noisy number.
    x, y = _far_from_zero()
    metric = PearsonCorrelation()
    for i in range(0, len(x), 100):
        metric.update_state(x[i:i + 100], y[i:i + 100])
    assert np.isnan(float(metric.result()))
    metric.reset_state()  # centered, the same data is fine
    for i in range(0, len(x), 100):
        metric.update_state(x[i:i + 100] - 1000, y[i:i + 100] - 1000)
    np.testing.assert_allclose(float(metric.result()),
                               stats.pearsonr(x, y).statistic, rtol=1e-5)


@pytest.mark.backends("tensorflow", "torch")  # JAX holds float64 as float32
def test_float64_sums():
    x, y = _far_from_zero()
    metric = PearsonCorrelation(dtype="float64")
    for i in range(0, len(x), 100):
        metric.update_state(x[i:i + 100], y[i:i + 100])
    np.testing.assert_allclose(float(metric.result()),
                               stats.pearsonr(x, y).statistic, rtol=1e-8)


def test_mismatched_sizes_and_column_weights():
    metric = PearsonCorrelation()
    with pytest.raises(ValueError, match="`y_true` has 1 values but `y_pred` has 3"):
        metric.update_state([1.0], [1.0, 2.0, 3.0])
    # Weights of shape [batch, 1] with [batch] values weigh the rows.
    metric.update_state([1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 9.0],
                        sample_weight=np.array([[1.0], [1.0], [1.0], [0.0]]))
    np.testing.assert_allclose(float(metric.result()),
                               stats.pearsonr([1, 2, 3], [1, 3, 2]).statistic, rtol=1e-6)


def test_serialization():
    metric = PearsonCorrelation(name="pcc")
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(metric))
    assert type(restored) is PearsonCorrelation and restored.name == "pcc"


def _model(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    return model


def test_inside_fit_and_evaluate():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(53, 3)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=53)).astype("float32")
    weight = rng.integers(0, 3, size=53).astype("float32")
    model = _model(0)
    model.compile(optimizer="sgd", loss="mse", metrics=[PearsonCorrelation()],
                  weighted_metrics=[PearsonCorrelation(name="weighted_pearson")])
    history = model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert np.isfinite(history.history["pearson_correlation"][0])
    logs = model.evaluate(x, y, sample_weight=weight, batch_size=7, verbose=0,
                          return_dict=True)  # 7 full batches and one of 4
    prediction = model.predict(x, batch_size=7, verbose=0)[:, 0]
    np.testing.assert_allclose(logs["pearson_correlation"],
                               stats.pearsonr(y, prediction).statistic,
                               rtol=1e-5, atol=1e-6)
    repeats = weight.astype(int)
    np.testing.assert_allclose(
        logs["weighted_pearson"],
        stats.pearsonr(np.repeat(y, repeats), np.repeat(prediction, repeats)).statistic,
        rtol=1e-5, atol=1e-6)


# Under a tf.distribute strategy, in a fresh process (TensorFlow's devices are
# split into logical CPUs before it initializes them).
_MIRRORED = """
import numpy as np, keras, scipy.stats
import kzoo
strategy = kzoo.distribution.mirrored_strategy(logical_cpus=2)
assert strategy.num_replicas_in_sync == 2
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 3)).astype("float32")
y = (x.sum(-1) + rng.normal(size=64)).astype("float32")
with strategy.scope():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(loss="mse", metrics=[kzoo.metrics.PearsonCorrelation()])
logs = model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
prediction = model.predict(x, verbose=0)[:, 0]
np.testing.assert_allclose(logs["pearson_correlation"],
                           scipy.stats.pearsonr(y, prediction).statistic, rtol=1e-5)
print("sums added over replicas")
"""


@pytest.mark.backends("tensorflow")
def test_replicas_of_a_mirrored_strategy_add_up():
    result = subprocess.run([sys.executable, "-c", _MIRRORED], capture_output=True,
                            text=True, timeout=1800)
    assert "sums added over replicas" in result.stdout, result.stderr[-3000:]
