"""BERT's masked language model masking."""

import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.preprocessing import preprocessing_layer
from kzoo.preprocessing.preprocessing_layer import RandomPreprocessingLayer
from kzoo.preprocessing.preprocessing_layer import check_type


def _check_rate(name, value):
    check_type(name, value, (int, float), "a float in [0, 1]")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"`{name}` must be in [0, 1], got {value}.")


def _python_rows(inputs, input_dtype):
    """Python-engine token ids → (rows, rank, dense): the rows as 1-D
    integer arrays of one dtype, the input's rank, and the ``[batch, length]``
    array when the input is dense (None when ragged). Numbers become
    ``input_dtype`` at the outermost call (as TensorFlow's conversion does)
    and keep their dtype in a nested one."""
    nested = preprocessing_layer._depth() > 1
    if isinstance(inputs, (list, tuple)) and not inputs:
        inputs = np.zeros([0], input_dtype)
    if isinstance(inputs, (list, tuple)):
        rows = [r if isinstance(r, np.ndarray) else np.asarray(r)
                for r in inputs]
        if any(r.ndim != 1 for r in rows):
            raise ValueError(
                "`inputs` must be a 1-D sequence or a batch `[batch, length]` "
                f"of token ids, got rank {1 + max(r.ndim for r in rows)}.")
        kinds = {r.dtype.kind for r in rows if r.size}
        if not kinds <= {"i", "u"}:
            dtype = next(r.dtype for r in rows if r.dtype.kind not in "iu")
            raise TypeError(
                f"`inputs` must be integer token ids, got {dtype.name}.")
        dtype = next((r.dtype for r in rows if r.size), None)
        if not nested or dtype is None:
            dtype = np.dtype(input_dtype)
        return [r.astype(dtype, copy=False) for r in rows], 2, None
    array = inputs if isinstance(inputs, np.ndarray) else np.asarray(inputs)
    if array.dtype.kind in "USO":
        raise TypeError("`inputs` must be integer token ids, got string.")
    if array.ndim not in (1, 2):
        raise ValueError(
            "`inputs` must be a 1-D sequence or a batch `[batch, length]` "
            f"of token ids, got rank {array.ndim}.")
    if array.dtype.kind not in "iu":
        if array.size or array.dtype.kind != "f":
            raise TypeError(
                f"`inputs` must be integer token ids, got {array.dtype.name}.")
        array = array.astype(input_dtype)
    if not nested:
        array = array.astype(input_dtype, copy=False)
    batched = array[None] if array.ndim == 1 else array
    return list(batched), array.ndim, batched


