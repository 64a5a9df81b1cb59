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


def test_errors():
    with pytest.raises(TypeError, match="Embedding"):
        TiedEmbeddingLogits(keras.layers.Dense(3))
    embedding = keras.layers.Embedding(7, 4)
    with pytest.raises(ValueError, match="columns"):
        TiedEmbeddingLogits(embedding)(np.ones((1, 2, 5), "float32"))
