"""ElmoEmbedding: a frozen biLM + trainable ScalarMix inside any Keras model."""

import keras
import numpy as np

from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_embedding import ElmoEmbedding, add_sentence_boundaries
from kzoo.preprocessing import CharacterIds
from kzoo.testing import assert_all_equal, assert_allclose, to_numpy

TINY = dict(num_layers=2, hidden_dim=8, projection_dim=4, filters=((1, 4), (2, 4)),
            character_dim=3, max_word_length=10, dropout=0.0)
CHARACTERS = CharacterIds(max_word_length=10)


def chars(sentences):
    return CHARACTERS(sentences)["character_ids"]


def test_boundaries_are_added_at_each_rows_own_end():
    sentences = ["a b c", "d", ""]
    ids, padding_mask, token_mask = add_sentence_boundaries(chars(sentences))
    expected = CharacterIds(max_word_length=10, add_sentence_boundaries=True)(sentences)
    assert_all_equal(ids, expected["character_ids"])
    assert_all_equal(padding_mask, expected["padding_mask"])
    assert_all_equal(token_mask, [[1, 1, 1], [1, 0, 0], [0, 0, 0]])


def test_equals_the_backbone_on_the_tokens_and_mixes_them():
    backbone = ElmoBackbone(**TINY)
    embedding = ElmoEmbedding(backbone, initial_weights=[1.0, 0.0, -1.0], initial_gamma=0.5)
    ids = chars(["the river bank", "a bank"])
    layers, mask = embedding.layer_outputs(ids)
    full = to_numpy(backbone(CharacterIds(max_word_length=10, add_sentence_boundaries=True)(
        ["the river bank", "a bank"])))
    assert_allclose(layers[2][0], full["lstm_output_2"][0, 1:4], atol=1e-6)
    assert_allclose(layers[1][1, :2], full["lstm_output_1"][1, 1:3], atol=1e-6)
    assert np.all(to_numpy(layers[1])[1, 2:] == 0)
    token = full["token_output"][0, 1:4]
    assert_allclose(layers[0][0], np.concatenate([token, token], -1), atol=1e-6)
    w = np.exp([1.0, 0.0, -1.0]) / np.exp([1.0, 0.0, -1.0]).sum()
    expected = 0.5 * sum(w[k] * to_numpy(layers[k]) for k in range(3))
    assert_allclose(embedding(ids), expected, atol=1e-6)


def test_trains_only_the_mix_and_passes_the_mask_on(tmp_path):
    backbone = ElmoBackbone(**TINY)
    inputs = keras.Input((None, 10), dtype="int32")
    vectors = ElmoEmbedding(backbone, name="elmo")(inputs)
    assert vectors._keras_mask is not None
    pooled = keras.layers.GlobalAveragePooling1D()(vectors)  # masked average
    model = keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(pooled))
    assert len(model.trainable_weights) == 4  # s, gamma, dense kernel and bias
    ids = to_numpy(chars(["good film", "bad film", "a good one", "so bad"]))
    y = np.array([1, 0, 1, 0], "float32")
    before = [to_numpy(w).copy() for w in backbone.weights]
    model.compile("adam", "binary_crossentropy")
    model.fit(ids, y, epochs=2, verbose=0)
    for b, w in zip(before, backbone.weights):
        np.testing.assert_array_equal(b, to_numpy(w))
    # Masked pooling: extra padding rows change nothing.
    padded = np.concatenate([ids, np.zeros((4, 3, 10), "int32")], 1)
    assert_allclose(model.predict(padded, verbose=0), model.predict(ids, verbose=0), atol=1e-6)
    path = str(tmp_path / "m.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert_allclose(restored.predict(ids, verbose=0), model.predict(ids, verbose=0), atol=1e-6)
