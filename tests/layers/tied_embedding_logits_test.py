"""TiedEmbeddingLogits: hidden @ embeddings.T, sharing the embedding's weights."""

import keras
import numpy as np
import pytest

from kzoo.layers.tied_embedding_logits import TiedEmbeddingLogits
from kzoo.testing import assert_allclose, to_numpy


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


@pytest.mark.parametrize("shape", [(2, 1, 4), (3, 40, 4)])
def test_an_int8_embedding_is_read_with_its_scales(shape):
    # Keras' int8 Embedding stores round(row * scale), one scale per row:
    # the tied logits use int8 / scale (the int8 values alone once gave
    # logits hundreds of times too large).
    keras.utils.set_random_seed(2)
    embedding = keras.layers.Embedding(11, 4)
    embedding.build((None,))
    hidden = np.random.default_rng(3).normal(size=shape).astype("float32")
    expected_float = hidden @ to_numpy(embedding.embeddings).T
    embedding.quantize("int8")
    table = to_numpy(embedding.embeddings).astype("float32")
    scale = to_numpy(embedding.embeddings_scale)
    assert to_numpy(embedding.embeddings).dtype == np.int8
    logits = TiedEmbeddingLogits(embedding)(hidden)
    assert_allclose(logits, hidden @ (table / scale[:, None]).T, atol=1e-5)
    assert np.abs(to_numpy(logits) - expected_float).max() < 0.02 * np.abs(expected_float).max()
    embedding.enable_lora(2)
    with pytest.raises(NotImplementedError, match="int8.*LoRA"):
        TiedEmbeddingLogits(embedding)(hidden)
