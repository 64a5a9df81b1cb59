"""Highway: t * f(x W_h + b_h) + (1 - t) * x, by hand."""

import keras
import numpy as np

from kzoo.layers.highway import Highway
from kzoo.testing import assert_allclose, to_numpy


def test_matches_numpy():
    layer = Highway()
    x = np.random.default_rng(0).normal(size=(2, 3, 5)).astype("float32")
    layer(x)
    assert_allclose(layer.gate_dense.bias, np.full((5,), -2.0))  # mostly carry at first
    rng = np.random.default_rng(1)
    for dense in (layer.transform_dense, layer.gate_dense):
        dense.bias.assign(rng.normal(size=5).astype("float32"))
    w_h, b_h = to_numpy(layer.transform_dense.kernel), to_numpy(layer.transform_dense.bias)
    w_t, b_t = to_numpy(layer.gate_dense.kernel), to_numpy(layer.gate_dense.bias)
    t = 1 / (1 + np.exp(-(x @ w_t + b_t)))
    expected = t * np.maximum(x @ w_h + b_h, 0) + (1 - t) * x
    assert_allclose(layer(x), expected, atol=1e-6)


def test_closed_gate_is_the_identity_and_config_round_trips():
    layer = Highway(activation="tanh", gate_bias_initializer=-1e4)
    x = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
    assert_allclose(layer(x), x)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is Highway
    restored(x)
    restored.set_weights(layer.get_weights())
    assert_allclose(restored(x), layer(x))
