"""`kzoo.ops.dropout` and its `keras.ops` reference, checked by formula: the
realized drop probability, independent elements (also those read from one
random draw), the kept elements' scale, seeds, dtypes and the gradient.
Random masks differ between the kernel and the reference, so each is held
to the same binomial bounds rather than to the other's values."""

from unittest import mock

import keras
import numpy as np
import pytest
from keras import ops

from kzoo.ops import dropout, dropout_reference
from kzoo.testing import gradient, to_numpy

pytestmark = pytest.mark.without_tensorflow

BOTH = pytest.mark.parametrize("fn", (dropout, dropout_reference),
                               ids=("kernel", "reference"))


def _drop_probability(rate):
    return round(rate * 65536) / 65536


def _within_binomial(count, n, p, sigmas=6.0):
    return abs(count - n * p) <= sigmas * (n * p * (1 - p)) ** 0.5


@BOTH
@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_rate_scale_and_independent_neighbours(fn, rate):
    n = 200_003  # not a multiple of 4: the last draw is partly used
    y = to_numpy(fn(np.ones((n,), "float32"), rate, seed=7))
    p = _drop_probability(rate)
    np.testing.assert_allclose(np.unique(y), [0.0, 1.0 / (1.0 - p)], rtol=1e-6)
    dropped = y == 0
    assert _within_binomial(dropped.sum(), n, p)
    # Up to four neighbouring elements read one random draw (its 16-bit
    # fields): each pair must still be dropped independently, as must
    # elements of neighbouring draws and far-apart ones.
    for lag in (1, 2, 3, 4, 5, n // 2):
        pairs = (dropped[:-lag] & dropped[lag:]).sum()
        assert _within_binomial(pairs, n - lag, p * p), lag


@BOTH
def test_expected_value_is_kept(fn):
    x = np.random.default_rng(1).uniform(1, 2, size=(400, 500)).astype("float32")
    y = to_numpy(fn(x, 0.25, seed=3))
    p = _drop_probability(0.25)
    kept = y != 0
    np.testing.assert_allclose(y[kept], x[kept] / (1 - p), rtol=1e-6)
    # E[y] = x exactly; the sample mean within a few standard errors.
    std_error = (x ** 2 * p / (1 - p)).mean() ** 0.5 / x.size ** 0.5
    assert abs(y.mean() - x.mean()) < 6 * std_error


@BOTH
def test_seeds_repeat_and_generators_advance(fn):
    x = np.ones((4, 64), "float32")
    np.testing.assert_array_equal(to_numpy(fn(x, 0.5, seed=11)),
                                  to_numpy(fn(x, 0.5, seed=11)))
    assert not np.array_equal(to_numpy(fn(x, 0.5, seed=11)),
                              to_numpy(fn(x, 0.5, seed=12)))
    a, b = keras.random.SeedGenerator(5), keras.random.SeedGenerator(5)
    first = to_numpy(fn(x, 0.5, seed=a))
    np.testing.assert_array_equal(first, to_numpy(fn(x, 0.5, seed=b)))
    assert not np.array_equal(first, to_numpy(fn(x, 0.5, seed=a)))
    keras.utils.set_random_seed(3)
    unseeded = to_numpy(fn(x, 0.5))
    keras.utils.set_random_seed(3)
    np.testing.assert_array_equal(unseeded, to_numpy(fn(x, 0.5)))


@BOTH
@pytest.mark.parametrize("dtype", ("float32", "bfloat16", "float16"))
def test_keeps_dtype_and_shape(fn, dtype):
    x = ops.ones((2, 3, 5), dtype=dtype)
    y = fn(x, 0.5, seed=1)
    assert keras.backend.standardize_dtype(y.dtype) == dtype
    assert tuple(y.shape) == (2, 3, 5)
    values = np.unique(to_numpy(ops.cast(y, "float32")))
    assert set(values.tolist()) <= {0.0, 2.0}


@BOTH
def test_gradient_is_the_scale_mask(fn):
    x = np.random.default_rng(2).uniform(1, 2, size=(6, 40)).astype("float32")
    w = np.random.default_rng(3).normal(size=(6, 40)).astype("float32")
    y = to_numpy(fn(x, 0.3, seed=9))  # an int seed: the same mask each call
    got = gradient(lambda z: ops.multiply(fn(z, 0.3, seed=9), w), x)
    np.testing.assert_allclose(got, w * (y / x), rtol=1e-6, atol=1e-7)


@BOTH
def test_rates_at_the_ends_and_bad_rates(fn):
    x = np.random.default_rng(4).normal(size=(3, 7)).astype("float32")
    np.testing.assert_array_equal(to_numpy(fn(x, 0.0, seed=1)), x)
    np.testing.assert_array_equal(to_numpy(fn(x, 1.0, seed=1)), np.zeros_like(x))
    for rate in (-0.1, 1.5):
        with pytest.raises(ValueError, match="`rate` must be in"):
            fn(x, rate, seed=1)
    with pytest.raises(ValueError, match="seed"):
        fn(x, 0.5, seed="seven")


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="PyTorch's kernel")
def test_torch_draws_without_keras_generator():
    """On PyTorch the fields come from the kernel's own generator, not from
    Keras' per-element `randint` (the slow draw it replaces)."""
    x = np.ones((1000,), "float32")
    with mock.patch.object(keras.random, "randint",
                           side_effect=AssertionError("Keras' generator")):
        y = to_numpy(dropout(x, 0.5, seed=keras.random.SeedGenerator(1)))
    assert 400 < (y == 0).sum() < 600
