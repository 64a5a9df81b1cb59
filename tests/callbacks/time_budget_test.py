import keras
import numpy as np
import pytest

from kzoo.callbacks import TimeBudget


def _model():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def test_stops_after_the_budget_and_counts_steps():
    model = _model()
    x, y = np.ones((8, 2)), np.ones((8, 1))
    budget = TimeBudget(seconds=0)
    history = model.fit(x, y, batch_size=2, epochs=50, verbose=0, callbacks=[budget])
    assert budget.steps == 1 and len(history.epoch) == 1
    assert model.stop_training
    generous = TimeBudget(seconds=3600)
    history = model.fit(x, y, batch_size=2, epochs=3, verbose=0, callbacks=[generous])
    assert generous.steps == 12 and len(history.epoch) == 3
    assert not model.stop_training


def test_stops_after_exact_steps_mid_epoch():
    # 4 batches an epoch; 6 steps stop in the middle of the second epoch, on
    # every backend's epoch loop.
    model = _model()
    x, y = np.ones((8, 2)), np.ones((8, 1))
    budget = TimeBudget(steps=6)
    history = model.fit(x, y, batch_size=2, epochs=50, verbose=0, callbacks=[budget])
    assert budget.steps == 6 and len(history.epoch) == 2
    assert model.optimizer.iterations.numpy() == 6


def test_goes_on_over_several_fit_calls():
    model = _model()
    x, y = np.ones((8, 2)), np.ones((8, 1))
    budget = TimeBudget(steps=6)
    epochs = 0
    for epoch in range(10):
        model.fit(x, y, batch_size=2, epochs=epoch + 1, initial_epoch=epoch, verbose=0,
                  callbacks=[budget])
        epochs += 1
        if model.stop_training:
            break
    assert budget.steps == 6 and epochs == 2
    assert [row[1] for row in budget.curve] == [1, 2, 3, 4, 5, 6]
    assert budget.elapsed >= budget.curve[0][0] >= 0


def _constant_model():
    # Nothing learns (rate 0, zero weights): batch i's loss is mean(y_i ** 2).
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(
        1, kernel_initializer="zeros", bias_initializer="zeros")])
    model.compile(keras.optimizers.SGD(0.0), "mse")
    return model


@pytest.mark.parametrize("max_points, steps", [(200, 12), (8, 50), (5, 23)])
def test_curve_holds_the_mean_loss_of_its_batches(max_points, steps):
    y = np.arange(1.0, 11.0).reshape(10, 1)  # 10 batches of one an epoch
    batch_losses = np.tile(y[:, 0] ** 2, 10)[:steps]
    budget = TimeBudget(steps=steps, max_points=max_points)
    _constant_model().fit(np.zeros((10, 1)), y, batch_size=1, epochs=10, shuffle=False,
                          verbose=0, callbacks=[budget])
    curve = budget.curve
    ends = [row[1] for row in curve]
    assert ends[-1] == steps and ends == sorted(ends) and len(curve) <= max_points + 1
    starts = [0] + ends[:-1]
    expected = [batch_losses[a:b].mean() for a, b in zip(starts, ends)]
    np.testing.assert_allclose([row[2] for row in curve], expected, rtol=1e-5)
    if steps <= max_points:
        assert ends == list(range(1, steps + 1))
    else:
        stride = ends[1] - ends[0]
        assert stride > 1 and all(b - a == stride for a, b in zip(ends[:-2], ends[1:-1]))
    seconds = [row[0] for row in curve]
    assert seconds == sorted(seconds) and seconds[-1] == budget.elapsed


@pytest.mark.parametrize("kwargs, message", [
    ({}, "seconds"), ({"seconds": -1}, "seconds"), ({"steps": 0}, "steps"),
    ({"steps": 2.5}, "steps"), ({"seconds": 1, "max_points": 1}, "max_points")])
def test_bad_budget(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TimeBudget(**kwargs)


class SlowFirstBatch(keras.callbacks.Callback):
    """The first batch takes ``seconds`` longer, as a compiling step does."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds, self.calls = seconds, 0

    def on_train_batch_end(self, batch, logs=None):
        self.calls += 1
        if self.calls == 1:
            import time

            time.sleep(self.seconds)


def test_the_first_step_is_timed_apart_from_the_budget():
    model = _model()
    x, y = np.ones((8, 2)), np.ones((8, 1))
    budget = TimeBudget(seconds=0.5)
    # The slow callback runs first, so its sleep falls inside the first batch.
    model.fit(x, y, batch_size=2, epochs=10_000, verbose=0,
              callbacks=[SlowFirstBatch(1.0), budget])
    assert budget.first_step_seconds >= 1.0
    assert budget.steps > 1, "the first step's second ate the 0.5 s budget"
    assert 0.5 <= budget.elapsed < 0.5 + budget.first_step_seconds
