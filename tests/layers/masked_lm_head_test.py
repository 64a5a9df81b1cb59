"""MaskedLMHead against a numpy transcription of BERT's prediction head."""

import math

import keras
import numpy as np
import pytest

from kzoo.layers.masked_lm_head import MaskedLMHead
from kzoo.testing import assert_allclose, run_saving_test, to_numpy

VOCABULARY, HIDDEN = 11, 6
RNG = np.random.default_rng(0)
HIDDEN_STATES = RNG.normal(size=(2, 5, HIDDEN)).astype("float32")
POSITIONS = np.array([[1, 4, 0], [3, 2, 2]], "int32")


def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _reference(head, hidden, positions, kernel, activation=None):
    """gather → dense → GELU → layer norm → @ kernel + bias, in float64."""
    w = lambda v: to_numpy(v).astype("float64")  # noqa: E731
    x = np.take_along_axis(hidden.astype("float64"), positions[..., None], axis=1)
    x = _gelu(x @ w(head.transform_dense.kernel) + w(head.transform_dense.bias))
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    x = (x - mean) / np.sqrt(var + head.layer_norm_epsilon)
    x = x * w(head.transform_layer_norm.gamma) + w(head.transform_layer_norm.beta)
    logits = x @ kernel + w(head.output_bias)
    if activation == "softmax":
        logits = np.exp(logits - logits.max(-1, keepdims=True))
        logits /= logits.sum(-1, keepdims=True)
    return logits


def _randomize(layer, seed=1):
    rng = np.random.default_rng(seed)
    for v in layer.weights:
        v.assign(rng.normal(size=v.shape).astype("float32"))


def test_tied_head_matches_reference():
    embedding = keras.layers.Embedding(VOCABULARY, HIDDEN)
    embedding.build((None,))
    head = MaskedLMHead(token_embedding=embedding, layer_norm_epsilon=1e-5)
    out = head(HIDDEN_STATES, POSITIONS)
    assert tuple(out.shape) == (2, 3, VOCABULARY)
    _randomize(head)  # biases and layer norm are non-trivial now
    kernel = to_numpy(embedding.embeddings).astype("float64").T
    assert_allclose(head(HIDDEN_STATES, POSITIONS),
                    _reference(head, HIDDEN_STATES, POSITIONS, kernel),
                    atol=1e-4, rtol=1e-4)
    # Tied: the head owns no output matrix; the embedding is the projection.
    own = {v.path for v in head.weights} - {v.path for v in embedding.weights}
    assert sorted(p.split("/")[-1] for p in own) == [
        "beta", "bias", "gamma", "kernel", "output_bias"]
    assert head.vocabulary_size == VOCABULARY


def test_untied_head_with_softmax():
    head = MaskedLMHead(vocabulary_size=VOCABULARY, activation="softmax")
    head(HIDDEN_STATES, POSITIONS)
    _randomize(head, seed=2)
    kernel = to_numpy(head.output_kernel).astype("float64")
    expected = _reference(head, HIDDEN_STATES, POSITIONS, kernel, "softmax")
    assert_allclose(head(HIDDEN_STATES, POSITIONS), expected, atol=1e-5, rtol=1e-4)


def test_config_round_trip_and_saving(tmp_path):
    token_ids = keras.Input((None,), dtype="int32")
    positions = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(VOCABULARY, HIDDEN)
    head = MaskedLMHead(token_embedding=embedding,
                        intermediate_activation="gelu_approximate")
    model = keras.Model([token_ids, positions], head(embedding(token_ids), positions))
    _randomize(head)
    data = [np.array([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], "int32"), POSITIONS]
    run_saving_test(model, data, tmp_path, atol=1e-5)

    config = head.get_config()
    assert config["intermediate_activation"] == "gelu_approximate"
    restored = MaskedLMHead.from_config(config)  # with its own embedding copy
    assert restored.vocabulary_size == VOCABULARY
    restored(HIDDEN_STATES, POSITIONS)
    restored.set_weights(head.get_weights())
    assert_allclose(restored(HIDDEN_STATES, POSITIONS), head(HIDDEN_STATES, POSITIONS))


def test_bad_arguments():
    with pytest.raises(ValueError, match="vocabulary_size.*token_embedding"):
        MaskedLMHead()
    embedding = keras.layers.Embedding(VOCABULARY, HIDDEN)
    with pytest.raises(ValueError, match="vocabulary_size`=7 differs"):
        MaskedLMHead(vocabulary_size=7, token_embedding=embedding)
    with pytest.raises(ValueError, match="hidden states have size 4"):
        MaskedLMHead(token_embedding=embedding)(np.zeros((1, 3, 4)), POSITIONS[:1])
    with pytest.raises(ValueError, match="activation"):
        MaskedLMHead(vocabulary_size=5, intermediate_activation="no_such_thing")
