"""Raw examples → preprocessed batches for Keras, without TensorFlow.

The Python engine's counterpart of the ``tf.data`` pipeline a ``Task`` maps
its preprocessor over: a ``keras.utils.PyDataset`` that slices a batch of
raw examples (lists of strings, tuples of them for pairs, dicts, numpy
labels), runs the preprocessor's Python implementation on it and hands Keras
numpy arrays. Keras reads it on every backend, in order, in its own thread;
a background thread prepares the next batches meanwhile (Hugging Face
``tokenizers`` and numpy release the GIL in their inner loops). One thread,
batches in index order: a seeded random preprocessor (the MLM masker)
draws in the same order in every run.
"""

import concurrent.futures
import math

import keras
import numpy as np

from kzoo.preprocessing.engine import data_engine, engine_scope, tf
from kzoo.preprocessing.engine import engine as current_engine
from kzoo.preprocessing.preprocessing_layer import numpy_outputs


def num_examples(value):
    """The number of examples in one member of the raw data."""
    if isinstance(value, dict):
        value = next(iter(value.values()))
    if isinstance(value, tuple):
        value = value[0]
    return len(value)


def take(value, rows):
    """The examples ``rows`` (a numpy index array) of one member of the data,
    in the member's own form (list, tuple of segments, dict, numpy)."""
    if isinstance(value, dict):
        return {k: take(v, rows) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(take(v, rows) for v in value)
    if isinstance(value, np.ndarray):
        return value[rows]
    return [value[i] for i in rows]


def _as_model_input(value):
    # Boolean masks go in as int32, the backbones' declared input dtype.
    if isinstance(value, np.ndarray) and value.dtype == bool:
        return value.astype("int32")
    return value


class RawBatches(keras.utils.PyDataset):
    """Raw examples in a fixed order, in batches: what a ``Task`` preprocesses
    (``PreprocessedBatches``) when it is given them; the Python engine's
    form of a batched ``tf.data.Dataset`` of raw text.

    Args:
        data: the raw examples: ``x``, or a tuple ``(x, y[, sample_weight])``
            (each as ``PreprocessedBatches`` takes them).
        batch_size: int.
    """

    def __init__(self, data, batch_size):
        super().__init__()
        self.data = data if isinstance(data, tuple) else (data,)
        self.batch_size = int(batch_size)
        self.size = num_examples(self.data[0])

    def __len__(self):
        return math.ceil(self.size / self.batch_size)

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"Batch {index} of {len(self)}.")
        rows = np.arange(index * self.batch_size,
                         min((index + 1) * self.batch_size, self.size))
        batch = tuple(take(v, rows) for v in self.data)
        return batch if len(batch) > 1 else batch[0]


class PreprocessedBatches(keras.utils.PyDataset):
    """Batches of raw examples, preprocessed on the Python engine.

    Args:
        preprocessor: a kzoo ``Preprocessor`` (its ``python_call`` runs).
        x: the raw inputs: a list of str, a tuple of lists (text pairs), a
            dict of lists, or a list of word lists.
        y: optional labels (anything numpy reads, or lists of per-word
            labels).
        sample_weight: optional weights, as ``y``.
        batch_size: int.
        shuffle: bool. A new order of the examples at every epoch.
        drop_remainder: bool. Drop a last, partial batch (a distribution
            that splits batches over devices needs whole ones).
        prefetch: int. Batches prepared ahead in the background thread (0:
            each batch when Keras asks for it).
        seed: int or None. The shuffling seed; None draws one from numpy's
            global generator, which ``keras.utils.set_random_seed`` seeds.
        engine: ``"python"``, ``"tensorflow"`` or None: the preprocessing
            engine the batches run on (None: the engine of the calling
            thread when the object is made).
        read_next_epoch: bool. At an epoch's end, start preparing the next
            epoch's first batches (``fit``); False for data read once
            (``predict``, ``evaluate``), where they would go unused.
    """

    def __init__(self, preprocessor, x, y=None, sample_weight=None,
                 batch_size=32, shuffle=False, drop_remainder=False,
                 prefetch=4, seed=None, engine=None, read_next_epoch=True):
        # Keras' own worker threads are not used: its enqueuer can hand the
        # first epoch's batches out of order after Keras peeks at one.
        super().__init__(workers=1, use_multiprocessing=False)
        self.preprocessor = preprocessor
        self.data = tuple(_as_numpy(v) for v in (x, y, sample_weight) if v is not None)
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.drop_remainder = drop_remainder
        self.prefetch = int(prefetch)
        self.read_next_epoch = read_next_epoch
        self.size = num_examples(x)
        if seed is None and shuffle:
            seed = int(np.random.randint(2**31 - 1))
        self._rng = np.random.default_rng(seed)
        self._order = self._new_order()
        self._pending = {}  # batch index -> Future
        self._executor = None
        # The background thread runs the engine the caller's thread runs now.
        self._engine = engine or current_engine()

    def _new_order(self):
        if self.shuffle:
            return self._rng.permutation(self.size)
        return np.arange(self.size)

    def __len__(self):
        if self.drop_remainder:
            return self.size // self.batch_size
        return math.ceil(self.size / self.batch_size)

    def _batch(self, index):
        rows = self._order[index * self.batch_size:(index + 1) * self.batch_size]
        batch = tuple(take(v, rows) for v in self.data)
        with engine_scope(self._engine), numpy_outputs():
            outputs = self.preprocessor(*batch)
        return keras.tree.map_structure(_as_model_input, outputs)

    def _read_ahead(self, start):
        if self.prefetch <= 0 or start >= len(self):
            return
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="kzoo-batches")
        for index in range(start, min(start + self.prefetch, len(self))):
            if index not in self._pending:
                self._pending[index] = self._executor.submit(self._batch, index)

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"Batch {index} of {len(self)}.")
        future = self._pending.pop(index, None)
        if future is None:
            # Out of the expected order: what was read ahead is stale.
            self._drop_pending()
        self._read_ahead(index + 1)
        return future.result() if future is not None else self._batch(index)

    def _drop_pending(self):
        for future in self._pending.values():
            future.cancel()
        for future in self._pending.values():
            if not future.cancelled():
                concurrent.futures.wait([future])
        self._pending.clear()

    def on_epoch_end(self):
        self._drop_pending()
        self._order = self._new_order()
        if self.read_next_epoch:
            self._read_ahead(0)

    def __del__(self):
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


