"""ScalarMix: softmax-weighted sum times gamma; AllenNLP's masked layer norm."""

import keras
import numpy as np
import pytest

from kzoo.layers.scalar_mix import ScalarMix
from kzoo.testing import assert_allclose


def numpy_layer_norm(x, mask):
    """AllenNLP ScalarMix._do_layer_norm, written out in numpy."""
    m = mask.astype("float32")[..., None]
    n = m.sum() * x.shape[-1]
    mean = (x * m).sum() / n
    var = (((x * m - mean) * m) ** 2).sum() / n
    return (x - mean) / np.sqrt(var + 1e-12)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_matches_numpy(layer_norm):
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=(2, 4, 3)).astype("float32") for _ in range(3)]
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], bool)
    mix = ScalarMix(3, layer_norm=layer_norm, initial_weights=[0.5, -1.0, 2.0],
                    initial_gamma=1.5)
    w = np.exp([0.5, -1.0, 2.0]) / np.exp([0.5, -1.0, 2.0]).sum()
    norm = (lambda x: numpy_layer_norm(x, mask)) if layer_norm else (lambda x: x)
    expected = 1.5 * sum(w[k] * norm(xs[k]) for k in range(3))
    assert_allclose(mix(xs, mask=mask), expected, atol=1e-5)


def test_padding_does_not_change_layer_norm_of_real_positions():
    rng = np.random.default_rng(1)
    xs = [rng.normal(size=(1, 3, 2)).astype("float32") for _ in range(2)]
    padded = [np.concatenate([x, 100 * np.ones((1, 2, 2), "float32")], 1) for x in xs]
    mix = ScalarMix(2, layer_norm=True)
    short = mix(xs, mask=np.ones((1, 3), bool))
    long = mix(padded, mask=np.array([[1, 1, 1, 0, 0]], bool))
    assert_allclose(keras.ops.convert_to_numpy(long)[:, :3], short, atol=1e-5)


def test_mask_is_passed_on_and_weights_train():
    inputs = [keras.Input((None, 2)) for _ in range(2)]
    masked = [keras.layers.Masking()(x) for x in inputs]
    mix = ScalarMix(2)
    out = mix(masked)
    assert out._keras_mask is not None
    model = keras.Model(inputs, keras.layers.GlobalAveragePooling1D()(out))
    model.compile("sgd", "mse")
    before = keras.ops.convert_to_numpy(mix.scalar_weights).copy()
    x = [np.ones((4, 3, 2), "float32"), np.zeros((4, 3, 2), "float32")]
    model.fit(x, np.full((4, 2), 3.0, "float32"), epochs=1, verbose=0)
    assert not np.allclose(keras.ops.convert_to_numpy(mix.scalar_weights), before)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`initial_weights` has 2 values"):
        ScalarMix(3, initial_weights=[0.0, 1.0])
    with pytest.raises(ValueError, match="mixes 2 layers but got 3"):
        ScalarMix(2)([np.zeros((1, 2), "float32")] * 3)
