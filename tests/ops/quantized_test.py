"""`kzoo.ops.int8_matmul` equals numpy's integer product and
`keras.ops.matmul`: any leading shape, the extremes of int8 (sums past
float32's exact range), a transposed right-hand side, and clear
errors for float inputs and mismatched shapes. (Integers have no gradient
to compare.)"""

import keras
import numpy as np
import pytest
from keras import ops

from kzoo.ops import int8_matmul, int8_matmul_reference
from kzoo.testing import to_numpy

pytestmark = pytest.mark.without_tensorflow


def _numpy(x, y):
    return x.astype(np.int64) @ y.astype(np.int64)


@pytest.mark.parametrize("fn", (int8_matmul, int8_matmul_reference))
@pytest.mark.parametrize("lead", ((), (1,), (5,), (2, 3), (2, 1, 4)))
def test_int8_matmul_matches_numpy(fn, lead):
    rng = np.random.default_rng(len(lead))
    x = rng.integers(-128, 128, lead + (300,)).astype("int8")
    y = rng.integers(-128, 128, (300, 7)).astype("int8")
    got = fn(x, y)
    assert keras.backend.standardize_dtype(got.dtype) == "int32"
    assert tuple(got.shape) == lead + (7,)
    np.testing.assert_array_equal(to_numpy(got), _numpy(x, y))


def test_largest_sums_are_exact():
    # every product at its largest, -128 * -128 = 2^14, over 4096 values:
    # sums of 2^26, past what float32 holds exactly
    depth = 4096
    x = np.full((2, depth), -128, "int8")
    y = np.full((depth, 3), -128, "int8")
    y[:, 1] = 127
    x[1, -1] = 1
    got = to_numpy(int8_matmul(x, y))
    np.testing.assert_array_equal(got, _numpy(x, y))
    assert got[0, 0] == depth * 2 ** 14


def test_transposed_right_hand_side():
    # an int8 table [vocabulary, dim] read as [dim, vocabulary] (the tied head)
    rng = np.random.default_rng(1)
    table = rng.integers(-127, 128, (50, 16)).astype("int8")
    rows = rng.integers(-127, 128, (3, 16)).astype("int8")
    got = int8_matmul(rows, ops.transpose(ops.convert_to_tensor(table)))
    np.testing.assert_array_equal(to_numpy(got), _numpy(rows, table.T))


def test_rejects_floats_and_mismatched_shapes():
    x = np.ones((2, 4), "int8")
    with pytest.raises(ValueError, match="int8 tensors, got float32"):
        int8_matmul(x.astype("float32"), np.ones((4, 3), "int8"))
    with pytest.raises(ValueError, match=r"\[depth, n\]"):
        int8_matmul(x, np.ones((5, 3), "int8"))
    with pytest.raises(ValueError, match=r"\[depth, n\]"):
        int8_matmul(x, np.ones((4,), "int8"))
