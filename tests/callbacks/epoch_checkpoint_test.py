"""A run stopped after an epoch and resumed from its checkpoint (a new model,
built and compiled as before) ends with the weights of an uninterrupted run:
the optimizer and every random state (dropout without a seed draws from
torch's global generator) come back."""

import json
import os

import keras
import numpy as np
import pytest

from kzoo.callbacks import EpochCheckpoint
from kzoo.training import resumable_fit, shuffled_epoch

X = np.random.default_rng(0).random((48, 4), dtype=np.float32)
Y = X.sum(axis=1, keepdims=True)


def _model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8),
                              keras.layers.Dropout(0.5), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(0.01), "mse")
    return model


def _data(epoch):
    return shuffled_epoch((X, Y), epoch, batch_size=16)


def test_resumed_run_equals_the_uninterrupted_one(tmp_path):
    straight = _model()
    resumable_fit(straight, 3, str(tmp_path / "straight"), data_for_epoch=_data, verbose=0)
    stopped = _model()
    resumable_fit(stopped, 1, str(tmp_path / "stopped"), data_for_epoch=_data, verbose=0)
    keras.utils.set_random_seed(123)  # the new process draws other numbers
    resumed = _model()
    history = resumable_fit(resumed, 3, str(tmp_path / "stopped"), data_for_epoch=_data,
                            verbose=0)
    assert len(history["loss"]) == 3
    for expected, got in zip(straight.get_weights(), resumed.get_weights()):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_a_checkpoint_of_another_model_is_refused_and_the_model_kept(tmp_path):
    model = _model()
    resumable_fit(model, 1, str(tmp_path), data_for_epoch=_data, verbose=0)
    with open(tmp_path / "checkpoint" / "state.json") as f:
        assert json.load(f)["epoch"] == 1
    other = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    other.compile("sgd", "mse")
    before = [w.copy() for w in other.get_weights()]
    with pytest.raises(ValueError):
        EpochCheckpoint.restore(other, str(tmp_path / "checkpoint"))
    for a, b in zip(before, other.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert os.path.exists(tmp_path / "checkpoint" / "state.json")


def test_the_progress_bar_counts_the_run_epochs(tmp_path, capsys):
    resumable_fit(_model(), 2, str(tmp_path), data_for_epoch=_data, verbose=2)
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "Epoch 2/2" in out
    resumable_fit(_model(), 3, str(tmp_path), data_for_epoch=_data, verbose=2)
    out = capsys.readouterr().out
    assert "resuming from" in out and "Epoch 3/3" in out and "Epoch 1/" not in out
