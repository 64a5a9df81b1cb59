"""Stop training after a wall-clock budget."""

import time

import keras


class TimeBudget(keras.callbacks.Callback):
    """Stops ``fit`` once ``seconds`` of training have passed.

    Checked after every batch, so a run overshoots by at most one step.
    Useful for "train for N minutes" examples and benchmarks: pass a large
    ``epochs`` and let the budget end the run. ``steps`` counts the batches
    trained (over all epochs of the run).

    Args:
        seconds: float. The budget, counted from the start of ``fit``.

    Example:
    >>> budget = kzoo.callbacks.TimeBudget(seconds=0)
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> history = model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2,
    ...                     epochs=100, verbose=0, callbacks=[budget])
    >>> budget.steps, len(history.epoch)
    (1, 1)
    """

    def __init__(self, seconds):
        super().__init__()
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
                or seconds < 0:
            raise ValueError(f"`seconds` must be a number >= 0, got {seconds!r}.")
        self.seconds = seconds
        self.start = None
        self.steps = 0

    def on_train_begin(self, logs=None):
        self.start = time.time()
        self.steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        if time.time() - self.start > self.seconds:
            self.model.stop_training = True
