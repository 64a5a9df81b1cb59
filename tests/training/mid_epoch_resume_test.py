"""A run killed mid-epoch resumes at the batch after its last checkpoint,
with the weights of a run never stopped (GPT from token shards, dropout on)."""

import types

import keras
import numpy as np
import pytest

from kzoo.data import prepare
from kzoo.models.gpt.gpt_shards import from_shards
from kzoo.testing.corpus import write_corpus
from kzoo.training import resumable_fit

pytestmark = pytest.mark.without_tensorflow

OPTIONS = types.SimpleNamespace(sequence_length=8, num_layers=1, hidden_dim=16,
                                num_heads=2, dropout=0.1, learning_rate=1e-3,
                                batch_size=4, seed=7)


class Killed(Exception):
    pass


class KillAt(keras.callbacks.Callback):
    def __init__(self, epoch, batch):
        super().__init__()
        self.at = (epoch, batch)
        self.epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.epoch, batch) == self.at:
            raise Killed()


def _train(shards, run_dir, callbacks=()):
    keras.utils.set_random_seed(0)
    model, data = from_shards(shards, OPTIONS)
    resumable_fit(model, 2, str(run_dir), checkpoint_every=3, verbose=0,
                  callbacks=list(callbacks), **data)
    return model


def test_a_run_killed_mid_epoch_ends_with_the_uninterrupted_weights(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    write_corpus(corpus, documents=30, sentences=(1, 2), words=(10, 11))
    shards = prepare("gpt", [str(corpus)], tmp_path / "data",
                     options={"vocabulary_size": 280}, verbose=False)
    reference = _train(shards, tmp_path / "whole")
    with pytest.raises(Killed):
        _train(shards, tmp_path / "killed", [KillAt(epoch=1, batch=7)])
    resumed = _train(shards, tmp_path / "killed")
    assert "1 of 2 epochs and 6 batches done" in capsys.readouterr().out
    for a, b in zip(reference.weights, resumed.weights):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(a),
                                   keras.ops.convert_to_numpy(b), rtol=1e-5, atol=1e-6,
                                   err_msg=a.path)
    # Without the batch checkpoints the resumed run would redo the epoch
    # from its start and differ.
    assert reference.optimizer.iterations.numpy() == resumed.optimizer.iterations.numpy()
