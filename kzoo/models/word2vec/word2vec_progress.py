"""Training speed in words per second, for word2vec's `fit`."""

import threading
import time

import keras

from kzoo.callbacks.batch_hooks import overlap_batch_hooks


class Word2VecProgress(keras.callbacks.Callback):
    """Adds `words_per_sec` to the logs that Keras shows.

    The words are those that the preprocessor has tokenized (corpus words,
    in the vocabulary or not, as word2vec counts its progress); the input
    pipeline reads a little ahead of training, so mid-epoch values lead by a
    few batches. Each epoch's final value is that epoch's words over its
    wall time: with `passes`, the words of the pass the epoch trained on,
    exactly (the pipeline counted them at the pass's end).

    Args:
        preprocessor: the `Word2VecPreprocessor` feeding `fit`.
        passes: None or the `Passes` (`preprocessor.passes(...)`) whose
            passes the epochs train on, one each.
    """

    def __init__(self, preprocessor, passes=None):
        super().__init__()
        # The per-batch hook only reads counters: on JAX it may run while
        # the next steps are dispatched (see `overlap_batch_hooks`).
        self.async_safe = overlap_batch_hooks()
        self.preprocessor = preprocessor
        self.passes = passes
        self.epoch_words = []
        self.epoch_seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()
        if self.passes is not None:
            # The pass before this one ended there (the stream may already
            # have counted some of this pass's words).
            self._start_words = self.passes.end_values[-1]
        else:
            self._start_words = self.preprocessor.words_seen()

    def _update(self, logs, end=False):
        if end and self.passes is not None and self.passes.pass_ended:
            words = self.passes.end_values[-1] - self.passes.end_values[-2]
        else:
            words = self.preprocessor.words_seen() - self._start_words
        seconds = max(time.perf_counter() - self._start, 1e-9)
        if logs is not None:
            logs["words_per_sec"] = float(round(words / seconds))
        return words, seconds

    def on_train_batch_end(self, batch, logs=None):
        self._update(logs)

    def on_epoch_end(self, epoch, logs=None):
        words, seconds = self._update(logs, end=True)
        self.epoch_words.append(words)
        self.epoch_seconds.append(seconds)


class EpochsProgbar(keras.callbacks.ProgbarLogger):
    """Keras' progress bar, told the total number of epochs (`fit` runs one
    `Model.fit` call per epoch, so Keras alone would print "Epoch 3/3")."""

    def __init__(self, epochs):
        super().__init__()
        self.total_epochs = epochs
        # As Word2VecProgress: Keras may call the per-batch hook from its
        # worker threads while the next steps run (`overlap_batch_hooks`; a
        # bar that waits for every step costs much of word2vec's speed on
        # JAX). The lock and the step check keep the bar whole and moving
        # forward.
        self.async_safe = overlap_batch_hooks()
        self._lock = threading.Lock()
        self._shown = -1

    def set_params(self, params):
        super().set_params(dict(params, epochs=self.total_epochs))

    def on_epoch_begin(self, epoch, logs=None):
        with self._lock:
            self._shown = -1
            super().on_epoch_begin(epoch, logs)

    def on_train_batch_end(self, batch, logs=None):
        with self._lock:
            if batch <= self._shown:
                return  # a later step's update was already shown
            self._shown = batch
            super().on_train_batch_end(batch, logs)
