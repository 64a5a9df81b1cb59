"""``fit`` that checkpoints every epoch and continues a killed run."""

import importlib.util
import os

import keras

from kzoo.callbacks import EpochCheckpoint, TrainingCurves


def resumable_fit(model, epochs, run_dir, data_for_epoch=None, data=None,
                  title=None, batches_for_epoch=None, checkpoint_every=None,
                  **fit_kwargs):
    """Trains ``model`` to ``epochs`` epochs, resuming from ``run_dir``.

    ``run_dir`` gets ``checkpoint/`` (``kzoo.callbacks.EpochCheckpoint``,
    written after every epoch), ``curves.png`` (``TrainingCurves``, when
    matplotlib is installed) and ``tensorboard/``
    (``keras.callbacks.TensorBoard``, when tensorboard is installed). When ``checkpoint/``
    exists, the model (built and compiled as before) gets its weights,
    optimizer and random states back and training goes on from the next
    epoch: the same command, run again after a kill, finishes the run.

    Args:
        model: a compiled ``keras.Model``.
        epochs: int. Epochs in all (finished ones included).
        run_dir: str. The run's folder.
        data_for_epoch: callable ``epoch -> data`` for ``fit``, one call per
            epoch (``shuffled_epoch`` gives a resumable order).
        data: or one dataset for all epochs (a corpus read in order, e.g.
            word2vec's stream): one ``fit`` call from the resumed epoch.
        batches_for_epoch: or a callable ``(epoch, start) -> data`` giving
            an epoch's batches from batch ``start`` on (a
            ``kzoo.data.ShardBatches``): a run killed mid-epoch resumes at
            the batch after its last checkpoint.
        checkpoint_every: int or None. With ``batches_for_epoch``, also
            checkpoint every this many batches.
        title: str or None. The curves' title.
        **fit_kwargs: for ``model.fit`` (``validation_data``, ``verbose``,
            ``callbacks`` run after the checkpoint and the curves). A
            callback that stops training (``keras.callbacks.EarlyStopping``)
            ends the run, not just its epoch.

    Returns:
        The history of all epochs (a dict, as ``History.history``).
    """
    if sum(x is not None for x in (data_for_epoch, data, batches_for_epoch)) != 1:
        raise ValueError("pass exactly one of `data_for_epoch`, `data` and "
                         "`batches_for_epoch`.")
    checkpoint_dir = os.path.join(run_dir, "checkpoint")
    state = EpochCheckpoint.restore(model, checkpoint_dir)
    start, start_batch = state["epoch"], state["batch"]
    if start or start_batch:
        done = f" and {start_batch:,} batches" if start_batch else ""
        print(f"resuming from {checkpoint_dir}: {start} of {epochs} epochs{done} "
              "done", flush=True)
    checkpoint = EpochCheckpoint(
        checkpoint_dir, history=state["history"], restored=state,
        every_batches=checkpoint_every if batches_for_epoch is not None else None)
    callbacks = ([checkpoint] + _optional_callbacks(run_dir, state["history"], title)
                 + list(fit_kwargs.pop("callbacks", None) or ()) + [_RunProgbar(epochs)])
    if data is not None:
        if start < epochs:
            model.fit(data, epochs=epochs, initial_epoch=start,
                      callbacks=callbacks, **fit_kwargs)
    elif batches_for_epoch is not None:
        for epoch in range(start, epochs):
            first = start_batch if epoch == start else 0
            checkpoint.batch_offset = first
            batches = batches_for_epoch(epoch, first)
            if len(batches) == 0:  # killed after its last batch's checkpoint
                checkpoint.save(epoch + 1)
                continue
            model.fit(batches, epochs=epoch + 1,
                      initial_epoch=epoch, callbacks=callbacks, shuffle=False,
                      **fit_kwargs)
            if model.stop_training:
                break
    else:
        for epoch in range(start, epochs):
            model.fit(data_for_epoch(epoch), epochs=epoch + 1, initial_epoch=epoch,
                      callbacks=callbacks, shuffle=False, **fit_kwargs)
            if model.stop_training:  # a callback's stop (EarlyStopping) ends the run
                break
    return checkpoint.history


class _RunProgbar(keras.callbacks.ProgbarLogger):
    """Keras' progress bar, counting the run's epochs: one ``fit`` call per
    epoch would print "Epoch 2/2, Epoch 3/3" for a 3-epoch run."""

    def __init__(self, epochs):
        super().__init__()
        self.run_epochs = epochs

    def set_params(self, params):
        super().set_params(params)
        self.epochs = self.run_epochs


def _optional_callbacks(run_dir, history, title):
    """Curves (matplotlib) and TensorBoard logs (tensorboard), each skipped
    with a message when its package is not installed."""
    callbacks, missing = [], []
    if importlib.util.find_spec("matplotlib"):
        callbacks.append(TrainingCurves(os.path.join(run_dir, "curves.png"),
                                        history=history, title=title))
    else:
        missing.append("curves.png (pip install matplotlib)")
    if importlib.util.find_spec("tensorboard"):
        callbacks.append(keras.callbacks.TensorBoard(
            os.path.join(run_dir, "tensorboard"), write_graph=False))
    else:
        missing.append("TensorBoard logs (pip install tensorboard)")
    if missing:
        print(f"skipped: {'; '.join(missing)}", flush=True)
    return callbacks
