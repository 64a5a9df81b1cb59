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


def test_curve_is_thinned_and_keeps_the_last_step():
    model = _model()
    x = np.random.default_rng(0).normal(size=(64, 2))
    budget = TimeBudget(steps=50, max_points=8)
    model.fit(x, x[:, :1], batch_size=1, epochs=5, verbose=0, callbacks=[budget])
    steps = [row[1] for row in budget.curve]
    assert len(steps) <= 9 and steps[0] == 1 and steps[-1] == 50
    assert steps == sorted(steps)
    stride = steps[1] - steps[0]
    assert all(b - a == stride for a, b in zip(steps[:-2], steps[1:-1]))
    seconds = [row[0] for row in budget.curve]
    assert seconds == sorted(seconds)
    assert all(np.isfinite(row[2]) for row in budget.curve)


@pytest.mark.parametrize("kwargs, message", [
    ({}, "seconds"), ({"seconds": -1}, "seconds"), ({"steps": 0}, "steps"),
    ({"steps": 2.5}, "steps"), ({"seconds": 1, "max_points": 1}, "max_points")])
def test_bad_budget(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TimeBudget(**kwargs)