@kzoo_export("kzoo.preprocessing.MaskedLMMaskGenerator")
class MaskedLMMaskGenerator(RandomPreprocessingLayer):
    """Selects tokens for a masked language model and corrupts them (BERT).

    For each sequence, `n = floor(mask_selection_rate * k + u)` of its `k`
    selectable tokens are chosen uniformly at random, where `u ~ U[0, 1)`
    (stochastic rounding: the expected count is exactly
    `mask_selection_rate * k`), at most `mask_selection_length`. Tokens whose
    id is in `unselectable_token_ids` (special tokens, padding) are never
    chosen. Each chosen token becomes `mask_token_id` with probability
    `mask_token_rate`, a uniformly random id in `[0, vocabulary_size)` with
    probability `random_token_rate`, and stays unchanged otherwise.

    Args:
        vocabulary_size: int. Random replacements are drawn from
            `[0, vocabulary_size)`.
        mask_token_id: int. The id of the mask token (BERT's `[MASK]`).
        mask_selection_rate: float. Fraction of the selectable tokens chosen.
            Defaults to 0.15.
        mask_selection_length: int or None. The most tokens chosen in one
            sequence, and the width of the `mask_*` outputs. None (the
            default) uses the largest count in the batch.
        unselectable_token_ids: tuple of ints. Ids never chosen. Defaults to
            `(0,)`, the padding id.
        mask_token_rate: float. Probability that a chosen token becomes
            `mask_token_id`. Defaults to 0.8.
        random_token_rate: float. Probability that a chosen token becomes a
            random id. Defaults to 0.1. `mask_token_rate + random_token_rate`
            must be at most 1.
        seed: int or None. Seed of the layer's random stream.

    Call arguments:
        inputs: token ids, ragged `[batch, None]`, dense `[batch, length]`
            (padding must be an unselectable id) or one 1-D sequence.

    Returns:
        A dict with `token_ids` (the corrupted ids, in the input's structure
        and dtype), `mask_positions` (int32 `[batch, S]`, the chosen positions
        in ascending order, padded with 0), `mask_ids` (the original ids at
        those positions, padded with 0) and `mask_weights` (float32, 1.0 for
        a real position and 0.0 for padding). Unbatched input gives `[S]`.

    The TensorFlow implementation draws from the layer's
    `tf.random.Generator`; the Python one (numpy, vectorized over the
    batch, see `kzoo.preprocessing.engine`) applies the same rules with
    draws from `python_generator`: the same distributions, not the same
    draws.

    Example:
    >>> masker = kzoo.preprocessing.MaskedLMMaskGenerator(
    ...     vocabulary_size=10, mask_token_id=9, mask_selection_rate=1.0,
    ...     mask_token_rate=1.0, random_token_rate=0.0,
    ...     unselectable_token_ids=(0, 1, 2), seed=42)
    >>> out = masker([[1, 5, 6, 2, 0], [1, 7, 2, 0, 0]])
    >>> ops.convert_to_numpy(out["token_ids"]).tolist()
    [[1, 9, 9, 2, 0], [1, 9, 2, 0, 0]]
    >>> ops.convert_to_numpy(out["mask_positions"]).tolist()
    [[1, 2], [1, 0]]
    >>> ops.convert_to_numpy(out["mask_ids"]).tolist()
    [[5, 6], [7, 0]]
    >>> ops.convert_to_numpy(out["mask_weights"]).tolist()
    [[1.0, 1.0], [1.0, 0.0]]

    Reference:
        - [Devlin et al., 2018](https://arxiv.org/abs/1810.04805), section 3.1.
    """

    input_dtype = "int32"

    def __init__(
        self,
        vocabulary_size,
        mask_token_id,
        mask_selection_rate=0.15,
        mask_selection_length=None,
        unselectable_token_ids=(0,),
        mask_token_rate=0.8,
        random_token_rate=0.1,
        seed=None,
        **kwargs,
    ):
        super().__init__(seed=seed, **kwargs)
        check_type("vocabulary_size", vocabulary_size, int, "a positive int")
        if vocabulary_size < 1:
            raise ValueError(
                f"`vocabulary_size` must be positive, got {vocabulary_size}.")
        check_type("mask_token_id", mask_token_id, int, "an int")
        if not 0 <= mask_token_id < vocabulary_size:
            raise ValueError(
                f"`mask_token_id` must be in [0, vocabulary_size={vocabulary_size})"
                f", got {mask_token_id}.")
        if mask_selection_length is not None:
            check_type("mask_selection_length", mask_selection_length, int,
                       "a positive int or None")
            if mask_selection_length < 1:
                raise ValueError("`mask_selection_length` must be a positive "
                                 f"int or None, got {mask_selection_length}.")
        check_type("unselectable_token_ids", unselectable_token_ids,
                   (tuple, list), "a tuple of ints")
        for token_id in unselectable_token_ids:
            check_type("unselectable_token_ids", token_id, int, "a tuple of ints")
        for name, rate in [("mask_selection_rate", mask_selection_rate),
                           ("mask_token_rate", mask_token_rate),
                           ("random_token_rate", random_token_rate)]:
            _check_rate(name, rate)
        if mask_token_rate + random_token_rate > 1.0:
            raise ValueError(
                "`mask_token_rate + random_token_rate` must be at most 1, got "
                f"{mask_token_rate} + {random_token_rate}: lower one of them.")
        self.vocabulary_size = vocabulary_size
        self.mask_token_id = mask_token_id
        self.mask_selection_rate = mask_selection_rate
        self.mask_selection_length = mask_selection_length
        self.unselectable_token_ids = unselectable_token_ids
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate

    def call(self, inputs):
        rank = inputs.shape.rank
        if rank not in (1, 2):
            raise ValueError(
                "`inputs` must be a 1-D sequence or a batch `[batch, length]` "
                f"of token ids, got rank {rank}.")
        if not inputs.dtype.is_integer:
            raise TypeError(f"`inputs` must be integer token ids, got {inputs.dtype}.")
        batched = inputs[tf.newaxis] if rank == 1 else inputs
        ragged = batched
        if not isinstance(ragged, tf.RaggedTensor):
            shape = tf.shape(batched, out_type=tf.int64)
            ragged = tf.RaggedTensor.from_tensor(  # not uniform: see to_tensor
                batched, lengths=tf.fill(shape[:1], shape[1]))
        ids = ragged.flat_values
        lengths = ragged.row_lengths()

        # === Selection: exactly n of the k selectable tokens of each row ===
        unselectable = tf.constant(self.unselectable_token_ids, ids.dtype,
                                   shape=[len(self.unselectable_token_ids)])
        selectable = tf.logical_not(tf.reduce_any(
            tf.equal(ids[:, tf.newaxis], unselectable[tf.newaxis]), axis=1))
        selectable = ragged.with_flat_values(selectable).to_tensor(False)
        num_selectable = tf.reduce_sum(tf.cast(selectable, tf.float32), axis=1)
        u = self.generator.uniform(tf.shape(num_selectable))
        count = tf.floor(self.mask_selection_rate * num_selectable + u)
        count = tf.cast(tf.minimum(count, num_selectable), tf.int32)
        if self.mask_selection_length is not None:
            count = tf.minimum(count, self.mask_selection_length)
        # Random keys, unselectable last; a token's rank in its row picks it.
        keys = self.generator.uniform(tf.shape(selectable))
        keys = tf.where(selectable, keys, 2.0)
        rank_in_row = tf.argsort(tf.argsort(keys, axis=1), axis=1)
        selected = rank_in_row < count[:, tf.newaxis]
        selected = tf.RaggedTensor.from_tensor(selected, lengths=lengths)
        selected = selected.flat_values

        # === Corruption of the selected tokens ===
        p = self.generator.uniform(tf.shape(ids))
        random_ids = self.generator.uniform(
            tf.shape(ids), 0, self.vocabulary_size, dtype=tf.int64)
        new_ids = tf.where(
            p < self.mask_token_rate,
            tf.cast(self.mask_token_id, ids.dtype),
            tf.where(p < self.mask_token_rate + self.random_token_rate,
                     tf.cast(random_ids, ids.dtype), ids))
        corrupted = ragged.with_flat_values(tf.where(selected, new_ids, ids))

        # === Outputs ===
        positions = tf.ragged.range(tf.cast(lengths, tf.int32))
        positions = ragged.with_flat_values(positions.flat_values)
        keep = ragged.with_flat_values(selected)
        mask_positions = tf.ragged.boolean_mask(positions, keep)
        mask_ids = tf.ragged.boolean_mask(ragged, keep)
        width = self.mask_selection_length
        if width is None:
            width = tf.reduce_max(tf.concat(
                [mask_positions.row_lengths(), [0]], axis=0))
        shape = tf.stack([tf.cast(ragged.nrows(), tf.int64),
                          tf.cast(width, tf.int64)])
        outputs = {
            "token_ids": corrupted,
            "mask_positions": mask_positions.to_tensor(0, shape=shape),
            "mask_ids": mask_ids.to_tensor(0, shape=shape),
            "mask_weights": tf.ones_like(mask_ids, tf.float32).to_tensor(
                0.0, shape=shape),
        }
        if not isinstance(inputs, tf.RaggedTensor):
            outputs["token_ids"] = corrupted.to_tensor(shape=tf.shape(batched))
        if rank == 1:
            outputs = {key: value[0] for key, value in outputs.items()}
        return outputs

    def python_call(self, inputs):
        rows, rank, dense = _python_rows(inputs, self.input_dtype)
        num_rows = len(rows)
        lengths = np.array([len(r) for r in rows], np.int64)
        dtype = rows[0].dtype if num_rows else np.dtype(self.input_dtype)
        if dense is not None:
            ids = dense.reshape(-1)
        elif num_rows:
            ids = np.concatenate(rows).astype(dtype, copy=False)
        else:
            ids = np.zeros([0], dtype)
        total = len(ids)
        row_of = np.repeat(np.arange(num_rows), lengths)
        row_start = np.cumsum(lengths) - lengths
        rng = self.python_generator

        # === Selection: exactly n of the k selectable tokens of each row ===
        selectable = ~np.isin(ids, np.asarray(self.unselectable_token_ids,
                                              np.int64))
        num_selectable = np.bincount(row_of[selectable], minlength=num_rows)
        u = rng.random(num_rows, dtype=np.float32)
        count = np.floor(self.mask_selection_rate
                         * num_selectable.astype(np.float32) + u)
        count = np.minimum(count, num_selectable).astype(np.int64)
        if self.mask_selection_length is not None:
            count = np.minimum(count, self.mask_selection_length)
        # A random order of each row's selectable tokens; the first `count`
        # of each row are chosen.
        keys = rng.random(total)
        keys[~selectable] = 2.0
        order = np.argsort(row_of * 4.0 + keys)  # by row, then key
        rank_in_row = np.empty(total, np.int64)
        rank_in_row[order] = np.arange(total) - row_start[row_of[order]]
        selected = rank_in_row < count[row_of]

        # === Corruption of the selected tokens ===
        chosen = np.flatnonzero(selected)  # ascending: by row, then position
        p = rng.random(len(chosen))
        random_ids = rng.integers(0, self.vocabulary_size, len(chosen))
        new_ids = np.where(
            p < self.mask_token_rate, self.mask_token_id,
            np.where(p < self.mask_token_rate + self.random_token_rate,
                     random_ids, ids[chosen]))
        corrupted = ids.copy()
        corrupted[chosen] = new_ids.astype(dtype)

        # === Outputs ===
        width = self.mask_selection_length
        if width is None:
            width = int(count.max()) if num_rows else 0
        chosen_row = row_of[chosen]
        column = np.arange(len(chosen)) - (np.cumsum(count) - count)[chosen_row]
        mask_positions = np.zeros((num_rows, width), np.int32)
        mask_positions[chosen_row, column] = chosen - row_start[chosen_row]
        mask_ids = np.zeros((num_rows, width), dtype)
        mask_ids[chosen_row, column] = ids[chosen]
        mask_weights = np.zeros((num_rows, width), np.float32)
        mask_weights[chosen_row, column] = 1.0
        if dense is not None:
            token_ids = corrupted.reshape(dense.shape)
        else:
            token_ids = np.split(corrupted, np.cumsum(lengths)[:-1])
        outputs = {"token_ids": token_ids, "mask_positions": mask_positions,
                   "mask_ids": mask_ids, "mask_weights": mask_weights}
        if rank == 1:
            outputs = {key: value[0] for key, value in outputs.items()}
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocabulary_size": self.vocabulary_size,
            "mask_token_id": self.mask_token_id,
            "mask_selection_rate": self.mask_selection_rate,
            "mask_selection_length": self.mask_selection_length,
            "unselectable_token_ids": self.unselectable_token_ids,
            "mask_token_rate": self.mask_token_rate,
            "random_token_rate": self.random_token_rate,
        })
        return config
