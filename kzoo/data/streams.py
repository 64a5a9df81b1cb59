"""Training batches drawn from token shards, for ``fit`` on every backend.

``ShardBatches`` is a ``keras.utils.PyDataset``: TensorFlow, JAX and
PyTorch ``fit`` read it without TensorFlow. Each batch is a function of
``(seed, epoch, batch index)`` alone (the examples' order, and every random
draw in making it: masks, next sentences), so

- a run resumed at batch ``k`` of an epoch sees exactly the batches an
  uninterrupted run saw from ``k`` on;
- process ``p`` of ``P`` (JAX processes, DDP ranks, tf.distribute workers)
  reads the epoch's batches ``p, p + P, p + 2P ...``: together the
  processes read the single-process stream, each batch once (its last
  ``len % P`` batches are dropped so that every process takes as many
  steps).

Batches are made ahead in background threads (numpy releases the GIL in
its inner loops) and handed to Keras in order.
"""

import concurrent.futures
import os

import keras
import numpy as np


def process_shard():
    """``(index, count)`` of this process among the processes training
    together: JAX's processes after ``jax.distributed.initialize``, the
    ranks of an initialized ``torch.distributed`` group, or the workers of
    ``TF_CONFIG`` (``tf.distribute.MultiWorkerMirroredStrategy``); ``(0,
    1)`` when alone. Only libraries already imported are asked."""
    import sys

    torch_distributed = sys.modules.get("torch.distributed")
    if torch_distributed is not None and torch_distributed.is_available() and (
            torch_distributed.is_initialized()):
        return torch_distributed.get_rank(), torch_distributed.get_world_size()
    jax = sys.modules.get("jax")
    if jax is not None and keras.config.backend() == "jax":
        count = jax.process_count()
        if count > 1:
            return jax.process_index(), count
    tf_config = os.environ.get("TF_CONFIG")
    if tf_config:
        import json

        config = json.loads(tf_config)
        workers = config.get("cluster", {}).get("worker", [])
        task = config.get("task", {})
        if len(workers) > 1 and task.get("type") in ("worker", "chief"):
            return int(task.get("index", 0)), len(workers)
    return 0, 1


def batch_generator(seed, epoch, batch):
    """The numpy generator of one batch: keyed by ``(seed, epoch, batch)``
    alone, so any process makes the same batch at any time."""
    key = np.random.SeedSequence([int(seed) % 2**32, int(epoch), int(batch)])
    return np.random.Generator(np.random.Philox(key))


class ShardBatches(keras.utils.PyDataset):
    """One epoch's batches of ``num_examples`` examples, made by
    ``make_batch(rows, generator)`` from the examples ``rows`` (indices)
    of a global batch.

    Args:
        num_examples: int. Examples in an epoch (e.g. token blocks).
        batch_size: int. Examples per batch (per process).
        epoch: int. Sets the order (with ``seed``).
        seed: int.
        start: int. The first batch (of this process's), to resume an epoch.
        shard: ``(index, count)`` or None (``process_shard()``).
        shuffle: bool. A new order every epoch (else corpus order).
        read_ahead: int. Batches made ahead in the background.
        threads: int. Background threads making them.
    """

    def __init__(self, num_examples, batch_size, epoch=0, seed=0, start=0,
                 shard=None, shuffle=True, read_ahead=8, threads=2):
        super().__init__(workers=1, use_multiprocessing=False)
        if batch_size < 1:
            raise ValueError(f"`batch_size` must be positive, got {batch_size}.")
        self.num_examples = int(num_examples)
        self.batch_size = int(batch_size)
        self.epoch = int(epoch)
        self.seed = int(seed)
        self.shard = tuple(shard) if shard is not None else process_shard()
        index, count = self.shard
        if not 0 <= index < count:
            raise ValueError(f"`shard` must be (index, count) with 0 <= index < "
                             f"count, got {self.shard}.")
        self.global_batches = self.num_examples // self.batch_size
        self.batches = self.global_batches // count
        if self.batches == 0:
            raise ValueError(
                f"{self.num_examples:,} examples make no batch of {self.batch_size}"
                + (f" for each of {count} processes" if count > 1 else "")
                + ": give more text or a smaller batch size.")
        self.start = int(start)
        if not 0 <= self.start <= self.batches:
            raise ValueError(f"`start` must be in [0, {self.batches}], got {start}.")
        self.shuffle = shuffle
        self.read_ahead = int(read_ahead)
        self.threads = int(threads)
        self._order = None
        self._pending = {}
        self._pool = None

    def order(self):
        """The epoch's example order (set by ``(seed, epoch)``)."""
        if self._order is None:
            dtype = np.int32 if self.num_examples < 2**31 else np.int64
            if self.shuffle:
                rng = np.random.default_rng([self.seed % 2**32, self.epoch])
                self._order = rng.permutation(self.num_examples).astype(dtype)
            else:
                self._order = np.arange(self.num_examples, dtype=dtype)
        return self._order

    def global_batch(self, index):
        """The global batch number of this process's batch ``index``
        (counted from ``start``)."""
        shard, count = self.shard
        return (self.start + index) * count + shard

    def rows(self, index):
        """The examples of this process's batch ``index``."""
        g = self.global_batch(index)
        return self.order()[g * self.batch_size:(g + 1) * self.batch_size]

    def make_batch(self, rows, generator):
        """The batch of the examples ``rows``: what ``fit`` takes."""
        raise NotImplementedError

    def _make(self, index):
        return self.make_batch(self.rows(index),
                               batch_generator(self.seed, self.epoch,
                                               self.global_batch(index)))

    def __len__(self):
        return self.batches - self.start

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"Batch {index} of {len(self)}.")
        future = self._pending.pop(index, None)
        if self.read_ahead > 0:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    self.threads, thread_name_prefix="kzoo-shards")
            for ahead in range(index + 1, min(index + 1 + self.read_ahead, len(self))):
                if ahead not in self._pending:
                    self._pending[ahead] = self._pool.submit(self._make, ahead)
        return future.result() if future is not None else self._make(index)

    def on_epoch_end(self):
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()

    def __del__(self):
        pool = self.__dict__.get("_pool")
        if pool is not None:
            try:
                pool.shutdown(wait=False, cancel_futures=True)
            except Exception:  # noqa: BLE001 (interpreter shutdown)
                pass