def _as_numpy(value):
    """Numeric lists and backend tensors as numpy; text stays as it is."""
    if isinstance(value, dict):
        return {k: _as_numpy(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_as_numpy(v) for v in value)
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, list):
        if value and isinstance(value[0], (str, bytes, list, tuple, np.ndarray)):
            return value  # text, words, or ragged rows (one label per word)
        return np.asarray(value)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return np.asarray(keras.ops.convert_to_numpy(value))
    return value


def shuffled_epoch(data, epoch, batch_size, seed=0):
    """``data`` (arrays, lists or a dict / tuple of them) in the order of
    ``epoch``, batched: a ``tf.data.Dataset`` (the TensorFlow preprocessing
    engine) or a ``RawBatches`` (the Python engine, as ``data_engine``
    chooses for data of this size); a task's ``fit`` takes either.

    Rows that are lists (sentences as word lists, and their per-word
    labels; endings) stay Python lists, batched in a ``RawBatches``.

    The order depends only on ``(seed, epoch)``, not on how many epochs ran
    before in this process, so a resumed run sees each epoch's batches
    exactly as an uninterrupted one would.

    Example:
    >>> ds = kzoo.preprocessing.batches.shuffled_epoch(np.arange(6), epoch=1, batch_size=3)
    >>> sorted(int(v) for batch in ds for v in np.asarray(batch))
    [0, 1, 2, 3, 4, 5]
    """
    if _nested(data):  # word lists, endings: ragged rows for the Python engine
        size = num_examples(data[0] if isinstance(data, tuple) else data)
        order = np.random.default_rng([seed, epoch]).permutation(size)
        members = data if isinstance(data, tuple) else (data,)
        return RawBatches(tuple(take(v, order) for v in members), batch_size)
    arrays = _arrays(data)
    size = len(keras.tree.flatten(arrays)[0])
    order = np.random.default_rng([seed, epoch]).permutation(size)
    taken = keras.tree.map_structure(lambda v: v[order], arrays)
    if data_engine(size) == "python":
        return RawBatches(keras.tree.map_structure(_as_list, taken), batch_size)
    return tf.data.Dataset.from_tensor_slices(taken).batch(batch_size)


def _nested(data):
    """Whether a member of ``data`` is a list of lists (rows of words, of
    endings): those go as Python lists, in ``RawBatches``."""
    if isinstance(data, dict):
        return any(_nested(v) for v in data.values())
    if isinstance(data, tuple):
        return any(_nested(v) for v in data)
    return isinstance(data, list) and bool(data) and isinstance(data[0], (list, tuple))


def _as_list(array):
    return array.tolist() if array.dtype.kind in "USO" else array


def _arrays(data):
    """Tuples and dicts are structure; anything else (a list of texts) is data."""
    if isinstance(data, dict):
        return {key: _arrays(value) for key, value in data.items()}
    if isinstance(data, tuple):
        return tuple(_arrays(value) for value in data)
    return np.asarray(data)
