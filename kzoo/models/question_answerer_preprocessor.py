"""(question, context) strings (+ SQuAD answers) → span-extraction inputs."""

import keras
import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.models.preprocessor import Preprocessor
from kzoo.preprocessing.preprocessing_layer import (
    preprocessing_function,
    to_valid_utf8,
)


def _char_offsets(text, byte_offsets):
    """Byte offsets into valid UTF-8 ``text`` ``[batch]`` → character offsets.

    ``byte_offsets`` is ragged ``[batch, None]``; each offset falls on a
    character boundary (or the end), as the tokenizer's do.
    """
    _, char_starts = tf.strings.unicode_split_with_offsets(text, "UTF-8")
    char_starts = tf.cast(char_starts, tf.int64).to_tensor(
        tf.int64.max, shape=[None, None])
    values = tf.cast(byte_offsets, tf.int64)
    dense = values.to_tensor(0)
    # Characters starting before each byte offset = its character index.
    chars = tf.searchsorted(char_starts, dense, side="left",
                            out_type=tf.int64)
    return tf.RaggedTensor.from_tensor(chars, lengths=values.row_lengths())


def _python_char_offsets(text, byte_offsets):
    """``_char_offsets`` of one ``str``: byte offsets into its UTF-8 →
    character offsets (int64)."""
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)
    byte_offsets = np.asarray(byte_offsets, np.int64)
    if len(data) == len(text):  # ASCII: bytes are characters
        return byte_offsets
    char_starts = np.flatnonzero((data & 0xC0) != 0x80)
    return np.searchsorted(char_starts, byte_offsets, side="left").astype(np.int64)


def _python_flat(value):
    """Nested lists (or an array) → one flat list, as ``tf.reshape(x, [-1])``."""
    if isinstance(value, np.ndarray):
        return value.reshape(-1).tolist()
    if isinstance(value, (list, tuple)):
        flat = []
        for item in value:
            flat.extend(_python_flat(item) if isinstance(
                item, (list, tuple, np.ndarray)) else [item])
        return flat
    return [value]


def _python_batch_of_strings(name, value):
    """Checks one member of ``x`` on the Python path: a list of ``str``."""
    if isinstance(value, np.ndarray):
        raise TypeError(f"`x` {name} must be strings, got {value.dtype.name}.")
    if isinstance(value, str):
        raise ValueError(f"`x` {name} must be a 1-D batch of strings, got shape ().")
    if not isinstance(value, list):
        raise TypeError(f"`x` {name} must be strings, got {type(value).__name__}.")
    if any(not isinstance(v, str) for v in value):
        raise ValueError(f"`x` {name} must be a 1-D batch of strings, got "
                         "nested lists.")
    return value


def _pair_error(x):
    return ValueError(
        "`x` must be a tuple `(questions, contexts)` of two string batches, got "
        f"{type(x).__name__}"
        + (f" of length {len(x)}" if isinstance(x, (tuple, list)) else "") + ".")


