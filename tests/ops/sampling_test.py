"""`kzoo.ops.argmax` equals `keras.ops.argmax` over the last axis and numpy's
argmax: float32 and bfloat16, ties, NaN and infinite rows. (An integer
index has no gradient to compare.)"""

import keras
import numpy as np
import pytest
from keras import ops

from kzoo.ops import argmax, argmax_reference
from kzoo.testing import to_numpy

pytestmark = pytest.mark.without_tensorflow


def _numpy_argmax(x):
    """numpy's argmax over the last axis, which takes the first NaN of a
    row as its largest value, as JAX and PyTorch do."""
    return np.argmax(x, axis=-1)


def _rows():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 3, 700)).astype("float32")
    x[0, 0, [17, 300, 650]] = 9.0  # a tie: the first wins
    x[0, 1, :] = -np.inf  # every value the smallest
    x[0, 2, 5] = np.inf
    x[1, 0, :] = 0.0
    x[1, 1, -1] = 50.0  # the last position
    return x


@pytest.mark.parametrize("dtype", ("float32", "bfloat16"))
@pytest.mark.parametrize("fn", (argmax, argmax_reference))
def test_argmax_matches_numpy(fn, dtype):
    x = ops.cast(ops.convert_to_tensor(_rows()), dtype)
    # numpy sees the rounded values (ties made by bfloat16 rounding too)
    want = _numpy_argmax(to_numpy(ops.cast(x, "float32")))
    got = fn(x)
    assert keras.backend.standardize_dtype(got.dtype) == "int32"
    np.testing.assert_array_equal(to_numpy(got), want)


def test_argmax_equals_reference_on_nan_rows():
    x = np.random.default_rng(1).normal(size=(4, 50)).astype("float32")
    x[0, [7, 20]] = np.nan  # the first NaN, after larger values
    x[1, 0] = np.nan
    x[2, :] = np.nan
    x[3, 49] = np.nan
    np.testing.assert_array_equal(to_numpy(argmax(x)),
                                  to_numpy(argmax_reference(x)))


def test_argmax_takes_any_leading_shape():
    x = np.random.default_rng(2).normal(size=(2, 3, 4, 9)).astype("float32")
    np.testing.assert_array_equal(to_numpy(argmax(x)), _numpy_argmax(x))
    np.testing.assert_array_equal(to_numpy(argmax(x[0, 0, 0])), np.argmax(x[0, 0, 0]))
