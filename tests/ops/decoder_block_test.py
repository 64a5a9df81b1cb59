"""kzoo.ops.cached_decoder_block equals its keras.ops reference (and the
reference equals the block in numpy), pre-norm and post-norm, float32 and
bfloat16, on the active backend."""

import math

import keras
import numpy as np
import pytest
from keras import ops

import kzoo.ops
from kzoo.ops import decoder_block
from kzoo.testing import assert_allclose, to_numpy

HIDDEN, HEADS, INTERMEDIATE, MAX_LENGTH = 8, 2, 12, 80
TOLERANCE = {"float32": 2e-5, "bfloat16": 5e-2}


def _weights(seed=0):
    rng = np.random.default_rng(seed)
    shapes = {
        "attention_norm_gamma": (HIDDEN,), "attention_norm_beta": (HIDDEN,),
        "query_key_value_kernel": (HIDDEN, 3 * HIDDEN),
        "query_key_value_bias": (3 * HIDDEN,),
        "attention_output_kernel": (HIDDEN, HIDDEN),
        "attention_output_bias": (HIDDEN,),
        "feedforward_norm_gamma": (HIDDEN,), "feedforward_norm_beta": (HIDDEN,),
        "intermediate_kernel": (HIDDEN, INTERMEDIATE),
        "intermediate_bias": (INTERMEDIATE,),
        "output_kernel": (INTERMEDIATE, HIDDEN), "output_bias": (HIDDEN,),
    }
    values = {name: rng.normal(size=shape).astype("float32") * 0.5
              for name, shape in shapes.items()}
    for name in ("attention_norm_gamma", "feedforward_norm_gamma"):
        values[name] += 1.0
    return values


