"""Pre-split words (+ word labels) → packed token ids and per-token labels."""

import re

import keras
import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.models.preprocessor import Preprocessor
from kzoo.preprocessing.multi_segment_packer import MultiSegmentPacker
from kzoo.preprocessing.preprocessing_layer import (
    preprocessing_function,
    to_tf,
    use_python,
)

# The whitespace ``tf.strings.split`` splits sentences on (ASCII only).
_WHITESPACE = re.compile("[ \t\n\v\f\r]+")


@kzoo_export("kzoo.models.TokenClassifierPreprocessor")
class TokenClassifierPreprocessor(Preprocessor):
    """Tokenizes words one by one, packs them, and aligns word labels to pieces.

    ``x`` is a batch of sentences already split into words (named-entity
    recognition, part-of-speech tagging): a ragged ``[batch, None]`` string
    tensor or a list of lists of str. A 1-D batch of strings is split on
    whitespace first (the exported serving signature takes such strings).
    Each word is tokenized on its own (a word the tokenizer splits further,
    ``"U.S."`` or ``"playing"`` → ``play ##ing``, stays one word) and the
    pieces are packed as ``start pieces end`` (BERT: ``[CLS] ... [SEP]``).

    Labels follow Hugging Face's ``label_all_tokens=False`` convention: the
    first piece of each word carries the word's label with weight 1; the
    other pieces, the special tokens and the padding get label 0 with
    weight 0 (``sample_weight``), so that they count neither in the loss nor
    in the metrics. A negative word label (Hugging Face's ``-100``) marks a
    word to ignore: weight 0 as well.

    Truncation drops whole words: the words whose pieces do not all fit in
    ``sequence_length`` (with the special tokens) are left out, together with
    every word after them; a word is never cut in the middle. A word that
    yields no piece (an empty string, or only characters the tokenizer
    deletes) has no position either. ``word_ids`` tells which word each
    position came from.

    It runs TensorFlow ops (inside ``tf.data`` and on TensorFlow tensors)
    or, with the Python preprocessing engine, a numpy implementation of the
    same alignment that needs no TensorFlow (see
    ``kzoo.preprocessing.engine``).

    Family subclasses set ``tokenizer_cls`` and the special-token names
    ``start_token`` and ``end_token``.

    Args:
        tokenizer: the family's tokenizer (ragged output: no
            ``sequence_length`` of its own).
        sequence_length: int. Length of the packed sequence. Default 128.

    Call arguments:
        x: words: a ragged ``[batch, None]`` (or dense ``[batch, words]``)
            string batch, a list of lists of str, or a 1-D batch of strings
            to split on whitespace.
        y: optional word labels, ints shaped like the words (ragged, or a
            list of lists of int); one label per word.
        sample_weight: optional weights: one per sentence (``[batch]``) or
            one per word (shaped like the words). They multiply the
            first-piece weights. Needs ``y``.

    Returns:
        ``x`` alone without labels; else ``(x, y, sample_weight)`` where
        ``x`` is a dict of ``token_ids``, ``segment_ids``, ``padding_mask``
        (``[batch, sequence_length]``), ``y`` the per-token labels (int32)
        and ``sample_weight`` the per-token weights (float32), both
        ``[batch, sequence_length]``.
    """


    def __init__(self, tokenizer=None, sequence_length=128, **kwargs):
        super().__init__(tokenizer=tokenizer, **kwargs)
        if (not isinstance(sequence_length, int) or isinstance(sequence_length, bool)
                or sequence_length < 2):
            raise ValueError(
                f"`sequence_length` must be an int >= 2, got {sequence_length!r}."
            )
        self.sequence_length = sequence_length
        self.packer = None  # built on first call, once the vocabulary is known
        self.label_packer = None

    def _build_packers(self):
        self.packer = self.build_packer(self.sequence_length)
        # The same layout for per-piece integers (labels, flags, word ids):
        # zeros where the special tokens and the padding go.
        self.label_packer = MultiSegmentPacker(
            sequence_length=self.sequence_length,
            start_value=None if self.start_token is None else 0,
            end_value=None if self.end_token is None else 0,
            pad_value=0,
        )

    @property
    def _num_special_tokens(self):
        return (self.start_token is not None) + (self.end_token is not None)

    # --- words ---
    def _words(self, x):
        if isinstance(x, (tuple, list)):
            raise TypeError(
                "`x` must be one batch of words (a ragged string tensor or a "
                f"list of lists of str), got a {type(x).__name__} of tensors."
            )
        if x.dtype != tf.string:
            raise TypeError(
                f"`x` must hold strings (words), got a {x.dtype.name} tensor."
            )
        rank = x.shape.rank
        if rank == 1:  # sentences: split on whitespace
            words = tf.strings.split(x)
        elif rank == 2:
            words = (x if isinstance(x, tf.RaggedTensor)
                     else tf.RaggedTensor.from_tensor(x))
        else:
            raise ValueError(
                "`x` must be a batch of word lists ([batch, None]) or a 1-D "
                f"batch of sentences, got shape {x.shape}."
            )
        if words.ragged_rank != 1:
            raise ValueError(f"`x` must be [batch, None] words, got {words.shape}.")
        return words.with_row_splits_dtype(tf.int64)

    @staticmethod
    def _per_word(name, values, words, dtype):
        """``values`` (ragged or dense ``[batch, words]``) as ragged, checked."""
        if not isinstance(values, tf.RaggedTensor):
            values = tf.convert_to_tensor(values)
            if values.shape.rank != 2:
                raise ValueError(
                    f"`{name}` must hold one value per word ([batch, None], like "
                    f"`x`), got shape {values.shape}."
                )
            values = tf.RaggedTensor.from_tensor(values)
        values = tf.cast(values.with_row_splits_dtype(tf.int64), dtype)
        expected, got = words.row_lengths(), values.row_lengths()
        if tf.executing_eagerly():
            if expected.shape != got.shape or bool(tf.reduce_any(expected != got)):
                raise ValueError(
                    f"`{name}` must hold one value per word: sentences have "
                    f"{expected.numpy().tolist()} words, `{name}` has "
                    f"{got.numpy().tolist()} values."
                )
            return values
        with tf.control_dependencies([tf.debugging.assert_equal(
                expected, got,
                message=f"`{name}` must hold one value per word of `x`")]):
            return tf.identity(values)

    def _align(self, x, y=None, sample_weight=None):
        """Tokenizes, truncates by words, packs and aligns (see class doc)."""
        if self.packer is None:
            self._build_packers()
        words = self._words(x)
        flat_words = words.flat_values
        pieces = self.tokenizer(flat_words)
        if not isinstance(pieces, tf.RaggedTensor):
            raise ValueError(
                "The tokenizer must return ragged ids: build it without "
                "`sequence_length` (the preprocessor pads)."
            )
        pieces = tf.cast(pieces.with_row_splits_dtype(tf.int64), tf.int32)

        # Keep the words whose pieces fit, counting from each sentence's start.
        budget = self.sequence_length - self._num_special_tokens
        cumulative = tf.cumsum(pieces.row_lengths())
        before_row = tf.gather(
            tf.concat([tf.zeros([1], tf.int64), cumulative], 0), words.row_starts())
        within_row = cumulative - tf.gather(before_row, words.value_rowids())
        word_fits = within_row <= budget
        word_position = (tf.range(tf.shape(flat_words, out_type=tf.int64)[0])
                         - tf.gather(words.row_starts(), words.value_rowids()))

        # Per piece (flat, in sentence order): its word and first-piece flag.
        piece_word = pieces.value_rowids()
        num_pieces = tf.shape(pieces.flat_values, out_type=tf.int64)[0]
        is_first = tf.equal(
            tf.range(num_pieces), tf.gather(pieces.row_starts(), piece_word))
        keep = tf.gather(word_fits, piece_word)
        by_sentence = tf.gather(pieces.row_splits, words.row_splits)

        def per_sentence(values):
            ragged = tf.RaggedTensor.from_row_splits(values, by_sentence,
                                                     validate=False)
            mask = tf.RaggedTensor.from_row_splits(keep, by_sentence,
                                                   validate=False)
            return tf.ragged.boolean_mask(ragged, mask)

        packed = self.packer(per_sentence(pieces.flat_values))
        word_ids = self.label_packer(per_sentence(
            tf.cast(tf.gather(word_position, piece_word), tf.int32) + 1))
        outputs = {"x": packed, "word_ids": word_ids["token_ids"] - 1}
        if y is None:
            return outputs

        labels = self._per_word("y", y, words, tf.int32).flat_values
        usable = labels >= 0
        piece_label = tf.where(is_first, tf.gather(tf.maximum(labels, 0), piece_word), 0)
        piece_flag = tf.cast(is_first & tf.gather(usable, piece_word), tf.int32)
        token_labels = self.label_packer(per_sentence(piece_label))["token_ids"]
        weights = tf.cast(
            self.label_packer(per_sentence(piece_flag))["token_ids"], tf.float32)
        if sample_weight is not None:
            sample_weight = (sample_weight if isinstance(sample_weight, tf.RaggedTensor)
                             else tf.convert_to_tensor(sample_weight))
            if sample_weight.shape.rank == 1:
                weights = weights * tf.cast(sample_weight, tf.float32)[:, None]
            else:
                word_weight = self._per_word("sample_weight", sample_weight,
                                             words, tf.float32)
                dense = tf.pad(word_weight.to_tensor(0.0), [[0, 0], [0, 1]])
                index = tf.maximum(outputs["word_ids"], 0)
                weights = weights * tf.gather(dense, index, batch_dims=1)
        outputs.update(y=token_labels, sample_weight=weights)
        return outputs

    def __call__(self, x, y=None, sample_weight=None, **kwargs):
        # Word labels and weights are ragged lists: convert each as a whole
        # (the base class converts nested lists leaf by leaf).
        def ragged(value):
            return isinstance(value, (list, tuple)) or (
                isinstance(value, np.ndarray) and value.dtype == object)

        if not (use_python((x, y, sample_weight)) and hasattr(self, "python_call")):
            if ragged(y):
                y = to_tf(list(y), tf.int32)
            if ragged(sample_weight):
                sample_weight = to_tf(list(sample_weight), tf.float32)
        return super().__call__(x, y, sample_weight, **kwargs)

    def call(self, x, y=None, sample_weight=None):
        if y is None and sample_weight is not None:
            raise ValueError("`sample_weight` needs the word labels `y` too.")
        aligned = self._align(x, y, sample_weight)
        if y is None:
            return aligned["x"]
        return keras.utils.pack_x_y_sample_weight(
            aligned["x"], aligned["y"], aligned["sample_weight"])

    @preprocessing_function
    def word_ids(self, x):
        """Which word each packed position came from.

        Args:
            x: words, as for a call.

        Returns:
            int32 ``[batch, sequence_length]``: the index of the word (in its
            sentence) of each piece, every piece of a word included, and -1
            for the special tokens and the padding.
        """
        return self._align(x)["word_ids"]

    @preprocessing_function
    def split_words(self, x):
        """The words of ``x`` as a call sees them (1-D strings are split on
        whitespace): a ragged ``[batch, None]`` string batch."""
        return self._words(x)

    # --- the Python engine (numpy; the same algorithm as above) ---
    @staticmethod
    def _python_words(x):
        """``_words`` on Python values: a list (one per sentence) of lists
        of words."""
        if isinstance(x, tuple):
            raise TypeError(
                "`x` must be one batch of words (a ragged string tensor or a "
                f"list of lists of str), got a {type(x).__name__} of tensors."
            )
        if isinstance(x, np.ndarray):
            raise TypeError(
                f"`x` must hold strings (words), got a {x.dtype.name} tensor.")
        if isinstance(x, str):
            raise ValueError(
                "`x` must be a batch of word lists ([batch, None]) or a 1-D "
                "batch of sentences, got shape ().")
        if not isinstance(x, list):
            raise TypeError(
                f"`x` must hold strings (words), got {type(x).__name__}.")
        if all(isinstance(v, str) for v in x):  # sentences: split on whitespace
            return [[w for w in _WHITESPACE.split(s) if w] for s in x]
        for sentence in x:
            if not isinstance(sentence, list) or any(
                    not isinstance(w, str) for w in sentence):
                if isinstance(sentence, np.ndarray):
                    raise TypeError("`x` must hold strings (words), got a "
                                    f"{sentence.dtype.name} tensor.")
                raise ValueError(
                    "`x` must be a batch of word lists ([batch, None]) or a "
                    "1-D batch of sentences, got deeper nesting.")
        return x

    @staticmethod
    def _python_per_word(name, values, num_words, dtype):
        """``_per_word`` on Python values: one 1-D array per sentence."""
        if isinstance(values, np.ndarray):
            if values.ndim != 2:
                raise ValueError(
                    f"`{name}` must hold one value per word ([batch, None], like "
                    f"`x`), got shape {values.shape}."
                )
            rows = list(values)
        else:
            rows = [np.asarray(v) for v in values]
            if any(r.ndim != 1 for r in rows):
                raise ValueError(
                    f"`{name}` must hold one value per word ([batch, None], like "
                    f"`x`), got shape {np.shape(values)}."
                )
        rows = [r.astype(dtype) for r in rows]
        expected, got = [int(n) for n in num_words], [len(r) for r in rows]
        if got != expected:
            raise ValueError(
                f"`{name}` must hold one value per word: sentences have "
                f"{expected} words, `{name}` has {got} values."
            )
        return rows

    def _python_align(self, x, y=None, sample_weight=None):
        if self.packer is None:
            self._build_packers()
        words = self._python_words(x)
        batch = len(words)
        num_words = np.array([len(s) for s in words], np.int64)
        flat_words = [w for sentence in words for w in sentence]
        pieces = self.tokenizer(flat_words) if flat_words else []
        if isinstance(pieces, np.ndarray):
            raise ValueError(
                "The tokenizer must return ragged ids: build it without "
                "`sequence_length` (the preprocessor pads)."
            )
        piece_counts = np.array([len(p) for p in pieces], np.int64)
        piece_ids = (np.concatenate(pieces).astype(np.int32) if len(pieces)
                     else np.zeros([0], np.int32))

        # Keep the words whose pieces fit, counting from each sentence's start.
        budget = self.sequence_length - self._num_special_tokens
        word_splits = np.concatenate([[0], np.cumsum(num_words)])
        word_sentence = np.repeat(np.arange(batch), num_words)
        word_position = np.arange(len(flat_words)) - word_splits[word_sentence]
        cumulative = np.cumsum(piece_counts)
        before = np.concatenate([[0], cumulative])[word_splits[:-1]]
        word_fits = cumulative - before[word_sentence] <= budget

        # Per piece: its word, first-piece flag, sentence and packed column.
        piece_splits = np.concatenate([[0], cumulative])
        piece_word = np.repeat(np.arange(len(flat_words)), piece_counts)
        is_first = np.arange(len(piece_ids)) == piece_splits[piece_word]
        keep = word_fits[piece_word]  # a prefix of each sentence's pieces
        piece_sentence = word_sentence[piece_word]
        sentence_splits = piece_splits[word_splits]
        column = (np.arange(len(piece_ids)) - sentence_splits[piece_sentence]
                  + int(self.start_token is not None))
        rows, columns = piece_sentence[keep], column[keep]

        kept_splits = np.concatenate(
            [[0], np.cumsum(np.bincount(rows, minlength=batch))]).astype(np.int64)
        kept_ids = piece_ids[keep]
        sentences = [kept_ids[kept_splits[i]:kept_splits[i + 1]]
                     for i in range(batch)]
        packed = self.packer(  # one segment ([batch, 0] when the batch is empty)
            (sentences if batch else np.zeros((0, 0), np.int32),))
        shape = (batch, self.sequence_length)
        word_ids = np.full(shape, -1, np.int32)
        word_ids[rows, columns] = word_position[piece_word[keep]]
        outputs = {"x": packed, "word_ids": word_ids}
        if y is None:
            return outputs

        labels = self._python_per_word("y", y, num_words, np.int32)
        labels = (np.concatenate(labels) if labels else np.zeros([0], np.int32))
        piece_label = np.where(is_first, np.maximum(labels, 0)[piece_word], 0)
        piece_flag = is_first & (labels >= 0)[piece_word]
        token_labels = np.zeros(shape, np.int32)
        token_labels[rows, columns] = piece_label[keep]
        weights = np.zeros(shape, np.float32)
        weights[rows, columns] = piece_flag[keep]
        if sample_weight is not None:
            if isinstance(sample_weight, np.ndarray) and sample_weight.ndim == 1:
                weights = weights * sample_weight.astype(np.float32)[:, None]
            else:
                word_weight = self._python_per_word(
                    "sample_weight", sample_weight, num_words, np.float32)
                dense = np.zeros((batch, int(num_words.max(initial=0)) + 1),
                                 np.float32)
                for i, row in enumerate(word_weight):
                    dense[i, :len(row)] = row
                index = np.maximum(word_ids, 0)
                weights = weights * np.take_along_axis(dense, index, axis=1)
        outputs.update(y=token_labels, sample_weight=weights)
        return outputs

    def python_call(self, x, y=None, sample_weight=None):
        if y is None and sample_weight is not None:
            raise ValueError("`sample_weight` needs the word labels `y` too.")
        aligned = self._python_align(x, y, sample_weight)
        if y is None:
            return aligned["x"]
        return keras.utils.pack_x_y_sample_weight(
            aligned["x"], aligned["y"], aligned["sample_weight"])

    def python_word_ids(self, x):
        return self._python_align(x)["word_ids"]

    def python_split_words(self, x):
        return self._python_words(x)

    def get_config(self):
        config = super().get_config()
        config.update(sequence_length=self.sequence_length)
        return config
