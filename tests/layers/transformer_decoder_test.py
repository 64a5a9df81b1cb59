"""TransformerDecoder against a numpy transcription of the GPT block."""

import math

import keras
import numpy as np
import pytest

from kzoo.layers.transformer_decoder import TransformerDecoder
from kzoo.ops.transformer import attention_reference
from kzoo.testing import assert_allclose, to_numpy

HIDDEN, HEADS, INTERMEDIATE = 8, 2, 12
RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 5, HIDDEN)).astype("float32")
PADDING = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _layer_norm(x, norm):
    w = lambda v: to_numpy(v).astype("float64")  # noqa: E731
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * w(norm.gamma) + w(norm.beta)


def _reference(layer, x, padding_mask=None):
    """The block in numpy: fused c_attn, causal softmax, tanh-GELU MLP."""
    w = lambda v: to_numpy(v).astype("float64")  # noqa: E731
    b, t, h = x.shape
    d = h // HEADS

    def dense(layer_, y):
        return y @ w(layer_.kernel) + w(layer_.bias)

    def attention(y):
        q, k, v = np.split(dense(layer.query_key_value_dense, y), 3, axis=-1)
        q, k, v = (z.reshape(b, t, HEADS, d).transpose(0, 2, 1, 3) for z in (q, k, v))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
        keep = np.tril(np.ones((t, t), bool))[None, None]
        if padding_mask is not None:
            keep = keep & padding_mask.astype(bool)[:, None, None, :]
        scores = np.where(keep, scores, -1e30)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, t, h)
        return dense(layer.attention_output_dense, ctx)

    def mlp(y):
        return dense(layer.feedforward_output_dense,
                     _gelu_tanh(dense(layer.feedforward_intermediate_dense, y)))

    x = x.astype("float64")
    if layer.normalize_first:
        x = x + attention(_layer_norm(x, layer.self_attention_layer_norm))
        return x + mlp(_layer_norm(x, layer.feedforward_layer_norm))
    x = _layer_norm(x + attention(x), layer.self_attention_layer_norm)
    return _layer_norm(x + mlp(x), layer.feedforward_layer_norm)


def _layer(normalize_first=True, **kwargs):
    layer = TransformerDecoder(INTERMEDIATE, HEADS, normalize_first=normalize_first,
                               bias_initializer="glorot_uniform", **kwargs)
    layer.build(X.shape)
    # Non-trivial layer norms, so that a swapped norm would show.
    for norm in (layer.self_attention_layer_norm, layer.feedforward_layer_norm):
        norm.gamma.assign(RNG.normal(1.0, 0.3, HIDDEN).astype("float32"))
        norm.beta.assign(RNG.normal(0.0, 0.3, HIDDEN).astype("float32"))
    return layer


@pytest.mark.parametrize("normalize_first", [True, False])
def test_matches_numpy_block(normalize_first):
    layer = _layer(normalize_first)
    assert_allclose(layer(X), _reference(layer, X), atol=1e-5, rtol=1e-5)
    # Padded keys are not attended to: real positions match the reference.
    out = to_numpy(layer(X, padding_mask=PADDING))
    ref = _reference(layer, X, PADDING)
    real = PADDING.astype(bool)
    np.testing.assert_allclose(out[real], ref[real], atol=1e-5, rtol=1e-5)
    assert np.isfinite(out).all()


def test_causal_and_right_padding_leave_earlier_positions_alone():
    layer = _layer()
    changed = X.copy()
    changed[:, 3:] = RNG.normal(size=changed[:, 3:].shape)
    assert_allclose(to_numpy(layer(changed))[:, :3], to_numpy(layer(X))[:, :3],
                    atol=1e-6)


def test_training_drops_attention_probabilities_as_the_reference():
    # kzoo.ops.attention with the layer's attention-dropout rate and seed:
    # the same mask as the reference drawn from a twin of that seed.
    layer = _layer(dropout=0.3)
    q, k, v = (RNG.normal(size=(2, 5, HEADS, HIDDEN // HEADS)).astype("float32")
               for _ in range(3))
    mask = layer._attention_mask(5, PADDING)
    twin = keras.random.SeedGenerator(0)
    twin.state.assign(layer.attention_dropout.seed_generator.state.value)
    got = to_numpy(layer._attend(q, k, v, mask, training=True))
    assert_allclose(got, attention_reference(q, k, v, mask, dropout=0.3, seed=twin),
                    atol=1e-5)
    assert not np.allclose(got, to_numpy(layer._attend(q, k, v, mask)), atol=1e-3)
    assert_allclose(layer._attend(q, k, v, mask),
                    attention_reference(q, k, v, mask), atol=1e-5)


@pytest.mark.parametrize("normalize_first", [True, False])
def test_cache_step_by_step_equals_full_sequence(normalize_first):
    layer = _layer(normalize_first)
    full = to_numpy(layer(X))
    cache = np.zeros((2, 2, HEADS, 7, HIDDEN // HEADS), "float32")
    y, cache = layer(X[:, :2], cache=cache, cache_update_index=0)  # a 2-token prefill
    outputs = [to_numpy(y)]
    for i in range(2, 5):
        y, cache = layer(X[:, i:i + 1], cache=cache,
                         cache_update_index=keras.ops.convert_to_tensor(i, "int32"))
        outputs.append(to_numpy(y))
    assert_allclose(np.concatenate(outputs, axis=1), full, atol=1e-5)
    assert tuple(cache.shape) == (2, 2, HEADS, 7, HIDDEN // HEADS)
    # Positions not written yet stay zero.
    assert not to_numpy(cache)[:, :, :, 5:].any()


def test_config_round_trip_and_errors():
    layer = _layer(False, dropout=0.1, activation="relu")
    restored = TransformerDecoder.from_config(layer.get_config())
    assert restored.get_config() == layer.get_config()
    with pytest.raises(ValueError, match="num_heads"):
        TransformerDecoder(8, 0)
    with pytest.raises(ValueError, match="divisible"):
        TransformerDecoder(8, 3)(X)
    with pytest.raises(ValueError, match="cache_update_index"):
        layer(X, cache=np.zeros((2, 2, 2, 5, 4), "float32"))
    with pytest.raises(ValueError, match="head-major"):  # keras-hub's layout
        layer(X[:, :1], cache=np.zeros((2, 2, 5, 2, 4), "float32"), cache_update_index=0)
    with pytest.raises(ValueError, match="not both"):
        layer(X, padding_mask=PADDING, cache=np.zeros((2, 2, 2, 5, 4), "float32"),
              cache_update_index=0)
