"""The whole training state at every epoch's end, to resume a killed run."""

import json
import os

import keras
import numpy as np

from kzoo.presets.atomic_files import atomic_file, temporary_sibling

STATE = "state.json"


def _seed_states(model):
    """The state variables of every ``keras.random.SeedGenerator`` in the
    model (dropout and other random layers): ``save_weights`` leaves them
    out, and a resumed run must draw what the uninterrupted run drew."""
    return [g.state for layer in model._flatten_layers()
            for g in getattr(layer, "_seed_generators", ())]


def _backend_rng_state():
    """Torch's global generator, as arrays to save: Keras' torch dropout
    draws from it when the layer has no seed of its own (its fast path), so
    the seed states alone do not say what the next epoch draws."""
    if keras.config.backend() != "torch":
        return {}
    import torch

    return {"torch_rng": torch.random.get_rng_state().numpy()}


def _set_backend_rng_state(saved):
    if keras.config.backend() == "torch" and "torch_rng" in saved:
        import torch

        torch.random.set_rng_state(torch.from_numpy(saved["torch_rng"]))


def _files_named_by(state_path):
    """The files the checkpoint at ``state_path`` names (none if unreadable)."""
    try:
        with open(state_path, encoding="utf-8") as f:
            state = json.load(f)
        return {state.get("weights"), state.get("seeds")}
    except (OSError, ValueError, AttributeError):
        return set()


class EpochCheckpoint(keras.callbacks.Callback):
    """Saves weights, optimizer, random states and history after each epoch.

    Like ``keras.callbacks.BackupAndRestore``, with three differences that
    make a killed run continue exactly: the random layers' seed states are
    saved too, and torch's global generator (so dropout draws on as if never
    stopped); the epoch's files
    are written under new names and ``state.json``, which names them, is
    replaced last by an atomic rename, so a kill or Ctrl-C at any moment
    leaves the previous checkpoint whole; and the caller may store its own
    data position (``extra``) beside it. ``restore`` puts a checkpoint back
    into a built, compiled model and returns where to start.

    Args:
        directory: str. Where the checkpoint lives (created if needed).
        history: dict or None. Curves of the epochs before this ``fit``
            (from ``restore``): the saved history continues them.
        extra: callable or None. Returns a JSON-able dict saved with each
            checkpoint (e.g. a data position); ``restore`` gives it back.
        restored: dict or None. What ``restore`` returned: its backend
            generator state is set again when training begins (torch's first
            ``fit`` draws from it while it builds, before the first batch).
        every_batches: int or None. Also save every this many batches of
            an epoch (the state then records the batches done, for data
            that can start mid-epoch); None: at epochs' ends only.

    Example:
    >>> import tempfile
    >>> directory = tempfile.mkdtemp()
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, verbose=0,
    ...               callbacks=[kzoo.callbacks.EpochCheckpoint(directory)])
    >>> state = kzoo.callbacks.EpochCheckpoint.restore(model, directory)
    >>> state["epoch"], len(state["history"]["loss"])
    (2, 2)
    """

    def __init__(self, directory, history=None, extra=None, restored=None,
                 every_batches=None):
        super().__init__()
        self.directory = directory
        self.history = {k: list(v) for k, v in (history or {}).items()}
        self.extra = extra
        self._backend_rng = (restored or {}).get("backend_rng")
        if every_batches is not None and every_batches < 1:
            raise ValueError(f"`every_batches` must be positive, got {every_batches}.")
        self.every_batches = every_batches
        #: batches of the current epoch done before this ``fit`` (a resumed
        #: epoch's first batch)
        self.batch_offset = 0
        self._epoch = 0

    def on_train_begin(self, logs=None):
        if self._backend_rng:
            _set_backend_rng_state(self._backend_rng)
            self._backend_rng = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        done = self.batch_offset + batch + 1
        if self.every_batches and done % self.every_batches == 0:
            self.save(self._epoch, batch=done)

    def on_epoch_end(self, epoch, logs=None):
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(float(value))
        self.batch_offset = 0
        self.save(epoch + 1)

    def save(self, epoch, batch=0):
        """Writes the checkpoint of ``epoch`` finished epochs (and ``batch``
        batches of the next one). On an error (a full disk) the previous
        checkpoint stays whole and loadable and this save leaves no file
        behind."""
        os.makedirs(self.directory, exist_ok=True)
        name = f"epoch-{epoch}" + (f"-batch-{batch}" if batch else "")
        weights = os.path.join(self.directory, f"{name}.weights.h5")
        seeds = os.path.join(self.directory, f"{name}.seeds.npz")
        path = os.path.join(self.directory, STATE)
        kept = _files_named_by(path)
        try:
            tmp = temporary_sibling(weights, suffix=".weights.h5")
            try:
                self.model.save_weights(tmp)
                os.replace(tmp, weights)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
            with atomic_file(seeds, "wb") as f:
                np.savez(f, *[keras.ops.convert_to_numpy(v.value)
                              for v in _seed_states(self.model)],
                         **_backend_rng_state())
            state = {"epoch": epoch, "batch": batch,
                     "weights": os.path.basename(weights),
                     "seeds": os.path.basename(seeds), "history": self.history,
                     "extra": self.extra() if self.extra else {}}
            with atomic_file(path, "w", encoding="utf-8") as f:
                f.write(json.dumps(state))
        except BaseException:
            for new in (weights, seeds):  # not named by the kept state.json
                if os.path.basename(new) not in kept and os.path.exists(new):
                    os.remove(new)
            raise
        for old in os.listdir(self.directory):  # earlier epochs' files
            if old.startswith("epoch-") and not old.startswith(name + "."):
                os.remove(os.path.join(self.directory, old))

    @staticmethod
    def restore(model, directory):
        """Loads the last checkpoint in ``directory`` into ``model`` (built
        and compiled as for the saved run). Returns ``{"epoch": finished
        epochs, "history": ..., "extra": ...}``; epoch 0 and nothing loaded
        when there is no checkpoint; ``backend_rng``: torch's generator
        state, which the ``EpochCheckpoint`` that goes on (``restored=``)
        sets when training begins (``fit`` draws from it while it builds)."""
        path = os.path.join(directory, STATE)
        if not os.path.exists(path):
            return {"epoch": 0, "batch": 0, "history": {}, "extra": {},
                    "backend_rng": {}}
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
        if model.optimizer is not None and not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        model.load_weights(os.path.join(directory, state["weights"]))
        with np.load(os.path.join(directory, state["seeds"])) as saved:
            backend_rng = {k: saved[k] for k in saved.files if not k.startswith("arr_")}
            values = [saved[f"arr_{i}"] for i in range(len(saved.files) - len(backend_rng))]
        variables = _seed_states(model)
        if len(values) != len(variables):
            raise ValueError(
                f"The checkpoint in {directory} has {len(values)} random-layer "
                f"states but the model has {len(variables)}: it was saved by "
                "another model. Delete the folder to start over.")
        for variable, value in zip(variables, values):
            variable.assign(value)
        state["backend_rng"] = backend_rng  # set by EpochCheckpoint(restored=)
        state.setdefault("batch", 0)
        return state
