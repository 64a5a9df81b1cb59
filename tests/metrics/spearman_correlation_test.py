"""`kzoo.metrics.SpearmanCorrelation` against `scipy.stats.spearmanr` (ties
averaged) on the concatenated batches: standalone, at its capacity, and
inside `model.fit` / `model.evaluate` on the current backend; refused by the
replicas of a `tf.distribute` strategy."""

import subprocess
import sys

import keras
import numpy as np
import pytest

from kzoo.metrics import SpearmanCorrelation

pytestmark = pytest.mark.without_tensorflow

stats = pytest.importorskip("scipy.stats")


def _batches(rng, sizes, levels=None, column=False):
    """Correlated pairs; with `levels`, rounded to that many values (ties)."""
    batches = []
    for size in sizes:
        y_true = rng.normal(size=size)
        y_pred = 0.6 * y_true + rng.normal(size=size)
        if levels:
            y_true, y_pred = np.round(y_true * levels / 4), np.round(y_pred * levels / 4)
        y_pred = y_pred.astype("float32")
        batches.append((y_true.astype("float32"), y_pred[:, None] if column else y_pred))
    return batches


def _expected(batches):
    y_true = np.concatenate([t.reshape(-1) for t, _ in batches])
    y_pred = np.concatenate([p.reshape(-1) for _, p in batches])
    return stats.spearmanr(y_true, y_pred).statistic


def _result(metric, batches):
    for y_true, y_pred in batches:
        metric.update_state(y_true, y_pred)
    return float(metric.result())


@pytest.mark.parametrize("seed", range(8))
def test_batches_match_scipy(seed):
    # Even seeds: continuous values; odd seeds: a few levels, so many ties.
    # A few batch sizes and one capacity: JAX compiles each shape once.
    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 5, 16, 33], size=rng.integers(1, 8))
    sizes[0] = 5
    batches = _batches(rng, sizes, levels=[None, 3][seed % 2], column=seed % 4 > 1)
    metric = SpearmanCorrelation(capacity=256)
    np.testing.assert_allclose(_result(metric, batches), _expected(batches),
                               rtol=1e-5, atol=1e-6)


def test_infinite_values_rank_as_scipy_ranks_them():
    y_true = np.array([1.0, np.inf, 3.0, np.inf, -np.inf, 2.0], "float32")
    y_pred = np.array([0.5, 2.0, np.inf, 1.0, -1.0, 0.0], "float32")
    metric = SpearmanCorrelation(capacity=10)
    np.testing.assert_allclose(_result(metric, [(y_true, y_pred)]),
                               stats.spearmanr(y_true, y_pred).statistic, rtol=1e-6)


def test_capacity_exactly_filled_then_exceeded_is_nan():
    rng = np.random.default_rng(1)
    batches = _batches(rng, [6, 4])
    metric = SpearmanCorrelation(capacity=10)
    np.testing.assert_allclose(_result(metric, batches), _expected(batches), rtol=1e-6)
    metric.update_state([1.0], [2.0])  # the 11th value
    assert np.isnan(float(metric.result()))
    metric.reset_state()
    np.testing.assert_allclose(_result(metric, batches), _expected(batches), rtol=1e-6)


def test_undefined_is_nan():
    metric = SpearmanCorrelation(capacity=8)
    assert np.isnan(float(metric.result()))  # nothing seen
    metric.update_state([1.0], [1.0])
    assert np.isnan(float(metric.result()))  # one value
    metric.update_state([2.0, 3.0], [1.0, 1.0])
    assert np.isnan(float(metric.result()))  # predictions all tied
    metric.reset_state()
    metric.update_state([1.0, 2.0, 3.0], [1.0, float("nan"), 2.0])
    assert np.isnan(float(metric.result()))  # a NaN value


def test_errors_name_the_problem():
    metric = SpearmanCorrelation(capacity=4)
    with pytest.raises(ValueError, match="takes no `sample_weight`"):
        metric.update_state([1.0, 2.0], [1.0, 2.0], sample_weight=[1.0, 1.0])
    with pytest.raises(ValueError, match=r"5 values does not fit .*capacity=\.\.\."):
        metric.update_state(np.zeros(5), np.zeros(5))
    with pytest.raises(ValueError, match="`y_true` has 2 values but `y_pred` has 3"):
        metric.update_state([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="`capacity` must be an int of at least 2"):
        SpearmanCorrelation(capacity=1)


def test_serialization():
    metric = SpearmanCorrelation(capacity=32, name="src")
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(metric))
    assert type(restored) is SpearmanCorrelation
    assert (restored.capacity, restored.name) == (32, "src")


def test_inside_fit_and_evaluate():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(53, 3)).astype("float32")
    # Targets on a 0-5 scale in steps of 0.2, as STS-B's: ties.
    y = np.clip(np.round((x @ np.array([1.0, -2.0, 0.5]) + 2.5) * 5) / 5, 0, 5)
    y = y.astype("float32")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse",
                  metrics=[SpearmanCorrelation(capacity=64)])
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert all(np.isfinite(history.history["spearman_correlation"]))
    logs = model.evaluate(x, y, batch_size=7, verbose=0, return_dict=True)
    prediction = model.predict(x, batch_size=7, verbose=0)[:, 0]
    np.testing.assert_allclose(logs["spearman_correlation"],
                               stats.spearmanr(y, prediction).statistic,
                               rtol=1e-5, atol=1e-6)
    # A second evaluate starts from a reset metric, and past the capacity
    # (two evaluations would be 106 > 64 values) nothing leaks.
    again = model.evaluate(x, y, batch_size=11, verbose=0, return_dict=True)
    np.testing.assert_allclose(again["spearman_correlation"],
                               logs["spearman_correlation"], rtol=1e-6)


# Under a tf.distribute strategy, in a fresh process (TensorFlow's devices are
# split into logical CPUs before it initializes them).
_MIRRORED = """
import numpy as np, keras
import kzoo
strategy = kzoo.distribution.mirrored_strategy(logical_cpus=2)
with strategy.scope():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(loss="mse", metrics=[kzoo.metrics.SpearmanCorrelation(capacity=64)])
try:
    model.evaluate(np.zeros((8, 3)), np.zeros(8), batch_size=4, verbose=0)
except ValueError as error:
    assert "VariableAggregation" in str(error), error
    print("refused")
"""


@pytest.mark.backends("tensorflow")
def test_replicas_of_a_mirrored_strategy_fail_loudly():
    # Two replicas' buffers cannot be joined: an error, not a wrong number.
    result = subprocess.run([sys.executable, "-c", _MIRRORED], capture_output=True,
                            text=True, timeout=1800)
    assert "refused" in result.stdout, result.stderr[-3000:]
