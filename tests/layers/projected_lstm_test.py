"""ProjectedLSTMCell / ProjectedLSTM against a numpy LSTMP written by hand."""

import keras
import numpy as np
import pytest

from kzoo.layers.projected_lstm import ProjectedLSTM
from kzoo.layers.projected_lstm_cell import ProjectedLSTMCell
from kzoo.testing import assert_allclose, to_numpy


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_lstmp(x, lengths, w, u, b, p, cell_clip, proj_clip, backward, h0=None, c0=None):
    """AllenNLP's LstmCellWithProjection loop: gates i, f, g, o; per-length reversal."""
    batch, time, _ = x.shape
    units, proj = p.shape
    out = np.zeros((batch, time, proj), "float32")
    hs, cs = [], []
    for r in range(batch):
        h = np.zeros(proj) if h0 is None else h0[r]
        c = np.zeros(units) if c0 is None else c0[r]
        order = range(lengths[r] - 1, -1, -1) if backward else range(lengths[r])
        for t in order:
            z = x[r, t] @ w + h @ u + b
            i, f, g, o = np.split(z, 4)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            if cell_clip:
                c = np.clip(c, -cell_clip, cell_clip)
            h = (sigmoid(o) * np.tanh(c)) @ p
            if proj_clip:
                h = np.clip(h, -proj_clip, proj_clip)
            out[r, t] = h
        hs.append(h)
        cs.append(c)
    return out, np.stack(hs), np.stack(cs)


def weights(cell):
    return [to_numpy(v) for v in (cell.kernel, cell.recurrent_kernel, cell.bias,
                                  cell.projection_kernel)]


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("clip", [None, 0.05])
def test_layer_matches_numpy(backward, clip):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5, 4)).astype("float32")
    lengths = np.array([5, 2, 0])
    mask = np.arange(5)[None] < lengths[:, None]
    layer = ProjectedLSTM(6, 3, cell_clip=clip, projection_clip=clip and clip / 2,
                          backward=backward, return_state=True)
    h0 = rng.normal(size=(3, 3)).astype("float32")
    c0 = rng.normal(size=(3, 6)).astype("float32")
    out, (h, c) = layer(x, mask=mask, initial_state=[h0, c0])
    b = weights(layer.cell)
    b[2] = rng.normal(size=b[2].shape).astype("float32")
    layer.cell.bias.assign(b[2])
    out, (h, c) = layer(x, mask=mask, initial_state=[h0, c0])
    expected = numpy_lstmp(x, lengths, *b, clip, clip and clip / 2, backward, h0, c0)
    assert_allclose(out, expected[0], atol=1e-5)
    assert_allclose(h, expected[1], atol=1e-5)
    assert_allclose(c, expected[2], atol=1e-5)  # a row without tokens keeps its state


def test_backward_reads_each_sequence_from_its_own_end():
    # The outputs of a sentence do not depend on how much padding follows it.
    rng = np.random.default_rng(1)
    layer = ProjectedLSTM(4, 2, backward=True)
    x = rng.normal(size=(1, 3, 2)).astype("float32")
    alone = layer(x)
    padded = np.concatenate([x, rng.normal(size=(1, 4, 2)).astype("float32")], 1)
    out = to_numpy(layer(padded, mask=np.arange(7)[None] < 3))
    assert_allclose(out[:, :3], alone, atol=1e-6)
    assert np.all(out[:, 3:] == 0)


def test_cell_under_keras_rnn_equals_the_layer():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 4, 3)).astype("float32")
    layer = ProjectedLSTM(5, 2, cell_clip=3.0, projection_clip=3.0)
    expected = layer(x)
    cell = ProjectedLSTMCell(5, 2, cell_clip=3.0, projection_clip=3.0)
    rnn = keras.layers.RNN(cell, return_sequences=True)
    rnn(x)
    cell.set_weights(layer.cell.get_weights())
    assert_allclose(rnn(x), expected, atol=1e-6)


def test_forget_bias_starts_at_one_and_config_round_trips():
    layer = ProjectedLSTM(3, 2, projection_clip=1.0, backward=True, name="lstm")
    x = np.ones((1, 2, 4), "float32")
    layer(x)
    assert_allclose(layer.cell.bias, [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is ProjectedLSTM and restored.backward
    restored(x)
    restored.set_weights(layer.get_weights())
    assert_allclose(restored(x), layer(x))


def test_in_a_functional_model_with_unknown_length():
    inputs = keras.Input((None, 3))
    mask = keras.Input((None,), dtype="bool")
    layer = ProjectedLSTM(4, 2, backward=True)
    model = keras.Model([inputs, mask], layer(inputs, mask=mask))
    x = np.random.default_rng(3).normal(size=(2, 5, 3)).astype("float32")
    m = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)
    assert_allclose(model.predict([x, m], verbose=0), layer(x, mask=m), atol=1e-6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`units` must be a positive int"):
        ProjectedLSTMCell(0, 2)
    with pytest.raises(ValueError, match="`cell_clip` must be a positive number"):
        ProjectedLSTMCell(2, 2, cell_clip=-1.0)
