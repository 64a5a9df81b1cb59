"""`overlap_batch_hooks`: where Keras runs a thread-safe per-batch hook."""

import threading

import keras
import numpy as np
import pytest

from kzoo.callbacks.batch_hooks import overlap_batch_hooks

pytestmark = pytest.mark.without_tensorflow


class _Recorder(keras.callbacks.Callback):
    """Notes the thread each per-batch hook runs on."""

    def __init__(self):
        super().__init__()
        self.async_safe = overlap_batch_hooks()
        self.threads = []

    def on_train_batch_end(self, batch, logs=None):
        self.threads.append(threading.get_ident())


@pytest.fixture(scope="module")
def hook_threads():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    recorder = _Recorder()
    model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2, epochs=1, verbose=0,
              callbacks=[recorder])
    assert len(recorder.threads) == 4
    return set(recorder.threads)


@pytest.mark.backends("jax")
def test_hooks_run_beside_the_steps_on_jax(hook_threads):
    assert threading.get_ident() not in hook_threads


@pytest.mark.backends("tensorflow", "torch")
def test_hooks_stay_on_the_training_thread_elsewhere(hook_threads):
    assert hook_threads == {threading.get_ident()}


def test_word2vec_progress_callbacks_follow_it():
    from kzoo.models.word2vec.word2vec_progress import EpochsProgbar, Word2VecProgress

    assert Word2VecProgress(preprocessor=None).async_safe is overlap_batch_hooks()
    assert EpochsProgbar(epochs=3).async_safe is overlap_batch_hooks()
