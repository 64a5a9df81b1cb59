"""kzoo.layers.Dropout: a Bernoulli mask from 16-bit fields, checked by formula."""

import keras
import numpy as np
import pytest

from kzoo.layers import Dropout
from kzoo.testing import to_numpy


def _drop_probability(rate):
    return round(rate * 65536) / 65536


def _within_binomial(count, n, p, sigmas=6.0):
    return abs(count - n * p) <= sigmas * (n * p * (1 - p)) ** 0.5


def test_inference_and_zero_rate_are_identity():
    x = np.random.default_rng(0).normal(size=(3, 5)).astype("float32")
    np.testing.assert_array_equal(to_numpy(Dropout(0.3)(x)), x)
    np.testing.assert_array_equal(to_numpy(Dropout(0.0)(x, training=True)), x)


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_mask_rate_scale_and_independent_halves(rate):
    n = 200_001  # odd: the last draw is partly used
    y = to_numpy(Dropout(rate, seed=7)(np.ones((n,), "float32"), training=True))
    p = _drop_probability(rate)
    np.testing.assert_allclose(np.unique(y), [0.0, 1.0 / (1.0 - p)], rtol=1e-6)
    dropped = y == 0
    assert _within_binomial(dropped.sum(), n, p)
    # Neighbouring elements share one random draw (its 16-bit fields,
    # tests/ops/dropout_test.py): they must still be dropped independently.
    pairs = (dropped[0:n - 1:2] & dropped[1::2]).sum()
    assert _within_binomial(pairs, (n - 1) // 2, p * p)
    # Elements of neighbouring draws (2i + 1 and 2i + 2), and far apart.
    assert _within_binomial((dropped[1:-1:2] & dropped[2::2]).sum(), (n - 1) // 2, p * p)
    half = (n + 1) // 2
    assert _within_binomial((dropped[:n - half] & dropped[half:]).sum(), n - half, p * p)


def test_expected_value_is_kept():
    x = np.random.default_rng(1).uniform(1, 2, size=(400, 500)).astype("float32")
    y = to_numpy(Dropout(0.25, seed=3)(x, training=True))
    # E[y] = x exactly; the sample mean within a few standard errors.
    p = _drop_probability(0.25)
    std_error = (x ** 2 * p / (1 - p)).mean() ** 0.5 / x.size ** 0.5
    assert abs(y.mean() - x.mean()) < 6 * std_error


def test_seeded_repeatable_and_fresh_per_call():
    x = np.ones((4, 64), "float32")
    a, b = Dropout(0.5, seed=11), Dropout(0.5, seed=11)
    first, again = to_numpy(a(x, training=True)), to_numpy(b(x, training=True))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, to_numpy(a(x, training=True)))
    keras.utils.set_random_seed(5)
    c = to_numpy(Dropout(0.5)(x, training=True))
    keras.utils.set_random_seed(5)
    np.testing.assert_array_equal(c, to_numpy(Dropout(0.5)(x, training=True)))


def test_dtype_shape_and_noise_shape():
    x = keras.ops.ones((2, 3, 4), dtype="bfloat16")
    y = Dropout(0.5, seed=1, dtype="bfloat16")(x, training=True)
    assert keras.backend.standardize_dtype(y.dtype) == "bfloat16"
    assert tuple(y.shape) == (2, 3, 4)
    # noise_shape: Keras' own path, one mask shared along axis 1.
    z = to_numpy(Dropout(0.5, noise_shape=(2, 1, 4), seed=2)(
        np.ones((2, 3, 4), "float32"), training=True))
    assert (z == z[:, :1]).all()


def test_kept_elements_are_the_scaled_input():
    layer = Dropout(0.5, seed=4)
    x = np.arange(1, 101, dtype="float32")
    y = to_numpy(layer(x, training=True))
    kept = y != 0
    np.testing.assert_allclose(y[kept], 2.0 * x[kept], rtol=1e-6)


def test_batch_of_unknown_size_in_fit():
    # The mask must be built from dynamic shapes too (odd element counts).
    model = keras.Sequential([keras.Input((3,)), Dropout(0.5, seed=1),
                              keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    # 7 rows in batches of 4: the second batch's other size makes
    # TensorFlow retrace with the batch dimension unknown.
    x = np.ones((7, 3), "float32")
    history = model.fit(x, np.zeros((7, 1), "float32"), batch_size=4, epochs=2,
                        verbose=0)
    assert np.isfinite(history.history["loss"]).all()
