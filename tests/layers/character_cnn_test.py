"""CharacterCNN against a numpy convolution written by hand."""

import keras
import numpy as np
import pytest

from kzoo.layers.character_cnn import CharacterCNN
from kzoo.testing import assert_allclose, to_numpy


def numpy_character_cnn(ids, table, kernels, biases, activation):
    chars = table[ids]  # [..., length, dim]
    features = []
    for kernel, bias in zip(kernels, biases):
        width = kernel.shape[0]
        length = chars.shape[-2]
        windows = np.stack(
            [np.einsum("...wd,wdn->...n", chars[..., p:p + width, :], kernel)
             for p in range(length - width + 1)], axis=-2) + bias
        features.append(activation(windows.max(axis=-2)))
    return np.concatenate(features, axis=-1)


@pytest.mark.parametrize("activation, fn", [
    ("relu", lambda x: np.maximum(x, 0)), ("tanh", np.tanh)])
def test_matches_numpy(activation, fn):
    layer = CharacterCNN(filters=((1, 3), (2, 2), (4, 5)), num_characters=12,
                         character_dim=3, activation=activation)
    # 19 characters: the products run over chunks of 8 positions (8, 8, 3).
    ids = np.random.default_rng(0).integers(0, 12, size=(2, 3, 19)).astype("int32")
    out = layer(ids)
    assert tuple(out.shape) == (2, 3, 10)
    kernels = [to_numpy(c.kernel) for c in layer.convolutions]
    biases = [np.random.default_rng(i).normal(size=c.bias.shape).astype("float32")
              for i, c in enumerate(layer.convolutions)]
    for conv, bias in zip(layer.convolutions, biases):
        conv.bias.assign(bias)
    expected = numpy_character_cnn(
        ids, to_numpy(layer.character_embedding.embeddings), kernels, biases, fn)
    assert_allclose(layer(ids), expected, atol=1e-5)


def test_config_round_trip_and_functional_use():
    layer = CharacterCNN(filters=[[1, 2], [3, 4]], num_characters=9,
                         character_dim=2, name="chars")
    inputs = keras.Input((None, 6), dtype="int32")
    model = keras.Model(inputs, layer(inputs))
    ids = np.arange(36).reshape(2, 3, 6).astype("int32") % 9
    expected = model.predict(ids, verbose=0)
    restored = CharacterCNN.from_config(layer.get_config())
    restored(ids)
    restored.set_weights(layer.get_weights())
    assert_allclose(restored(ids), expected)
    assert keras.saving.serialize_keras_object(layer)["registered_name"] == "kzoo>CharacterCNN"


def test_unknown_word_length_in_a_functional_model():
    # Without a static word length the layer falls back to the convolution op.
    layer = CharacterCNN(filters=[[1, 2], [3, 4]], num_characters=9, character_dim=2)
    inputs = keras.Input((None, None), dtype="int32")
    model = keras.Model(inputs, layer(inputs))
    ids = np.random.default_rng(1).integers(0, 9, size=(2, 3, 11)).astype("int32")
    assert_allclose(model.predict(ids, verbose=0), layer(ids), atol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`filters` must be a non-empty list"):
        CharacterCNN(filters=[[1, 0]])
    with pytest.raises(ValueError, match="`filters` must be a non-empty list"):
        CharacterCNN(filters=[])
    with pytest.raises(ValueError, match="widest filter is 4 wide"):
        CharacterCNN(filters=[[4, 2]], num_characters=5, character_dim=2)(
            np.zeros((1, 3), "int32"))
