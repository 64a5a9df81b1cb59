"""Data-parallel training on PyTorch: ``DistributedDataParallel`` over a task.

Keras 3.15 has no ``keras.distribution`` on PyTorch, so this follows Keras'
guide to multi-GPU training with PyTorch: the kzoo task (a Keras model is a
``torch.nn.Module`` on this backend) is wrapped in
``torch.nn.parallel.DistributedDataParallel``, each process reads its share
of the preprocessed data through a ``DistributedSampler``, and a PyTorch
optimizer steps on gradients that DDP has averaged over the processes.

Launch one process per device with ``torchrun``::

    KERAS_BACKEND=torch torchrun --nproc_per_node=2 train.py

and in ``train.py``::

    rank, world_size, device = kzoo.distribution.torch_ddp.init_process_group()
    model = kzoo.BertClassifier.from_preset("minilm_l6_en_uncased", num_classes=2)
    losses = kzoo.distribution.torch_ddp.fit(model, texts, labels, batch_size=32)
    if rank == 0:
        model.save_to_preset("out")

Run without ``torchrun`` (no process group), ``fit`` trains in one process
on the whole batch: the same numbers, which is how the tests check it.
"""

import os

import keras
import numpy as np


def _require_torch(what):
    if keras.config.backend() != "torch":
        raise RuntimeError(
            f"{what} trains with torch.distributed, which needs "
            f"KERAS_BACKEND=torch; the backend is {keras.config.backend()}. "
            "On JAX use kzoo.distribution.data_parallel(); on TensorFlow "
            "kzoo.distribution.mirrored_strategy()."
        )


def init_process_group(backend=None):
    """Joins the process group that ``torchrun`` set up.

    Reads ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` (as
    torchrun sets them) and uses ``nccl`` when CUDA is available, else
    ``gloo`` (CPU processes, e.g. over 127.0.0.1).

    Args:
        backend: str or None. The ``torch.distributed`` backend.

    Returns:
        ``(rank, world_size, device)``; ``device`` is this process's CUDA
        device (``LOCAL_RANK``), or the CPU.
    """
    _require_torch("kzoo.distribution.torch_ddp.init_process_group()")
    import torch

    missing = [name for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
               if name not in os.environ]
    if missing:
        raise RuntimeError(
            f"The environment lacks {missing}: launch with torchrun "
            "(`torchrun --nproc_per_node=N script.py`), or set RANK, WORLD_SIZE, "
            "MASTER_ADDR and MASTER_PORT for each process."
        )
    cuda = torch.cuda.is_available()
    backend = backend or ("nccl" if cuda else "gloo")
    torch.distributed.init_process_group(backend=backend, init_method="env://")
    if cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    return torch.distributed.get_rank(), torch.distributed.get_world_size(), device


def _to_numpy(tree):
    return keras.tree.map_structure(lambda t: np.array(t, copy=True), tree)


def preprocess(task, x, y=None, sample_weight=None):
    """The task's preprocessor over the whole data, as numpy arrays.

    Returns:
        ``(x, y, sample_weight)``, each a structure of arrays or None.
    """
    if getattr(task, "preprocessor", None) is None or not task._needs_preprocessing(x):
        return x, y, sample_weight
    count = len(x[0]) if isinstance(x, tuple) else len(x)
    dataset = task._preprocess_dataset(x, y, sample_weight, batch_size=count,
                                       passes=1)
    if isinstance(dataset, keras.utils.PyDataset):  # the Python engine's
        batch = dataset[0]
    else:
        batch = next(iter(dataset.as_numpy_iterator()))
    return keras.utils.unpack_x_y_sample_weight(_to_numpy(batch))


class _Examples:
    """A map-style dataset over a structure of equally long arrays."""

    def __init__(self, data):
        self.data = data
        self.length = len(keras.tree.flatten(data)[0])

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        return keras.tree.map_structure(lambda a: a[index], self.data)


def fit(task, x, y=None, sample_weight=None, batch_size=32, epochs=1,
        optimizer=None, learning_rate=1e-3, shuffle=True, seed=0, steps=None,
        verbose=True):
    """Trains ``task`` data-parallel over the processes of the process group.

    Each of the ``world_size`` processes takes ``batch_size / world_size``
    examples of every global batch (a ``DistributedSampler``, the same
    order in every process), computes the task's compiled loss on them, and
    DDP averages the gradients, so the update equals one process on the
    whole batch (for losses that are means over examples).

    Args:
        task: a kzoo task (or any compiled Keras model) on the torch backend.
        x, y, sample_weight: the training data, raw (the task's
            preprocessor runs once, over all of it) or preprocessed.
        batch_size: int. The global batch size; ``world_size`` divides it.
        epochs: int.
        optimizer: a ``torch.optim.Optimizer`` over ``task.parameters()``,
            or None for ``torch.optim.Adam(lr=learning_rate)``.
        learning_rate: float. For the default optimizer.
        shuffle: bool. Shuffle each epoch (the same permutation everywhere,
            from ``seed`` and the epoch).
        seed: int.
        steps: int or None. Stop after this many steps.
        verbose: bool. Rank 0 prints each epoch's mean loss.

    Returns:
        The list of each epoch's mean loss over this process's batches.
    """
    _require_torch("kzoo.distribution.torch_ddp.fit()")
    import torch
    from torch.utils.data import DataLoader, DistributedSampler

    distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
    rank = torch.distributed.get_rank() if distributed else 0
    world_size = torch.distributed.get_world_size() if distributed else 1
    if batch_size % world_size:
        raise ValueError(
            f"The global batch size {batch_size} cannot be split evenly over "
            f"{world_size} processes: use a multiple of {world_size}."
        )
    if not getattr(task, "compiled", False):
        raise ValueError("Compile the model first (model.compile(loss=...)): "
                         "fit() trains on its compiled loss.")
    x, y, sample_weight = preprocess(task, x, y, sample_weight)
    examples = _Examples(tuple(v for v in (x, y, sample_weight) if v is not None))
    has_y, has_weight = y is not None, sample_weight is not None
    sampler = DistributedSampler(examples, num_replicas=world_size, rank=rank,
                                 shuffle=shuffle, seed=seed, drop_last=True)
    loader = DataLoader(examples, sampler=sampler,
                        batch_size=batch_size // world_size, drop_last=True)
    if len(loader) == 0:
        raise ValueError(
            f"{len(examples)} examples make no full global batch of {batch_size}."
        )

    module = task
    if distributed:
        device_ids = None
        parameter = next(iter(task.parameters()))
        if parameter.is_cuda:
            device_ids = [parameter.device.index]
        module = torch.nn.parallel.DistributedDataParallel(task, device_ids=device_ids)
    if optimizer is None:
        optimizer = torch.optim.Adam(task.parameters(), lr=learning_rate)

    epoch_losses = []
    step = 0
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        total, count = 0.0, 0
        for batch in loader:
            batch_x = batch[0]
            batch_y = batch[1] if has_y else None
            batch_weight = batch[2 if has_y else 1] if has_weight else None
            optimizer.zero_grad()
            y_pred = module(batch_x)
            loss = task.compute_loss(x=batch_x, y=batch_y, y_pred=y_pred,
                                     sample_weight=batch_weight)
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
            count += 1
            step += 1
            if steps is not None and step >= steps:
                break
        epoch_losses.append(total / count)
        if verbose and rank == 0:
            print(f"epoch {epoch + 1}/{epochs}: loss {epoch_losses[-1]:.4f} "
                  f"({count} steps x {world_size} processes)", flush=True)
        if steps is not None and step >= steps:
            break
    return epoch_losses
