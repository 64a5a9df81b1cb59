import keras
import numpy as np
import pytest

from kzoo.callbacks import TimeBudget


def test_stops_after_the_budget_and_counts_steps():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = np.ones((8, 2)), np.ones((8, 1))
    budget = TimeBudget(seconds=0)
    history = model.fit(x, y, batch_size=2, epochs=50, verbose=0, callbacks=[budget])
    assert budget.steps == 1 and len(history.epoch) == 1
    generous = TimeBudget(seconds=3600)
    history = model.fit(x, y, batch_size=2, epochs=3, verbose=0, callbacks=[generous])
    assert generous.steps == 12 and len(history.epoch) == 3


def test_bad_budget():
    with pytest.raises(ValueError, match="seconds"):
        TimeBudget(seconds=-1)