@kzoo_export("kzoo.models.QuestionAnswererPreprocessor")
class QuestionAnswererPreprocessor(Preprocessor):
    """Packs ``start question sep context end`` and maps answers to tokens.

    SQuAD-style extractive question answering (BERT paper, section 4.2): the
    question and the context are tokenized and packed as one pair (BERT:
    ``[CLS] question [SEP] context [SEP]``, segment ids 0 then 1). Truncation
    is a waterfall: the context is cut first (the question only when it
    alone does not fit). Each example keeps one window: there is no
    document stride over long contexts.

    For training, ``y`` holds SQuAD-style answers: the character index where
    the answer starts in the context and the answer text. They become the
    token positions of the answer's first and last pieces, found as Hugging
    Face's ``run_qa.py`` does (the last piece starting at or before the
    answer start; the first piece ending at or after the answer end). An
    answer cut off by truncation, or an empty answer (SQuAD 2.0's
    unanswerable questions, ``answer_start=-1``), points to position 0
    (``[CLS]``) for both.

    ``context_offsets`` gives, for every packed position, the character
    span of the context it came from, so that a predicted token span maps
    back to ``context[start:end]`` (the tokenizer's byte offsets, converted
    to characters: ``é`` is two bytes but one character).

    Like every preprocessor it runs TensorFlow ops (inside ``tf.data`` and
    on TensorFlow tensors) or, with the Python preprocessing engine, a numpy
    implementation of the same packing and answer mapping that needs no
    TensorFlow (see ``kzoo.preprocessing.engine``).

    Family subclasses set ``tokenizer_cls`` and the special-token names
    ``start_token``, ``sep_token`` and ``end_token``. The tokenizer must
    have ``tokenize_with_offsets`` (``WordPieceTokenizer`` has).

    Args:
        tokenizer: the family's tokenizer.
        sequence_length: int. Length of the packed sequence. Default 384, as
            BERT's SQuAD fine-tuning.

    Call arguments:
        x: a tuple ``(questions, contexts)`` of string batches.
        y: optional answers: a dict with ``answer_start`` (int ``[batch]``,
            a character index into the context) and ``text`` (str
            ``[batch]``).
        sample_weight: optional ``[batch]`` weights, passed through.

    Returns:
        ``x`` alone without answers; else ``(x, y, sample_weight)``, where
        ``x`` is a dict of ``token_ids``, ``segment_ids``, ``padding_mask``
        (``[batch, sequence_length]``) and ``y`` a dict of token positions
        keyed by the model outputs they supervise: ``start_logits`` and
        ``end_logits`` (int32 ``[batch]``).
    """


    def __init__(self, tokenizer=None, sequence_length=384, **kwargs):
        super().__init__(tokenizer=tokenizer, **kwargs)
        if (not isinstance(sequence_length, int) or isinstance(sequence_length, bool)
                or sequence_length < 4):
            raise ValueError(
                f"`sequence_length` must be an int >= 4, got {sequence_length!r}."
            )
        self.sequence_length = sequence_length
        self.packer = None  # built on first call, once the vocabulary is known

    @staticmethod
    def _split_x(x):
        if not isinstance(x, (tuple, list)) or len(x) != 2:
            raise _pair_error(x)
        questions, contexts = x
        for name, value in (("questions", questions), ("contexts", contexts)):
            if value.dtype != tf.string:
                raise TypeError(f"`x` {name} must be strings, got {value.dtype.name}.")
            if value.shape.rank != 1:
                raise ValueError(
                    f"`x` {name} must be a 1-D batch of strings, got shape "
                    f"{value.shape}."
                )
        return questions, to_valid_utf8(contexts)

    def _pack(self, x):
        if self.packer is None:
            self.packer = self.build_packer(self.sequence_length, "waterfall")
        questions, contexts = self._split_x(x)
        # One tokenizer call for both (half the graph to build in tf.data).
        batch = tf.shape(questions)[0]
        tokens = self.tokenizer.tokenize_with_offsets(
            tf.concat([questions, contexts], axis=0))
        question_ids = tf.cast(tokens["token_ids"][:batch], tf.int32)
        context = {key: value[batch:] for key, value in tokens.items()}
        context_ids = tf.cast(context["token_ids"], tf.int32)
        packed = self.packer((question_ids, context_ids))

        # Waterfall: the question takes what it needs, the context the rest.
        n_start = int(self.start_token is not None)
        n_sep = int(self.sep_token is not None)
        n_end = int(self.end_token is not None)
        budget = self.sequence_length - n_start - n_sep - n_end
        question_kept = tf.minimum(question_ids.row_lengths(), budget)
        context_kept = tf.minimum(context_ids.row_lengths(), budget - question_kept)
        position = tf.ragged.range(context_ids.row_lengths())
        kept = position < context_kept[:, None]
        starts = _char_offsets(contexts, context["start_offsets"])
        ends = _char_offsets(contexts, context["end_offsets"])
        return {
            "x": packed,
            "contexts": contexts,
            "context_start": question_kept + n_start + n_sep,  # its position
            "starts": tf.ragged.boolean_mask(starts, kept),
            "ends": tf.ragged.boolean_mask(ends, kept),
        }

    def _answer_positions(self, packed, y):
        if not isinstance(y, dict) or not {"answer_start", "text"} <= set(y):
            raise ValueError(
                "`y` must be a dict with `answer_start` (character index of "
                "the answer in the context) and `text` (the answer), as "
                f"SQuAD's `answers`; got {type(y).__name__}"
                + (f" with keys {sorted(y)}" if isinstance(y, dict) else "") + "."
            )
        answer_start = tf.reshape(tf.cast(y["answer_start"], tf.int64), [-1])
        text = tf.reshape(to_valid_utf8(y["text"]), [-1])
        answer_end = answer_start + tf.cast(
            tf.strings.length(text, unit="UTF8_CHAR"), tf.int64)
        starts, ends = packed["starts"], packed["ends"]
        inside = (
            (answer_start >= 0) & (answer_end > answer_start)
            & (tf.reduce_min(starts, axis=1) <= answer_start)  # empty: max int
            & (tf.reduce_max(ends, axis=1) >= answer_end)  # empty: min int
        )
        start_index = tf.reduce_sum(
            tf.cast(starts <= answer_start[:, None], tf.int64), axis=1) - 1
        end_index = tf.reduce_sum(
            tf.cast(ends < answer_end[:, None], tf.int64), axis=1)
        offset = packed["context_start"]
        zero = tf.zeros_like(offset)
        return {
            "start_logits": tf.cast(tf.where(inside, offset + start_index, zero),
                                    tf.int32),
            "end_logits": tf.cast(tf.where(inside, offset + end_index, zero),
                                  tf.int32),
        }

    def call(self, x, y=None, sample_weight=None):
        return self._with_answers(self._pack, self._answer_positions,
                                  x, y, sample_weight)

    @staticmethod
    def _with_answers(pack, answer_positions, x, y, sample_weight):
        """A call's steps, on either engine's ``pack`` / ``answer_positions``."""
        packed = pack(x)
        if y is None:
            if sample_weight is not None:
                raise ValueError("`sample_weight` needs the answers `y` too.")
            return packed["x"]
        positions = answer_positions(packed, y)
        return keras.utils.pack_x_y_sample_weight(packed["x"], positions,
                                                  sample_weight)

    @preprocessing_function
    def context_offsets(self, x):
        """Character spans in the context of every packed position.

        Args:
            x: a tuple ``(questions, contexts)``, as for a call.

        Returns:
            A dict of int32 ``[batch, sequence_length]`` tensors
            ``start_offsets`` and ``end_offsets``: the context piece at that
            position is ``context[start:end]`` (characters of the context,
            invalid UTF-8 replaced by U+FFFD), and -1 at the positions that
            hold no context piece (special tokens, question, padding).
        """
        packed = self._pack(x)
        before = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(packed["context_start"])],
                    tf.constant(-1, tf.int64)),
            packed["context_start"])
        shape = [None, self.sequence_length]

        def lay_out(values):
            values = tf.concat([before, values], axis=1)
            return tf.cast(values.to_tensor(-1, shape=shape), tf.int32)

        return {"start_offsets": lay_out(packed["starts"]),
                "end_offsets": lay_out(packed["ends"])}

    # --- the Python engine (numpy; the same algorithm as above) ---
    @staticmethod
    def _python_split_x(x):
        if (not isinstance(x, (tuple, list)) or len(x) != 2
                or isinstance(x, list) and any(isinstance(v, str) for v in x)):
            # (a list of str is one batch of texts, not a pair)
            raise _pair_error(x)
        questions, contexts = x
        return (_python_batch_of_strings("questions", questions),
                _python_batch_of_strings("contexts", contexts))

    def _python_pack(self, x):
        if self.packer is None:
            self.packer = self.build_packer(self.sequence_length, "waterfall")
        questions, contexts = self._python_split_x(x)
        batch = len(questions)
        if len(contexts) != batch:
            raise ValueError(
                f"`x` has {batch} questions but {len(contexts)} contexts.")
        tokens = self.tokenizer.tokenize_with_offsets(list(questions) + list(contexts))
        question_ids = [np.asarray(r, np.int32) for r in tokens["token_ids"][:batch]]
        context_ids = [np.asarray(r, np.int32) for r in tokens["token_ids"][batch:]]
        packed = self.packer(tuple(rows if rows else np.zeros((0, 0), np.int32)
                                   for rows in (question_ids, context_ids)))

        n_start = int(self.start_token is not None)
        n_sep = int(self.sep_token is not None)
        n_end = int(self.end_token is not None)
        budget = self.sequence_length - n_start - n_sep - n_end
        question_kept = np.minimum([len(r) for r in question_ids], budget)
        context_kept = np.minimum([len(r) for r in context_ids],
                                  budget - question_kept).astype(np.int64)
        starts, ends = [], []
        for row, context in enumerate(contexts):
            kept = context_kept[row]
            starts.append(_python_char_offsets(
                context, tokens["start_offsets"][batch + row][:kept]))
            ends.append(_python_char_offsets(
                context, tokens["end_offsets"][batch + row][:kept]))
        return {
            "x": packed,
            "contexts": contexts,
            "context_start": (question_kept + n_start + n_sep).astype(np.int64),
            "starts": starts,
            "ends": ends,
        }

    def _python_answer_positions(self, packed, y):
        if not isinstance(y, dict) or not {"answer_start", "text"} <= set(y):
            raise ValueError(
                "`y` must be a dict with `answer_start` (character index of "
                "the answer in the context) and `text` (the answer), as "
                f"SQuAD's `answers`; got {type(y).__name__}"
                + (f" with keys {sorted(y)}" if isinstance(y, dict) else "") + "."
            )
        answer_start = np.asarray(_python_flat(y["answer_start"])).astype(np.int64)
        text = _python_flat(y["text"])
        if any(not isinstance(t, str) for t in text):
            raise TypeError("`y` text must be strings.")
        batch = len(packed["starts"])
        if len(answer_start) != batch or len(text) != batch:
            raise ValueError(
                f"`y` must hold one answer per example: {batch} examples, "
                f"{len(answer_start)} `answer_start` and {len(text)} `text`.")
        answer_end = answer_start + np.array([len(t) for t in text], np.int64)
        start_index = np.zeros(batch, np.int64)
        end_index = np.zeros(batch, np.int64)
        inside = (answer_start >= 0) & (answer_end > answer_start)
        for row, (starts, ends) in enumerate(zip(packed["starts"], packed["ends"])):
            if not len(starts):
                inside[row] = False
                continue
            inside[row] &= ((starts.min() <= answer_start[row])
                            & (ends.max() >= answer_end[row]))
            start_index[row] = np.count_nonzero(starts <= answer_start[row]) - 1
            end_index[row] = np.count_nonzero(ends < answer_end[row])
        offset = packed["context_start"]
        return {
            "start_logits": np.where(inside, offset + start_index, 0).astype(np.int32),
            "end_logits": np.where(inside, offset + end_index, 0).astype(np.int32),
        }

    def python_call(self, x, y=None, sample_weight=None):
        return self._with_answers(self._python_pack, self._python_answer_positions,
                                  x, y, sample_weight)

    def python_context_offsets(self, x):
        packed = self._python_pack(x)
        batch = len(packed["starts"])
        shape = (batch, self.sequence_length)
        start_offsets = np.full(shape, -1, np.int32)
        end_offsets = np.full(shape, -1, np.int32)
        for row in range(batch):
            begin = packed["context_start"][row]
            end = begin + len(packed["starts"][row])
            start_offsets[row, begin:end] = packed["starts"][row]
            end_offsets[row, begin:end] = packed["ends"][row]
        return {"start_offsets": start_offsets, "end_offsets": end_offsets}

    def get_config(self):
        config = super().get_config()
        config.update(sequence_length=self.sequence_length)
        return config
