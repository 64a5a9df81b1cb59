"""Reading a sequence at positions: numpy's indexing is the reference."""

import keras
import numpy as np

from kzoo.ops.positions import gather_positions, last_real_position, token_positions
from kzoo.testing import to_numpy

RNG = np.random.default_rng(0)
SEQUENCE = RNG.normal(size=(3, 5, 4)).astype("float32")


def test_gather_positions_is_take_along_axis():
    positions = np.array([[0, 4], [2, 2], [1, 3]])
    np.testing.assert_array_equal(
        to_numpy(gather_positions(SEQUENCE, positions)),
        np.take_along_axis(SEQUENCE, positions[:, :, None], axis=1))


def test_last_real_position_of_right_padded_rows():
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]])
    expected = SEQUENCE[np.arange(3), np.maximum(mask.sum(axis=1) - 1, 0)]
    np.testing.assert_array_equal(to_numpy(last_real_position(SEQUENCE, mask)),
                                  expected)
    # It also builds on a functional model's symbolic tensors.
    x = keras.Input((None, 4))
    padding_mask = keras.Input((None,), dtype="int32")
    assert tuple(last_real_position(x, padding_mask).shape) == (None, 4)


def test_token_positions_in_order_and_cut_at_the_width():
    token_ids = np.array([[2, 4, 5, 4, 4, 3], [2, 5, 5, 3, 0, 0], [4, 4, 4, 4, 4, 4]])
    positions, weights = token_positions(token_ids, 4, 3)
    expected = np.zeros((3, 3), "int64")
    for row, ids in enumerate(token_ids):
        found = np.flatnonzero(ids == 4)[:3]
        expected[row, :len(found)] = found
    np.testing.assert_array_equal(to_numpy(positions), expected)
    np.testing.assert_array_equal(
        to_numpy(weights),
        np.arange(3)[None, :] < np.minimum((token_ids == 4).sum(axis=1), 3)[:, None])
