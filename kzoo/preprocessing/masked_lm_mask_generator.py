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


def _greedy_words(sizes, count, cap):
    """Whole-word selection in each row's random word order (numpy): the
    word of rank ``k`` is taken while fewer than ``count`` words are taken
    and its pieces still fit in ``cap``; a word that would cross ``cap`` is
    skipped and later, shorter ones may still fit (Google's BERT
    ``create_masked_lm_predictions``). ``sizes``: ``[rows, words]`` piece
    counts in rank order (0 past a row's words). Returns ``[rows, words]``
    bools in rank order."""
    taken = np.zeros(sizes.shape, bool)
    num_taken = np.zeros(sizes.shape[0], np.int64)
    used = np.zeros(sizes.shape[0], np.int64)
    for k in range(sizes.shape[1]):
        size = sizes[:, k]
        take = (size > 0) & (num_taken < count) & (used + size <= cap)
        taken[:, k] = take
        num_taken += take
        used += np.where(take, size, 0)
    return taken


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

    With `whole_word=True` (whole-word masking, BERT's later release) the
    unit is the word instead of the piece: a word is a selectable piece
    followed by the selectable pieces whose ids are in
    `continuation_token_ids` (WordPiece's `##` pieces). `n` of the `k`
    words of each sequence are chosen as above, every piece of a chosen word
    is predicted, and the 80/10/10 choice is drawn once per word: all its
    pieces become `mask_token_id`, all become random ids, or all stay. (Google's
    `create_pretraining_data.py` draws it per piece, which leaves some pieces
    of a masked word visible; one draw per word hides the word whole, and
    each piece still gets each outcome at the same rate.) The words are taken
    in a random order; with `mask_selection_length` set, a word whose pieces
    would not fit is skipped and later, shorter words may still fill the
    room, as in Google's code. Google sizes the budget as 15% of the pieces;
    here `mask_selection_rate` is the fraction of words.

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
        whole_word: bool. Choose whole words (see above). Defaults to False.
        continuation_token_ids: tuple of ints. The ids of the pieces that
            continue a word (a WordPiece tokenizer's
            `continuation_token_ids()`); required with `whole_word=True`.

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

    Whole-word masking: ids 7 and 8 continue a word, so `5 7 8` is one word
    of three pieces and does not fit in `mask_selection_length=2`; `6` does.
    >>> masker = kzoo.preprocessing.MaskedLMMaskGenerator(
    ...     vocabulary_size=10, mask_token_id=9, mask_selection_rate=1.0,
    ...     mask_selection_length=2, mask_token_rate=1.0, random_token_rate=0.0,
    ...     unselectable_token_ids=(0, 1, 2), whole_word=True,
    ...     continuation_token_ids=(7, 8), seed=1)
    >>> out = masker([[1, 5, 7, 8, 6, 2], [1, 6, 7, 2, 0, 0]])
    >>> ops.convert_to_numpy(out["token_ids"]).tolist()
    [[1, 5, 7, 8, 9, 2], [1, 9, 9, 2, 0, 0]]
    >>> ops.convert_to_numpy(out["mask_positions"]).tolist()
    [[4, 0], [1, 2]]

    Reference:
        - [Devlin et al., 2018](https://arxiv.org/abs/1810.04805), section 3.1.
        - Google's BERT repository, whole-word masking
          (`create_pretraining_data.py`, `do_whole_word_mask`).
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
        whole_word=False,
        continuation_token_ids=(),
        **kwargs,
    ):
        super().__init__(seed=seed, **kwargs)
        check_type("whole_word", whole_word, bool, "a bool")
        check_type("continuation_token_ids", continuation_token_ids,
                   (tuple, list), "a tuple of ints")
        for token_id in continuation_token_ids:
            check_type("continuation_token_ids", token_id, int, "a tuple of ints")
            if not 0 <= token_id < vocabulary_size:
                raise ValueError(
                    "`continuation_token_ids` must be ids in [0, vocabulary_size="
                    f"{vocabulary_size}), got {token_id}.")
        if whole_word and not continuation_token_ids:
            raise ValueError(
                "`whole_word=True` needs `continuation_token_ids`, the ids of the "
                "pieces that continue a word (for WordPiece, the `##` pieces: "
                "`tokenizer.continuation_token_ids()`).")
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
        self.whole_word = whole_word
        self.continuation_token_ids = tuple(continuation_token_ids)

    def _continuation_table(self):
        """``[vocabulary_size]`` bools: True at the continuation ids."""
        table = np.zeros(self.vocabulary_size, bool)
        table[list(self.continuation_token_ids)] = True
        return table

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
        if self.whole_word:
            selected, word_of = self._select_words(ids, selectable, ragged)
        else:
            selected = self._select_tokens(selectable, ragged, lengths)
            word_of = tf.range(tf.shape(ids, out_type=tf.int64)[0])

        # === Corruption of the selected tokens (one draw per word) ===
        p = tf.gather(self.generator.uniform(tf.shape(ids)), word_of)
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

    def _select_tokens(self, selectable, ragged, lengths):
        """Piece-level selection: flat bools."""
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
        return selected.flat_values

    def _select_words(self, ids, selectable, ragged):
        """Whole-word selection: (flat bools, flat word index)."""
        total = tf.shape(ids, out_type=tf.int64)[0]
        in_vocabulary = (ids >= 0) & (ids < self.vocabulary_size)
        continues = in_vocabulary & tf.gather(
            tf.constant(self._continuation_table()),
            tf.where(in_vocabulary, ids, tf.zeros_like(ids)))
        row_of = ragged.value_rowids()
        first = tf.concat([[True], row_of[1:] != row_of[:-1]], axis=0)[:total]
        previous = tf.concat([[False], selectable[:-1]], axis=0)[:total]
        previous = previous & tf.logical_not(first)
        starts = selectable & tf.logical_not(continues & previous)
        word_of = tf.cumsum(tf.cast(starts, tf.int64)) - 1
        word_of = tf.maximum(word_of, 0)  # unselectable pieces: any word
        num_rows = ragged.nrows()
        word_row = tf.boolean_mask(row_of, starts)
        num_words_total = tf.shape(word_row, out_type=tf.int64)[0]
        word_size = tf.math.unsorted_segment_sum(  # + 1: valid with no word
            tf.cast(selectable, tf.int64), word_of, num_words_total + 1)
        word_size = word_size[:num_words_total]
        words = tf.RaggedTensor.from_value_rowids(
            word_size, word_row, nrows=num_rows)
        num_words = tf.cast(words.row_lengths(), tf.float32)
        u = self.generator.uniform(tf.shape(num_words))
        count = tf.floor(self.mask_selection_rate * num_words + u)
        count = tf.cast(tf.minimum(count, num_words), tf.int64)
        # Each row's words in a random order: [rows, max words] sizes.
        keys = words.with_flat_values(
            self.generator.uniform(tf.shape(word_size))).to_tensor(2.0)
        order = tf.argsort(keys, axis=1)
        sizes = tf.gather(words.to_tensor(0), order, batch_dims=1)
        cap = self.mask_selection_length
        cap = tf.int64.max // 2 if cap is None else cap

        def step(state, size):
            num_taken, used, _ = state
            take = (size > 0) & (num_taken < count) & (used + size <= cap)
            return (num_taken + tf.cast(take, tf.int64),
                    used + tf.where(take, size, tf.zeros_like(size)), take)

        zeros = tf.zeros([num_rows], tf.int64)
        _, _, taken = tf.scan(step, tf.transpose(sizes),
                              (zeros, zeros, tf.zeros([num_rows], bool)))
        rank = tf.argsort(order, axis=1)
        taken = tf.gather(tf.transpose(taken), rank, batch_dims=1)
        word_taken = tf.RaggedTensor.from_tensor(
            taken, lengths=words.row_lengths()).flat_values
        word_taken = tf.concat([word_taken, [False]], axis=0)
        selected = selectable & tf.gather(
            word_taken, tf.minimum(word_of, num_words_total))
        return selected, word_of

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
        if self.whole_word:
            selected, word_of = self._python_select_words(
                ids, selectable, row_of, row_start, num_rows, rng)
        else:
            selected = self._python_select_tokens(
                selectable, row_of, row_start, num_rows, total, rng)

        # === Corruption of the selected tokens (one draw per word) ===
        chosen = np.flatnonzero(selected)  # ascending: by row, then position
        if self.whole_word:
            p = rng.random(total)[word_of[chosen]]
        else:
            p = rng.random(len(chosen))
        random_ids = rng.integers(0, self.vocabulary_size, len(chosen))
        new_ids = np.where(
            p < self.mask_token_rate, self.mask_token_id,
            np.where(p < self.mask_token_rate + self.random_token_rate,
                     random_ids, ids[chosen]))
        corrupted = ids.copy()
        corrupted[chosen] = new_ids.astype(dtype)

        # === Outputs ===
        chosen_row = row_of[chosen]
        count = np.bincount(chosen_row, minlength=num_rows)
        width = self.mask_selection_length
        if width is None:
            width = int(count.max()) if num_rows else 0
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

    def _python_select_tokens(self, selectable, row_of, row_start, num_rows,
                              total, rng):
        """Piece-level selection: ``[total]`` bools."""
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
        return rank_in_row < count[row_of]

    def _python_select_words(self, ids, selectable, row_of, row_start,
                             num_rows, rng):
        """Whole-word selection: ``([total] bools, [total] word index)``."""
        total = len(ids)
        in_vocabulary = (ids >= 0) & (ids < self.vocabulary_size)
        continues = in_vocabulary & self._continuation_table()[
            np.where(in_vocabulary, ids, 0)]
        previous = np.zeros(total, bool)
        previous[1:] = selectable[:-1]
        previous[row_start[row_start < total]] = False
        starts = selectable & ~(continues & previous)
        word_of = np.cumsum(starts) - 1  # the word of each selectable piece
        num_words_total = int(starts.sum())
        word_row = row_of[starts]
        word_size = np.bincount(word_of[selectable], minlength=num_words_total)
        num_words = np.bincount(word_row, minlength=num_rows)
        u = rng.random(num_rows, dtype=np.float32)
        count = np.floor(self.mask_selection_rate
                         * num_words.astype(np.float32) + u)
        count = np.minimum(count, num_words).astype(np.int64)
        # Each row's words in a random order: [rows, max words] sizes.
        keys = rng.random(num_words_total)
        order = np.argsort(word_row * 4.0 + keys)  # by row, then key
        word_start = np.cumsum(num_words) - num_words
        rank = np.empty(num_words_total, np.int64)
        rank[order] = np.arange(num_words_total) - word_start[word_row[order]]
        width = int(num_words.max()) if num_rows else 0
        sizes = np.zeros((num_rows, width), np.int64)
        sizes[word_row, rank] = word_size
        cap = self.mask_selection_length
        taken = _greedy_words(sizes, count, np.inf if cap is None else cap)
        word_taken = taken[word_row, rank]
        word_of = np.maximum(word_of, 0)  # unselectable pieces: any word
        selected = selectable & word_taken[word_of] if num_words_total else (
            np.zeros(total, bool))
        return selected, word_of

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
            "whole_word": self.whole_word,
            "continuation_token_ids": self.continuation_token_ids,
        })
        return config
