"""TiedEmbeddingLogits: hidden @ embeddings.T, sharing the embedding's weights."""

import keras
import numpy as np
import pytest

from kzoo.layers.tied_embedding_logits import TiedEmbeddingLogits
from kzoo.testing.test_case import assert_allclose, gradient, to_numpy


def test_logits_are_the_transposed_embedding_product():
    embedding = keras.layers.Embedding(7, 4)
    embedding.build((None,))
    hidden = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    layer = TiedEmbeddingLogits(embedding)
    expected = hidden @ to_numpy(embedding.embeddings).T
    assert_allclose(layer(hidden), expected, atol=1e-5)
    assert layer.weights == [] or all(w is embedding.embeddings for w in layer.weights)
    embedding.embeddings.assign(np.ones((7, 4), "float32"))
    assert_allclose(layer(hidden), np.repeat(hidden.sum(-1, keepdims=True), 7, -1),
                    atol=1e-5)


@pytest.mark.parametrize("shape", [(1, 1, 4), (8, 1, 4), (2, 32, 4), (3, 40, 4), (5, 4)])
def test_few_and_many_rows_give_the_same_product(shape):
    # Up to 64 rows take the (E @ h^T)^T form, more the h @ E^T one.
    embedding = keras.layers.Embedding(11, 4)
    embedding.build((None,))
    hidden = np.random.default_rng(1).normal(size=shape).astype("float32")
    logits = TiedEmbeddingLogits(embedding)(hidden)
    assert tuple(logits.shape) == shape[:-1] + (11,)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert_allclose(logits, hidden @ to_numpy(embedding.embeddings).T, atol=1e-5)


def test_errors():
    with pytest.raises(TypeError, match="Embedding"):
        TiedEmbeddingLogits(keras.layers.Dense(3))
    embedding = keras.layers.Embedding(7, 4)
    with pytest.raises(ValueError, match="columns"):
        TiedEmbeddingLogits(embedding)(np.ones((1, 2, 5), "float32"))


def _int8_embedding(seed=2, vocabulary=11, dim=4, config=None):
    keras.utils.set_random_seed(seed)
    embedding = keras.layers.Embedding(vocabulary, dim)
    embedding.build((None,))
    float_table = to_numpy(embedding.embeddings).copy()
    embedding.quantize("int8", config=config)
    assert to_numpy(embedding.embeddings).dtype == np.int8
    table = to_numpy(embedding.embeddings).astype("float64")
    scale = to_numpy(embedding.embeddings_scale).astype("float64")
    return embedding, float_table, table, scale


@pytest.mark.parametrize("shape", [(1, 1, 4), (2, 1, 4), (3, 40, 4)])
def test_an_int8_embedding_is_read_with_its_scales(shape):
    # Keras' int8 Embedding stores round(row * scale), one scale per row;
    # the tied logits quantize each hidden row as Keras' int8 Dense does
    # (absmax to [-127, 127]) and multiply int8 by int8 (the int8 values
    # read alone once gave logits hundreds of times too large), a single
    # row (a batch-1 generation step) too.
    embedding, float_table, table, scale = _int8_embedding()
    hidden = np.random.default_rng(3).normal(size=shape).astype("float32")
    flat = hidden.reshape(-1, shape[-1]).astype("float64")
    row_scale = 127.0 / np.abs(flat).max(-1, keepdims=True)
    quantized = np.clip(np.round(flat * row_scale), -127, 127)
    expected = (quantized @ table.T) / (row_scale * scale[None, :])
    logits = TiedEmbeddingLogits(embedding)(hidden)
    assert to_numpy(logits).dtype == np.float32
    assert_allclose(logits, expected.reshape(shape[:-1] + (11,)), atol=1e-4)
    expected_float = hidden @ float_table.T
    assert np.abs(to_numpy(logits) - expected_float).max() < 0.03 * np.abs(expected_float).max()
    embedding.enable_lora(2)
    with pytest.raises(NotImplementedError, match="int8.*LoRA"):
        TiedEmbeddingLogits(embedding)(hidden)


def test_a_weight_only_int8_embedding_keeps_float_hidden_states():
    # Int8QuantizationConfig(activation_quantizer=None): the table is
    # dequantized, the hidden states stay as they are.
    config = keras.quantizers.Int8QuantizationConfig(activation_quantizer=None)
    embedding, _, table, scale = _int8_embedding(config=config)
    hidden = np.random.default_rng(4).normal(size=(2, 3, 4)).astype("float32")
    logits = TiedEmbeddingLogits(embedding)(hidden)
    assert_allclose(logits, hidden @ (table / scale[:, None]).T, atol=1e-5)


def test_the_int8_head_passes_the_dequantized_gradient():
    # Rounding has no gradient; the hidden states get upstream @ table / scale
    # (as Keras' int8 Dense), so layers below a quantized head still train.
    embedding, _, table, scale = _int8_embedding()
    hidden = np.random.default_rng(5).normal(size=(2, 3, 4)).astype("float32")
    upstream = np.random.default_rng(6).normal(size=(2, 3, 11)).astype("float32")
    layer = TiedEmbeddingLogits(embedding)
    result = gradient(lambda h: keras.ops.multiply(layer(h), upstream), hidden)
    assert_allclose(result, upstream @ (table / scale[:, None]), atol=1e-4)