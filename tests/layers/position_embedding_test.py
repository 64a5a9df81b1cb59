"""PositionEmbedding: the table's first rows, broadcast; clear length errors."""

import keras
import numpy as np
import pytest

from kzoo.layers.position_embedding import PositionEmbedding
from kzoo.testing import assert_allclose, to_numpy


def test_returns_the_first_rows_of_the_table_broadcast():
    layer = PositionEmbedding(sequence_length=6)
    out = layer(np.zeros((2, 4, 3), "float32"))
    table = to_numpy(layer.embeddings)
    assert table.shape == (6, 3)
    assert_allclose(out, np.broadcast_to(table[:4], (2, 4, 3)))
    shifted = layer(np.zeros((1, 2, 3), "float32"), start_index=3)
    assert_allclose(shifted, table[None, 3:5])


def test_initializer_and_config_round_trip():
    layer = PositionEmbedding(sequence_length=5, initializer="zeros", name="pos")
    x = np.ones((1, 5, 2), "float32")
    assert_allclose(layer(x), np.zeros((1, 5, 2)))
    config = layer.get_config()
    assert config["sequence_length"] == 5
    restored = PositionEmbedding.from_config(config)
    restored(x)
    restored.set_weights(layer.get_weights())
    assert_allclose(restored(x), layer(x))
    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"] == "kzoo>PositionEmbedding"
    assert type(keras.saving.deserialize_keras_object(serialized)) is PositionEmbedding


def test_too_long_input_names_both_lengths():
    layer = PositionEmbedding(sequence_length=4)
    with pytest.raises(ValueError, match="length 6.*sequence_length=4"):
        layer(np.zeros((1, 6, 2), "float32"))
    with pytest.raises(ValueError, match="starting at position 3"):
        layer(np.zeros((1, 2, 2), "float32"), start_index=3)


@pytest.mark.parametrize("bad", [0, -1, 2.5, None])
def test_bad_sequence_length(bad):
    with pytest.raises(ValueError, match="`sequence_length` must be a positive int"):
        PositionEmbedding(sequence_length=bad)


def test_inside_a_functional_model_with_unknown_length():
    inputs = keras.Input((None, 3))
    layer = PositionEmbedding(sequence_length=8)
    model = keras.Model(inputs, layer(inputs))
    out = model.predict(np.zeros((2, 5, 3), "float32"), verbose=0)
    assert_allclose(out, np.broadcast_to(to_numpy(layer.embeddings)[:5], (2, 5, 3)))
