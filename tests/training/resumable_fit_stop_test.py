"""A callback that stops training ends the whole run, whichever way the
epochs are fed, as it ends a plain ``fit``."""

import keras
import numpy as np
import pytest

from kzoo.training import resumable_fit

pytestmark = pytest.mark.without_tensorflow


class StopAfterEpoch(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.stop_epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.stop_epoch:
            self.model.stop_training = True


def _model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3)).astype("float32")
    return x, x.sum(axis=1, keepdims=True)


class Batches(keras.utils.PyDataset):
    """An epoch's batches from ``start`` on, as ``batches_for_epoch`` gives."""

    def __init__(self, start):
        super().__init__()
        self.count = 4 - start

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        return _data()


@pytest.mark.parametrize("feed", ["data", "data_for_epoch", "batches_for_epoch"])
def test_a_stop_requested_by_a_callback_ends_the_run(tmp_path, feed):
    x, y = _data()
    kwargs = {"data": (x, y) if feed == "data" else None,
              "data_for_epoch": ((lambda epoch: Batches(0))
                                 if feed == "data_for_epoch" else None),
              "batches_for_epoch": ((lambda epoch, start: Batches(start))
                                    if feed == "batches_for_epoch" else None)}
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    if feed == "data":
        x, y = kwargs.pop("data")
        kwargs["data"] = x
        kwargs["y"] = y
    history = resumable_fit(_model(), 6, str(tmp_path / "run"), verbose=0,
                            callbacks=[StopAfterEpoch(1)], **kwargs)
    assert len(history["loss"]) == 2
