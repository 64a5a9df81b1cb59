"""Packs one or more token segments into fixed-length model inputs."""

import numpy as np

from kzoo.preprocessing.engine import tf, tf_text
from kzoo.api_export import kzoo_export
from kzoo.preprocessing import preprocessing_layer
from kzoo.preprocessing.preprocessing_layer import PreprocessingLayer
from kzoo.preprocessing.preprocessing_layer import check_type


def _special_ids(name, value):
    """An int, a list/tuple of ints or None → a tuple of ints."""
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        for v in value:
            check_type(name, v, int, "an int, a list of ints or None")
        return tuple(value)
    check_type(name, value, int, "an int, a list of ints or None")
    return (value,)


def _in_python_implementation():
    """Whether this call is nested in another layer's Python implementation
    (where a ragged batch is a list of 1-D arrays)."""
    return (preprocessing_layer._depth() > 0
            and getattr(preprocessing_layer._STATE, "python", False))


def waterfall_allocation(lengths, budget):
    """How many tokens each segment keeps when the budget is filled segment
    by segment from the left (tensorflow-text's ``WaterfallTrimmer``).

    Args:
        lengths: int array ``[batch, num_segments]``, the segments' lengths.
        budget: int, the most tokens a row keeps.

    Returns:
        The kept lengths, an int64 array of the same shape.
    """
    lengths = np.asarray(lengths, np.int64)
    before = np.cumsum(lengths, axis=-1) - lengths
    return np.clip(budget - before, 0, lengths)


def round_robin_allocation(lengths, budget):
    """How many tokens each segment keeps when the budget is dealt one token
    at a time to each segment with tokens left, left to right, round after
    round (tensorflow-text's ``RoundRobinTrimmer``): a row of lengths
    ``[3, 4, 2]`` and budget 5 keeps ``[2, 2, 1]``.

    Args:
        lengths: int array ``[batch, num_segments]``, the segments' lengths.
        budget: int, the most tokens a row keeps.

    Returns:
        The kept lengths, an int64 array of the same shape.
    """
    lengths = np.asarray(lengths, np.int64)
    num_segments = lengths.shape[-1]
    if num_segments == 0:
        return lengths
    # Every segment shorter than the fill level ``level`` is kept whole; the
    # others keep ``level`` tokens and the first ``extra`` of those one more.
    # The level is set by the first (by length) segment that cannot be kept
    # whole: ``before + its length * segments left > budget``.
    ordered = np.sort(lengths, axis=-1)
    before = np.cumsum(ordered, axis=-1) - ordered
    left = num_segments - np.arange(num_segments)
    over = before + ordered * left > budget
    fits = ~over.any(axis=-1)
    first = np.where(fits, num_segments - 1, over.argmax(axis=-1))
    rows = np.arange(len(lengths))
    remaining = budget - before[rows, first]
    level = remaining // left[first]
    extra = remaining % left[first]
    cut = lengths > level[:, None]
    rank = np.cumsum(cut, axis=-1) - 1  # order among the cut segments
    kept = np.minimum(lengths, level[:, None]) + (cut & (rank < extra[:, None]))
    return np.where(fits[:, None], lengths, kept)


