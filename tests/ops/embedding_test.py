"""kzoo.ops.token_position_embedding equals numpy (and its keras.ops
reference) on the active backend."""

import keras
import numpy as np
import pytest
from keras import ops

import kzoo.ops
from kzoo.testing import assert_allclose, to_numpy

RNG = np.random.default_rng(0)
TOKENS = RNG.normal(size=(11, 4)).astype("float32")
POSITIONS = RNG.normal(size=(9, 4)).astype("float32")
IDS = np.array([[3, 0, 10], [7, 7, 1]])


@pytest.mark.parametrize("dtype", ("float32", "bfloat16"))
@pytest.mark.parametrize("start, length", ((0, 3), (5, 1), (6, 3)))
@pytest.mark.parametrize("tensor_start", (False, True))
def test_matches_numpy(dtype, start, length, tensor_start):
    ids = IDS[:, :length]
    tokens, positions = (ops.cast(ops.convert_to_tensor(t), dtype)
                         for t in (TOKENS, POSITIONS))
    at = ops.convert_to_tensor(start, "int32") if tensor_start else start
    rounded = [to_numpy(ops.cast(t, "float32")) for t in (tokens, positions)]
    want = rounded[0][ids] + rounded[1][start:start + length][None]
    for fn in (kzoo.ops.token_position_embedding,
               kzoo.ops.token_position_embedding_reference):
        got = fn(ops.convert_to_tensor(ids, "int32"), tokens, positions, at)
        assert keras.backend.standardize_dtype(got.dtype) == dtype
        tol = 1e-6 if dtype == "float32" else 2e-2
        assert_allclose(to_numpy(ops.cast(got, "float32")), want, atol=tol, rtol=tol)


def test_takes_variables():
    tokens, positions = keras.Variable(TOKENS), keras.Variable(POSITIONS)
    got = kzoo.ops.token_position_embedding(IDS, tokens, positions, 2)
    assert_allclose(to_numpy(got), TOKENS[IDS] + POSITIONS[2:5][None], atol=1e-6)


def test_rejects_bad_inputs():
    with pytest.raises(ValueError, match=r"Positions 7 \.\. 9 are outside"):
        kzoo.ops.token_position_embedding(IDS, TOKENS, POSITIONS, 7)
    with pytest.raises(ValueError, match=r"`token_ids` must be \[batch, length\]"):
        kzoo.ops.token_position_embedding(IDS[0], TOKENS, POSITIONS, 0)
    with pytest.raises(ValueError, match="of one dim"):
        kzoo.ops.token_position_embedding(IDS, TOKENS, POSITIONS[:, :2], 0)


@pytest.mark.parametrize("dtype", ("float32", "bfloat16"))
@pytest.mark.parametrize("shape", ((1, 1, 4), (8, 1, 4), (3, 30, 4), (5, 4)))
def test_embedding_logits_match_numpy(dtype, shape):
    # Up to 64 float32 rows take the (table @ x^T)^T form, others x @ table^T.
    x = np.random.default_rng(1).normal(size=shape).astype("float32")
    xs, table = (ops.cast(ops.convert_to_tensor(t), dtype) for t in (x, TOKENS))
    want = to_numpy(ops.cast(xs, "float32")) @ to_numpy(ops.cast(table, "float32")).T
    tol = 1e-5 if dtype == "float32" else 5e-2
    for fn in (kzoo.ops.embedding_logits, kzoo.ops.embedding_logits_reference):
        got = fn(xs, table)
        assert tuple(got.shape) == shape[:-1] + (11,)
        assert keras.backend.standardize_dtype(got.dtype) == "float32"
        assert_allclose(to_numpy(got), want, atol=tol, rtol=tol)
