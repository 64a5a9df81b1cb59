"""Stop training after a wall-clock budget or an exact number of steps."""

import time

import keras


class TimeBudget(keras.callbacks.Callback):
    """Stops ``fit`` once ``seconds`` of training have passed, or after
    exactly ``steps`` batches, and records the loss curve on the way.

    The clock starts at the end of the first batch, so a backend's
    compilation of the training step (JAX's and TensorFlow's first call)
    does not eat the budget: it is kept apart in ``first_step_seconds``.
    The clock is checked at the end of every batch: a run overshoots the
    budget by at most one step. ``steps`` (when given) stops at the end of that many
    batches whatever the time: a rerun that replays the steps of a timed
    run trains exactly as far. One callback may be passed to several
    ``fit`` calls (one per epoch): the clock, the step count and the curve
    go on over all of them. Pass a large ``epochs`` and let the budget end
    the run; ``model.stop_training`` tells the caller that it did.

    Args:
        seconds: float or None. The training budget in seconds.
        steps: int or None. The number of batches to train (kept as
            ``max_steps``).
        max_points: int. The loss curve keeps at most about this many
            points: one per batch at first; past ``max_points``, every two
            neighbours are merged into one, and so on.

    Attributes:
        steps: batches trained so far; ``elapsed``: seconds since the first
            batch ended; ``first_step_seconds``: the first batch's seconds
            (its compilation included), None before it ends.
        curve: ``[seconds, step, loss]`` rows (steps counted from 1, the
            last batch always a row): ``loss`` is the mean loss of the
            batches since the row before, each batch's loss recovered from
            the running mean over the epoch that Keras logs (exact when
            the epoch's batches are of one size).

    Example:
    >>> budget = kzoo.callbacks.TimeBudget(steps=3)
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> history = model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2,
    ...                     epochs=100, verbose=0, callbacks=[budget])
    >>> budget.steps, len(history.epoch), [row[1] for row in budget.curve]
    (3, 1, [1, 2, 3])
    """

    def __init__(self, seconds=None, steps=None, max_points=200):
        super().__init__()
        if seconds is None and steps is None:
            raise ValueError("give `seconds` (a training budget) or `steps` "
                             "(the batches to train), or both.")
        if seconds is not None and (isinstance(seconds, bool)
                                    or not isinstance(seconds, (int, float))
                                    or not seconds >= 0):
            raise ValueError(f"`seconds` must be a number >= 0, got {seconds!r}.")
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int)
                                  or steps < 1):
            raise ValueError(f"`steps` must be an int >= 1, got {steps!r}.")
        if isinstance(max_points, bool) or not isinstance(max_points, int) \
                or max_points < 2:
            raise ValueError(f"`max_points` must be an int >= 2, got {max_points!r}.")
        self.seconds = seconds
        self.max_steps = steps
        self.max_points = max_points
        self.start = None
        self.first_step_seconds = None
        self.elapsed = 0.0
        self.steps = 0
        self._points = []  # [seconds, step, loss sum, batches]
        self._pending = None
        self._stride = 1
        self._epoch_batches = 0
        self._epoch_mean = 0.0

    @property
    def curve(self):
        rows = self._points + ([self._pending] if self._pending else [])
        return [[seconds, step, total / count] for seconds, step, total, count in rows]

    def done(self):
        """Whether the budget is spent: ``max_steps`` trained when given,
        else ``seconds`` passed."""
        if self.max_steps is not None:
            return self.steps >= self.max_steps
        return self.start is not None and self.elapsed >= self.seconds

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_batches, self._epoch_mean = 0, 0.0

    def on_train_batch_begin(self, batch, logs=None):
        if self.start is None:
            self.start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        now = time.perf_counter()
        if self.first_step_seconds is None:
            self.first_step_seconds = now - self.start
            self.start = now
        self.elapsed = now - self.start
        mean = (logs or {}).get("loss")
        if mean is not None:
            mean = float(mean)
            count = self._epoch_batches + 1
            loss = count * mean - self._epoch_batches * self._epoch_mean
            self._epoch_batches, self._epoch_mean = count, mean
            self._record(loss)
        if self.done():
            self.model.stop_training = True

    def _record(self, loss):
        seconds, step, total, count = self._pending or (0.0, 0, 0.0, 0)
        self._pending = [self.elapsed, self.steps, total + loss, count + 1]
        if self.steps % self._stride:
            return
        self._points.append(self._pending)
        self._pending = None
        if len(self._points) > self.max_points:
            self._stride *= 2
            merged, pending = [], None
            for seconds, step, total, count in self._points:
                pending = [seconds, step, total + (pending[2] if pending else 0.0),
                           count + (pending[3] if pending else 0)]
                if step % self._stride == 0:
                    merged.append(pending)
                    pending = None
            self._points, self._pending = merged, pending