@kzoo_export("kzoo.preprocessing.MultiSegmentPacker")
class MultiSegmentPacker(PreprocessingLayer):
    """Packs segments of token ids into `token_ids`, `segment_ids`, `padding_mask`.

    The segments `a, b, c` are truncated so that the whole packed sequence,
    special tokens included, fits in `sequence_length`, then laid out as
    `start a sep b sep c end` and padded:

    * BERT: `start_value=[CLS], end_value=[SEP]` (`sep_value` defaults to
      `end_value`) gives `[CLS] a [SEP] b [SEP]`;
    * GPT-1: `start_value=<start>, sep_value=<delim>, end_value=<extract>`
      gives `<start> a <delim> b <extract>`;
    * RoBERTa: `start_value=0, sep_value=[2, 2], end_value=2` gives
      `<s> a </s></s> b </s>`.

    Segment ids: the start token, segment 0 and the separator after it get 0;
    segment `i` and the separator (or end token) after it get `i`; padding
    gets 0. With right padding, the last real token (GPT-1's `<extract>`,
    whose hidden state feeds the classifier) sits at position
    `sum(padding_mask) - 1` of each row; with left padding it is always
    `sequence_length - 1`.

    Args:
        sequence_length: int. Length of the packed output.
        start_value: int, list of ints or None. Token(s) put before the first
            segment (None: no start token).
        end_value: int, list of ints or None. Token(s) put after the last
            segment (None: no end token).
        sep_value: int, list of ints or None. Token(s) put between segments.
            None (the default) uses `end_value`; pass `[]` for no separator.
        pad_value: int. Id of the padding positions. Defaults to 0.
        truncate: str. `"round_robin"` (the default) removes tokens from the
            longest segments, one at a time in turn, keeping the segments as
            balanced as possible; `"waterfall"` fills the budget segment by
            segment from the left, so the last segments are cut first.
        padding_side: str. `"right"` (the default) or `"left"`.

    Call arguments:
        *segments: one or more segments of token ids, as positional arguments
            or as one tuple (or list of tensors): each a batch (ragged `[batch, None]` or dense
            `[batch, length]`) or one unbatched 1-D sequence. All segments
            must have the same rank and batch size.

    Returns:
        A dict with `token_ids` (the input dtype), `segment_ids` (int32) and
        `padding_mask` (bool), each `[batch, sequence_length]`
        (`[sequence_length]` for unbatched input).

    The TensorFlow implementation uses tensorflow-text's trimmers; the Python
    one (numpy, see `kzoo.preprocessing.engine`) computes the same
    allocation in closed form, vectorized over the batch.

    Example:
    >>> packer = kzoo.preprocessing.MultiSegmentPacker(
    ...     sequence_length=8, start_value=101, end_value=102)
    >>> out = packer([1, 2, 3], [4, 5, 6, 7])
    >>> ops.convert_to_numpy(out["token_ids"]).tolist()
    [101, 1, 2, 3, 102, 4, 5, 102]
    >>> ops.convert_to_numpy(out["segment_ids"]).tolist()
    [0, 0, 0, 0, 0, 1, 1, 1]
    >>> packer = kzoo.preprocessing.MultiSegmentPacker(
    ...     sequence_length=6, start_value=1, sep_value=2, end_value=3)
    >>> out = packer([[7, 8], [9]])
    >>> ops.convert_to_numpy(out["token_ids"]).tolist()
    [[1, 7, 8, 3, 0, 0], [1, 9, 3, 0, 0, 0]]
    >>> ops.convert_to_numpy(out["padding_mask"]).tolist()[1]
    [True, True, True, False, False, False]

    Reference:
        - [Devlin et al., 2018](https://arxiv.org/abs/1810.04805) (BERT).
        - [Radford et al., 2018](https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf)
          (GPT-1 input transformations).
    """

    input_dtype = "int32"

    def __init__(
        self,
        sequence_length,
        start_value,
        end_value,
        sep_value=None,
        pad_value=0,
        truncate="round_robin",
        padding_side="right",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_type("sequence_length", sequence_length, int, "a positive int")
        if sequence_length < 1:
            raise ValueError(
                f"`sequence_length` must be a positive int, got {sequence_length}."
            )
        check_type("pad_value", pad_value, int, "an int")
        if truncate not in ("round_robin", "waterfall"):
            raise ValueError(
                '`truncate` must be "round_robin" or "waterfall", '
                f"got {truncate!r}."
            )
        if padding_side not in ("right", "left"):
            raise ValueError(
                f'`padding_side` must be "right" or "left", got {padding_side!r}.'
            )
        self._start = _special_ids("start_value", start_value)
        self._end = _special_ids("end_value", end_value)
        self._sep = (self._end if sep_value is None
                     else _special_ids("sep_value", sep_value))
        self.sequence_length = sequence_length
        self.start_value = start_value
        self.end_value = end_value
        self.sep_value = sep_value
        self.pad_value = pad_value
        self.truncate = truncate
        self.padding_side = padding_side
        self._check_fits(1)

    def _num_special_tokens(self, num_segments):
        return (len(self._start) + (num_segments - 1) * len(self._sep)
                + len(self._end))

    def _check_fits(self, num_segments):
        needed = self._num_special_tokens(num_segments)
        if needed > self.sequence_length:
            raise ValueError(
                f"`sequence_length={self.sequence_length}` cannot hold the "
                f"{needed} special tokens that {num_segments} segment(s) need "
                f"(start {list(self._start)}, separator {list(self._sep)}, "
                f"end {list(self._end)}): use a larger `sequence_length`."
            )

    def __call__(self, *segments, **kwargs):
        if len(segments) == 1 and isinstance(segments[0], tuple):
            segments = segments[0]
        elif (len(segments) == 1 and isinstance(segments[0], list)
              and segments[0]
              and all(hasattr(s, "shape") for s in segments[0])
              and not _in_python_implementation()):
            # A list of tensors / arrays; inside another layer's Python
            # implementation a list of arrays is one ragged batch instead.
            segments = tuple(segments[0])
        return super().__call__(*segments, **kwargs)

    def _to_ragged_batch(self, segments):
        ranks = [s.shape.rank for s in segments]
        if len(set(ranks)) != 1 or ranks[0] not in (1, 2):
            raise ValueError(
                "Every segment must be a batch (rank 2, ragged or dense) or "
                f"every one a single 1-D sequence; got ranks {ranks}."
            )
        unbatched = ranks[0] == 1
        dtype = segments[0].dtype
        if not all(s.dtype.is_integer for s in segments):
            raise TypeError(
                "Segments must be integer token ids, got dtypes "
                f"{[s.dtype.name for s in segments]}: tokenize them first.")
        ragged = []
        for s in segments:
            s = tf.cast(s, dtype)
            if unbatched:
                s = s[tf.newaxis]
            if not isinstance(s, tf.RaggedTensor):
                s = tf.RaggedTensor.from_tensor(s)
            ragged.append(s.with_row_splits_dtype(tf.int64))
        nrows = [tf.get_static_value(s.nrows()) for s in ragged]
        nrows = [None if n is None else int(n) for n in nrows]
        if None not in nrows and len(set(nrows)) > 1:
            raise ValueError(
                f"All segments must have the same batch size, got {nrows}."
            )
        return ragged, unbatched

    def call(self, *segments):
        if not segments:
            raise ValueError("`MultiSegmentPacker` needs at least one segment.")
        self._check_fits(len(segments))
        segments, unbatched = self._to_ragged_batch(segments)
        budget = self.sequence_length - self._num_special_tokens(len(segments))
        trimmer = (tf_text.RoundRobinTrimmer if self.truncate == "round_robin"
                   else tf_text.WaterfallTrimmer)(budget)
        segments = trimmer.trim(segments)

        dtype = segments[0].dtype
        batch_size = segments[0].nrows()

        def columns(ids, segment_id):
            ids = tf.constant(ids, dtype=dtype, shape=[len(ids)])
            ids = tf.RaggedTensor.from_tensor(
                tf.tile(ids[tf.newaxis], [batch_size, 1]))
            return ids, tf.ones_like(ids, tf.int32) * segment_id

        pieces = [columns(self._start, 0)]
        last = len(segments) - 1
        for i, segment in enumerate(segments):
            pieces.append((segment, tf.ones_like(segment, tf.int32) * i))
            pieces.append(columns(self._sep if i < last else self._end, i))
        token_ids = tf.concat([p[0] for p in pieces], axis=1)
        segment_ids = tf.concat([p[1] for p in pieces], axis=1)

        shape = [None, self.sequence_length]
        lengths = token_ids.row_lengths()
        outputs = {
            "token_ids": token_ids.to_tensor(self.pad_value, shape=shape),
            "segment_ids": segment_ids.to_tensor(0, shape=shape),
            "padding_mask": tf.sequence_mask(lengths, self.sequence_length),
        }
        if self.padding_side == "left":
            # Position j of a row of length n holds position j - (L - n).
            index = (tf.range(self.sequence_length, dtype=tf.int64)[tf.newaxis]
                     - (self.sequence_length - lengths)[:, tf.newaxis])
            mask = index >= 0
            index = tf.maximum(index, 0)
            pads = {"token_ids": self.pad_value, "segment_ids": 0,
                    "padding_mask": False}
            outputs = {
                key: tf.where(mask, tf.gather(value, index, batch_dims=1),
                              tf.cast(pads[key], value.dtype))
                for key, value in outputs.items()
            }
        if unbatched:
            outputs = {key: value[0] for key, value in outputs.items()}
        return outputs

    def _python_rows(self, segments):
        """Python-engine segments → (list of rows per segment, unbatched,
        dtype), each row a 1-D integer array, with the checks of
        ``_to_ragged_batch``."""
        forms = []
        for segment in segments:
            if isinstance(segment, str) or (
                    isinstance(segment, list) and segment
                    and isinstance(segment[0], (str, list)) and (
                        isinstance(segment[0], str)
                        or (segment[0] and isinstance(segment[0][0], str)))):
                raise TypeError(
                    "Segments must be integer token ids, got dtypes "
                    f"{['string' for _ in segments]}: tokenize them first.")
            if isinstance(segment, np.ndarray):
                rank = segment.ndim
            elif isinstance(segment, (list, tuple)):
                if not segment:
                    rank = 1
                elif all(isinstance(v, (int, np.integer, float, np.floating))
                         for v in segment):
                    segment, rank = np.asarray(segment), 1
                else:
                    rank = 2
            else:
                segment = np.asarray(segment)
                rank = segment.ndim
            forms.append((segment, rank))
        ranks = [rank for _, rank in forms]
        if len(set(ranks)) != 1 or ranks[0] not in (1, 2):
            raise ValueError(
                "Every segment must be a batch (rank 2, ragged or dense) or "
                f"every one a single 1-D sequence; got ranks {ranks}."
            )
        unbatched = ranks[0] == 1
        batches = []
        for segment, _ in forms:
            if unbatched:
                segment = [segment]
            batches.append([r if isinstance(r, np.ndarray) else np.asarray(r)
                            for r in segment])
        kinds = set()
        for rows in batches:
            kinds.update(r.dtype.kind for r in rows if r.size)
        if not kinds <= {"i", "u"}:
            dtypes = [next((r.dtype.name for r in rows if r.size), "int32")
                      for rows in batches]
            raise TypeError(
                "Segments must be integer token ids, got dtypes "
                f"{dtypes}: tokenize them first.")
        nrows = [len(rows) for rows in batches]
        if len(set(nrows)) > 1:
            raise ValueError(
                f"All segments must have the same batch size, got {nrows}."
            )
        # Outermost call: numbers become the layer's input dtype, as
        # TensorFlow's conversion does; nested: the first segment's dtype.
        dtype = np.dtype(self.input_dtype)
        if preprocessing_layer._depth() > 1:
            first = segments[0]
            if isinstance(first, np.ndarray) and first.dtype.kind in "iu":
                dtype = first.dtype
            elif batches[0] and batches[0][0].dtype.kind in "iu":
                dtype = batches[0][0].dtype
        return batches, unbatched, dtype

    def python_call(self, *segments):
        if not segments:
            raise ValueError("`MultiSegmentPacker` needs at least one segment.")
        self._check_fits(len(segments))
        batches, unbatched, dtype = self._python_rows(segments)
        num_rows = len(batches[0])
        length = self.sequence_length
        budget = length - self._num_special_tokens(len(batches))
        lengths = np.array([[len(r) for r in rows] for rows in batches],
                           np.int64).reshape(len(batches), num_rows).T
        allocate = (round_robin_allocation if self.truncate == "round_robin"
                    else waterfall_allocation)
        kept = allocate(lengths, budget)

        total = self._num_special_tokens(len(batches)) + kept.sum(axis=-1)
        start = (length - total if self.padding_side == "left"
                 else np.zeros(num_rows, np.int64))
        token_ids = np.full((num_rows, length), self.pad_value, dtype)
        segment_ids = np.zeros((num_rows, length), np.int32)
        row_index = np.arange(num_rows)[:, None]
        offset = start.copy()

        def put_special(ids, segment_id):
            if ids:
                columns = offset[:, None] + np.arange(len(ids))
                token_ids[row_index, columns] = np.asarray(ids, dtype)
                segment_ids[row_index, columns] = segment_id
            offset[:] += len(ids)

        put_special(self._start, 0)
        last = len(batches) - 1
        for i, rows in enumerate(batches):
            counts = kept[:, i]
            if counts.any():
                values = np.concatenate(
                    [r[:n] for r, n in zip(rows, counts.tolist())])
                row_of = np.repeat(np.arange(num_rows), counts)
                first = np.cumsum(counts) - counts
                columns = (np.repeat(offset - first, counts)
                           + np.arange(len(values)))
                token_ids[row_of, columns] = values
                segment_ids[row_of, columns] = i
            offset += counts
            put_special(self._sep if i < last else self._end, i)

        positions = np.arange(length)
        padding_mask = ((positions >= start[:, None])
                        & (positions < (start + total)[:, None]))
        outputs = {"token_ids": token_ids, "segment_ids": segment_ids,
                   "padding_mask": padding_mask}
        if unbatched:
            outputs = {key: value[0] for key, value in outputs.items()}
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update({
            "sequence_length": self.sequence_length,
            "start_value": self.start_value,
            "end_value": self.end_value,
            "sep_value": self.sep_value,
            "pad_value": self.pad_value,
            "truncate": self.truncate,
            "padding_side": self.padding_side,
        })
        return config