def _inputs(batch, length, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, length, HIDDEN)).astype("float32")
    cache = rng.normal(size=(batch, 2, HEADS, MAX_LENGTH,
                             HIDDEN // HEADS)).astype("float32")
    return x, cache


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _numpy_block(x, cache, index, w, normalize_first, activation):
    """The block in float64 numpy: the cache write, each query over the
    cache positions up to its own, the residual branches."""
    x, cache = x.astype("float64"), cache.astype("float64").copy()
    batch, length, hidden = x.shape
    head_dim = hidden // HEADS
    act = {"gelu_approximate": _gelu_tanh, "relu": lambda y: np.maximum(y, 0),
           None: lambda y: y}[activation]

    def norm(y, which):
        mean = y.mean(-1, keepdims=True)
        var = ((y - mean) ** 2).mean(-1, keepdims=True)
        return ((y - mean) / np.sqrt(var + 1e-5) * w[f"{which}_norm_gamma"]
                + w[f"{which}_norm_beta"])

    def attention(y):
        qkv = y @ w["query_key_value_kernel"] + w["query_key_value_bias"]
        q, k, v = (t.reshape(batch, length, HEADS, head_dim).transpose(0, 2, 1, 3)
                   for t in np.split(qkv, 3, axis=-1))
        cache[:, 0, :, index:index + length] = k
        cache[:, 1, :, index:index + length] = v
        scores = q @ cache[:, 0].transpose(0, 1, 3, 2) / math.sqrt(head_dim)
        keys = np.arange(MAX_LENGTH)
        keep = keys[None, :] <= index + np.arange(length)[:, None]
        scores = np.where(keep, scores, -np.inf)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        out = (p @ cache[:, 1]).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        return out @ w["attention_output_kernel"] + w["attention_output_bias"]

    def mlp(y):
        y = act(y @ w["intermediate_kernel"] + w["intermediate_bias"])
        return y @ w["output_kernel"] + w["output_bias"]

    if normalize_first:
        x = x + attention(norm(x, "attention"))
        return x + mlp(norm(x, "feedforward")), cache
    x = norm(x + attention(x), "attention")
    return norm(x + mlp(x), "feedforward"), cache


def _block_weights(values, dtype):
    return kzoo.ops.DecoderBlockWeights(**{
        name: ops.cast(ops.convert_to_tensor(value), dtype)
        for name, value in values.items()})


# (batch, length, index): one-token steps (batch x filled positions over
# PyTorch's written-out threshold in the last), a prefill, a few tokens on
STEPS = ((1, 1, 0), (2, 1, 5), (2, 3, 0), (2, 2, 4), (2, 1, 70))


@pytest.mark.parametrize("batch, length, index", STEPS)
@pytest.mark.parametrize("normalize_first", (True, False))
@pytest.mark.parametrize("activation", ("gelu_approximate", "relu"))
def test_reference_matches_numpy(batch, length, index, normalize_first, activation):
    values = _weights()
    x, cache = _inputs(batch, length)
    want, want_cache = _numpy_block(x, cache, index, values, normalize_first,
                                    activation)
    got, got_cache = kzoo.ops.cached_decoder_block_reference(
        ops.convert_to_tensor(x), ops.convert_to_tensor(cache), index,
        _block_weights(values, "float32"), normalize_first, activation)
    assert_allclose(to_numpy(got), want, atol=1e-4, rtol=1e-4)
    assert_allclose(to_numpy(got_cache), want_cache, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("dtype", tuple(TOLERANCE))
@pytest.mark.parametrize("batch, length, index", STEPS)
@pytest.mark.parametrize("normalize_first", (True, False))
@pytest.mark.parametrize("in_place", (True, False))
@pytest.mark.parametrize("tensor_index", (False, True))
def test_equals_reference(dtype, batch, length, index, normalize_first, in_place,
                          tensor_index):
    # PyTorch's one-token in-place step runs the ATen kernels directly.
    weights = _block_weights(_weights(), dtype)
    x, cache = _inputs(batch, length)
    x = ops.cast(ops.convert_to_tensor(x), dtype)
    at = ops.convert_to_tensor(index, "int32") if tensor_index else index
    want, want_cache = kzoo.ops.cached_decoder_block_reference(
        x, ops.cast(ops.convert_to_tensor(cache), dtype), index, weights,
        normalize_first)
    given = ops.cast(ops.convert_to_tensor(cache), dtype)
    before = to_numpy(ops.cast(given, "float32"))
    got, got_cache = kzoo.ops.cached_decoder_block(
        x, given, at, weights, normalize_first, in_place=in_place)
    for tensor in (got, got_cache):
        assert keras.backend.standardize_dtype(tensor.dtype) == dtype
    tol = TOLERANCE[dtype]
    assert_allclose(to_numpy(ops.cast(got, "float32")),
                    to_numpy(ops.cast(want, "float32")), atol=tol, rtol=tol)
    assert_allclose(to_numpy(ops.cast(got_cache, "float32")),
                    to_numpy(ops.cast(want_cache, "float32")), atol=tol, rtol=tol)
    if not in_place:  # the caller's cache is left as it was
        assert_allclose(to_numpy(ops.cast(given, "float32")), before, atol=0)


@pytest.mark.backends("torch")
@pytest.mark.parametrize("dtype", tuple(TOLERANCE))
@pytest.mark.parametrize("batch, index", ((1, 3), (8, 40)))
@pytest.mark.parametrize("normalize_first", (True, False))
def test_torch_step_is_the_composed_primitives_to_the_bit(dtype, batch, index,
                                                          normalize_first):
    # The direct ATen calls are the kernels kzoo.ops' own PyTorch kernels
    # run for a one-token step, in the same order: the same bits.
    import torch

    from kzoo.ops import decoder_block_torch

    weights = _block_weights(_weights(2), dtype)
    x, cache = _inputs(batch, 1, seed=3)
    x = ops.cast(ops.convert_to_tensor(x), dtype)
    runs = []
    for fn in (decoder_block_torch.cached_decoder_block, decoder_block.composed):
        with torch.no_grad():
            runs.append(fn(x, ops.cast(ops.convert_to_tensor(cache), dtype), index,
                           weights, normalize_first, in_place=True))
    for got, want in zip(*runs):
        assert torch.equal(got, want)


def test_rejects_bad_inputs():
    values = _weights()
    weights = _block_weights(values, "float32")
    x, cache = (ops.convert_to_tensor(t) for t in _inputs(1, 1))
    with pytest.raises(ValueError, match=r"`weights.query_key_value_kernel` must "
                                         r"have shape \(8, 24\)"):
        kzoo.ops.cached_decoder_block(x, cache, 0, weights._replace(
            query_key_value_kernel=ops.zeros((8, 12))))
    with pytest.raises(ValueError, match=r"`cache` must be \[batch, 2"):
        kzoo.ops.cached_decoder_block(x, cache[:, :1], 0, weights)
    with pytest.raises(ValueError, match=r"`x`'s last size must be"):
        kzoo.ops.cached_decoder_block(x[..., :4], cache, 0, weights)
    with pytest.raises(TypeError, match="DecoderBlockWeights"):
        kzoo.ops.cached_decoder_block(x, cache, 0, tuple(weights))
    with pytest.raises(ValueError, match="`activation` must be one of"):
        kzoo.ops.cached_decoder_block(x, cache, 0, weights, activation="swish")
