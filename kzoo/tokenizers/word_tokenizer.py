"""Whitespace word tokenizer with a fixed vocabulary (word2vec, ELMo)."""

import collections
import itertools
import os
import re

import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.preprocessing_layer import check_type
from kzoo.preprocessing.preprocessing_layer import preprocessing_function
from kzoo.tokenizers.tokenizer import VOCABULARY_FILE
from kzoo.tokenizers.tokenizer import Tokenizer
from kzoo.tokenizers.tokenizer import read_lines
from kzoo.tokenizers.tokenizer import to_valid_utf8
from kzoo.tokenizers.tokenizer import write_lines

COUNTS_FILE = "counts.txt"


def normalize_words(inputs, lowercase=False):
    """Invalid UTF-8 replaced by U+FFFD, then optionally Unicode-lowercased."""
    inputs = tf.ragged.map_flat_values(to_valid_utf8, inputs)
    if lowercase:
        inputs = tf.ragged.map_flat_values(
            tf.strings.lower, inputs, encoding="utf-8"
        )
    return inputs


def split_words(inputs, lowercase=False):
    """The split of `WordTokenizer` and `compute_word_vocabulary`.

    Splits a 1-D batch of strings on runs of ASCII whitespace (space, `\\t`,
    `\\n`, `\\v`, `\\f`, `\\r`) after `normalize_words`, giving a ragged
    `[batch, None]` tensor of words. Unlike Python's `str.split()`, other
    Unicode spaces (such as U+00A0) do not separate words.
    """
    return tf.strings.split(normalize_words(inputs, lowercase))


# The characters Python's `str.split()` splits on that `tf.strings.split`
# does not (it splits on ASCII whitespace only).
_OTHER_SPACES = re.compile(
    "[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_ASCII_WORD = re.compile("[^ \t\n\v\f\r]+")


def python_split_text(text):
    """One `str` split on runs of ASCII whitespace, as `tf.strings.split`."""
    if text.isascii():  # (fast) then only \x1c-\x1f would split wrongly
        if ("\x1c" not in text and "\x1d" not in text and "\x1e" not in text
                and "\x1f" not in text):
            return text.split()
    elif _OTHER_SPACES.search(text) is None:
        return text.split()  # the same split, and faster than the regex
    return _ASCII_WORD.findall(text)


# The cased and case-ignorable characters that Unicode 14 added: TensorFlow's
# ICU (Unicode 13) has them unassigned, so it leaves them as they are and
# they end a final sigma's context.
_UNICODE_14_CASE = re.compile(
    "(["
    "\u0888\u0890-\u0891\u0898-\u089f\u08c9-\u08d2\u0c3c\u180f"
    "\u1ac1-\u1ace\u1dfa\u2c2f\u2c5f\ua7c0-\ua7c1\ua7d0-\ua7d1\ua7d3"
    "\ua7d5-\ua7d9\ua7f2-\ua7f4\ufbc2\U00010570-\U0001057a"
    "\U0001057c-\U0001058a\U0001058c-\U00010592\U00010594-\U00010595"
    "\U00010597-\U000105a1\U000105a3-\U000105b1\U000105b3-\U000105b9"
    "\U000105bb-\U000105bc\U00010780-\U00010785\U00010787-\U000107b0"
    "\U000107b2-\U000107ba\U00010f82-\U00010f85\U00011070"
    "\U00011073-\U00011074\U000110c2\U0001aff0-\U0001aff3"
    "\U0001aff5-\U0001affb\U0001affd-\U0001affe\U0001cf00-\U0001cf2d"
    "\U0001cf30-\U0001cf46\U0001df00-\U0001df09\U0001df0b-\U0001df1e"
    "\U0001e2ae"
    "])")


def python_lower(text):
    """`tf.strings.lower(text, encoding="utf-8")` in Python: the Unicode full
    lowercasing of `str.lower` (final sigma included), of the text before
    its first NUL character (TensorFlow's op ends the string there), with
    Unicode 13's case properties, those of TensorFlow's ICU: the characters
    Unicode 14 added are left as they are, and U+1734 is case-ignorable."""
    if "\x00" in text:
        text = text[:text.index("\x00")]
    if text.isascii():
        return text.lower()
    if "\u1734" in text:
        # A nonspacing mark for ICU (Unicode 13), so case-ignorable, and a
        # spacing one since Unicode 14: lowercase with a stand-in mark.
        stand_in = next((c for c in _STAND_INS if c not in text), None)
        if stand_in is not None:
            text = text.replace("\u1734", stand_in)
            return _lower_unicode_13(text).replace(stand_in, "\u1734")
    return _lower_unicode_13(text)


_STAND_INS = "\u0300\u0302\u0303\u0304\u0305\u0306"


def _lower_unicode_13(text):
    if _UNICODE_14_CASE.search(text) is None:
        return text.lower()
    # Split around them (kept, at odd indices): the case context stops there.
    parts = _UNICODE_14_CASE.split(text)
    return "".join(part if i % 2 else part.lower() for i, part in enumerate(parts))


def python_split_words(texts, lowercase=False):
    """`split_words` in Python: a list of `str` (valid Unicode, as
    `to_python` gives it) to a list of word lists."""
    if lowercase:
        return [python_split_text(python_lower(text)) for text in texts]
    return [python_split_text(text) for text in texts]


def _text_rank(inputs):
    """The rank of Python text: 0 (a str), 1 (a list of str) or 2 (a list of
    token lists); a TypeError for numbers, a ValueError for deeper nesting."""
    if isinstance(inputs, str):
        return 0
    if isinstance(inputs, np.ndarray):
        raise TypeError(
            f"`inputs` must be strings (text or split tokens), got dtype "
            f"{inputs.dtype.name}.")
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(
            "`inputs` must be strings (text or split tokens), got "
            f"{type(inputs).__name__}.")
    rank = 1
    for item in inputs:
        if isinstance(item, np.ndarray):
            raise TypeError(
                f"`inputs` must be strings (text or split tokens), got dtype "
                f"{item.dtype.name}.")
        if isinstance(item, (list, tuple)):
            rank = 2
            for token in item:
                if not isinstance(token, str):
                    if isinstance(token, (list, tuple)):
                        raise ValueError(
                            "`inputs` must be a string, a batch of strings or "
                            "a batch of token lists (rank 0, 1 or 2), got "
                            "rank 3 or more.")
                    raise TypeError(
                        "`inputs` must be strings (text or split tokens), got "
                        f"{type(token).__name__} {token!r}.")
    return rank


def _read_counts(counts):
    if isinstance(counts, (str, os.PathLike)):
        counts = read_lines(counts)
    try:
        array = np.asarray(counts, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if (array is None or array.ndim != 1 or not np.all(np.isfinite(array))
            or np.any(array < 0) or np.any(array != np.round(array))):
        raise ValueError(
            "`counts` must be a 1-D list of non-negative integer counts "
            f"(or the path of a file with one count a line), got {counts!r:.80}."
        )
    return [int(c) for c in array]


@kzoo_export("kzoo.tokenizers.WordTokenizer")
class WordTokenizer(Tokenizer):
    """Splits text on whitespace and maps each word to its vocabulary id.

    Words missing from the vocabulary get the id of `oov_token`. Text is made
    valid UTF-8 first (invalid bytes become U+FFFD) and optionally
    lowercased; the split is on ASCII whitespace (see `split_words`), the
    same as `compute_word_vocabulary`'s. The lookup is one
    `tf.lookup.StaticHashTable`, run eagerly or inside `tf.data` on every
    backend; the Python preprocessing engine (see
    `kzoo.preprocessing.engine`) gives the same ids with a Python dict and
    numpy, without TensorFlow. `detokenize` joins the tokens with spaces,
    dropping `pad_token` ids when `pad_token` is set.

    The vocabulary and counts are saved as the assets `vocabulary.txt` and
    `counts.txt` (one entry a line) of a `.keras` file or a preset, not in
    the config, as keras-hub's tokenizers do.

    Args:
        vocabulary: list of str, or the path of a text file with one token a
            line. The list index is the id. May be None when the vocabulary
            is loaded from assets afterwards.
        counts: optional list (or file path) of the corpus count of each
            vocabulary entry, as `compute_word_vocabulary` returns them.
            Not used to tokenize: kept (and saved) for `SkipGramSampler`.
        lowercase: bool. Lowercase (Unicode) before the lookup.
        oov_token: str. The token whose id out-of-vocabulary words get; it
            must be in the vocabulary.
        pad_token: str or None. With `sequence_length`, padding uses this
            token's id (0 when None); `detokenize` drops it.
        sequence_length: int or None. If set, batched outputs are dense
            `[batch, sequence_length]`, truncated or padded.

    Call arguments:
        inputs: a string, a batch of strings (split on whitespace), or
            already split tokens: a ragged `[batch, None]` string tensor or a
            list of lists of str (mapped without splitting).

    Returns:
        int32 ids: 1-D for one string, ragged `[batch, None]` for a batch, or
        dense `[batch, sequence_length]` when `sequence_length` is set.

    Example:
    >>> tokenizer = kzoo.tokenizers.WordTokenizer(
    ...     vocabulary=["[UNK]", "the", "cat", "sat"], lowercase=True)
    >>> tokenizer(["The cat sat", "the dog"])
    [[1, 2, 3], [1, 0]]
    >>> tokenizer.detokenize([[1, 2, 0]])
    ['the cat [UNK]']
    >>> tokenizer = kzoo.tokenizers.WordTokenizer(
    ...     vocabulary=["[PAD]", "[UNK]", "the", "cat"], pad_token="[PAD]",
    ...     sequence_length=4)
    >>> ops.convert_to_numpy(tokenizer([["the", "cat"], ["a"]])).tolist()
    [[2, 3, 0, 0], [1, 0, 0, 0]]
    """

    asset_files = (VOCABULARY_FILE, COUNTS_FILE)
    vocabulary_hint = ("pass `vocabulary=` or load it from assets "
                       "(`load_assets` / `from_preset`)")

    def __init__(
        self,
        vocabulary=None,
        counts=None,
        lowercase=False,
        oov_token="[UNK]",
        pad_token=None,
        sequence_length=None,
        **kwargs,
    ):
        super().__init__(sequence_length=sequence_length, **kwargs)
        self.lowercase = check_type("lowercase", lowercase, bool, "a bool")
        self.oov_token = check_type("oov_token", oov_token, str, "a str")
        if pad_token is not None:
            check_type("pad_token", pad_token, str, "a str or None")
        self.pad_token = pad_token
        self.vocabulary = None
        self.counts = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, counts)
        elif counts is not None:
            raise ValueError("`counts` was given without a `vocabulary`.")

    def set_vocabulary(self, vocabulary, counts=None):
        """Sets the vocabulary (list or file path) and optional counts."""
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = read_lines(vocabulary)
        if not isinstance(vocabulary, (list, tuple)) or not vocabulary or not all(
            isinstance(t, str) for t in vocabulary
        ):
            raise ValueError(
                "`vocabulary` must be a non-empty list of str or the path of a "
                f"file with one token a line, got {vocabulary!r:.80}."
            )
        vocabulary = list(vocabulary)
        duplicates = [t for t, n in collections.Counter(vocabulary).items() if n > 1]
        if duplicates:
            raise ValueError(
                f"`vocabulary` has duplicate tokens: {duplicates[:10]}. "
                "Each token must appear once."
            )
        for name in ("oov_token", "pad_token"):
            token = getattr(self, name)
            if token is not None and token not in vocabulary:
                raise ValueError(
                    f"`{name}` {token!r} is not in `vocabulary` (which starts "
                    f"with {vocabulary[:5]}). Add it to the vocabulary "
                    "(compute_word_vocabulary puts its `special_tokens` first) "
                    f"or pass a `{name}` that the vocabulary contains."
                )
        if counts is not None:
            counts = _read_counts(counts)
            if len(counts) != len(vocabulary):
                raise ValueError(
                    f"`counts` has {len(counts)} entries but `vocabulary` has "
                    f"{len(vocabulary)}: give one count per vocabulary entry."
                )
        # Plain attributes: Keras and TF would track a list or tuple element
        # by element (seconds for a 1M-word vocabulary).
        object.__setattr__(self, "vocabulary", tuple(vocabulary))
        object.__setattr__(self, "counts", None if counts is None else tuple(counts))
        self._token_index = None
        self._pad_index = (0 if self.pad_token is None
                           else vocabulary.index(self.pad_token))
        self._oov_index = vocabulary.index(self.oov_token)
        # The TensorFlow table is built on first use (`_tables`): the Python
        # engine never needs it, nor TensorFlow.
        self._vocabulary_tensor = None
        self._table = None

    def _tables(self):
        """The TensorFlow vocabulary tensor and lookup table (built once)."""
        if self._table is None:
            with tf.init_scope():
                self._vocabulary_tensor = tf.constant(
                    list(self.vocabulary), dtype=tf.string)
                self._table = tf.lookup.StaticHashTable(
                    tf.lookup.KeyValueTensorInitializer(
                        self._vocabulary_tensor,
                        tf.range(len(self.vocabulary), dtype=tf.int32),
                    ),
                    default_value=self._oov_index,
                )
        return self._vocabulary_tensor, self._table

    @preprocessing_function
    def tokenize(self, inputs):
        self._check_vocabulary()
        if inputs.dtype != tf.string:
            raise TypeError(
                f"`inputs` must be strings (text or split tokens), got dtype "
                f"{inputs.dtype.name}."
            )
        rank = inputs.shape.rank
        if rank == 0:
            return self.tokenize(inputs[tf.newaxis])[0]
        if rank == 1:
            tokens = split_words(inputs, self.lowercase)
        elif rank == 2:
            tokens = normalize_words(inputs, self.lowercase)
            if not isinstance(tokens, tf.RaggedTensor):
                tokens = tf.RaggedTensor.from_tensor(tokens)
        else:
            raise ValueError(
                "`inputs` must be a string, a batch of strings or a batch of "
                f"token lists (rank 0, 1 or 2), got rank {rank}."
            )
        ids = tf.ragged.map_flat_values(self._tables()[1].lookup, tokens)
        return self._pad_to_sequence_length(ids, self._pad_index)

    def python_tokenize(self, inputs):
        self._check_vocabulary()
        rank = _text_rank(inputs)
        if rank == 0:
            return self.python_tokenize([inputs])[0]
        if rank == 1:
            words = python_split_words(inputs, self.lowercase)
        elif self.lowercase:
            words = [[python_lower(token) for token in row] for row in inputs]
        else:
            words = inputs
        # One lookup over the whole batch, then one split into rows.
        index = self._token_ids()
        lengths = list(map(len, words))
        tokens = list(itertools.chain.from_iterable(words))
        flat = np.array(
            list(map(index.get, tokens, itertools.repeat(self._oov_index, len(tokens)))),
            dtype=np.int32)
        ends = list(itertools.accumulate(lengths))
        rows = [flat[end - n:end] for n, end in zip(lengths, ends)]
        return self._python_pad_to_sequence_length(rows, self._pad_index)

    @preprocessing_function
    def _detokenize(self, inputs):
        ids = self._checked_ids(inputs)
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        tokens = tf.gather(self._tables()[0], ids)
        if self.pad_token is not None:
            tokens = tf.ragged.boolean_mask(tokens, ids != self._pad_index)
        return tf.strings.reduce_join(tokens, axis=-1, separator=" ")

    def python_detokenize(self, inputs):
        rows = self._python_checked_ids(inputs)
        vocabulary = self.vocabulary
        pad = self._pad_index if self.pad_token is not None else None
        texts = []
        for row in rows:
            tokens = [vocabulary[i] for i in row.tolist() if i != pad]
            # TensorFlow's ragged reduce_join adds no separator while the
            # text is still empty: leading empty tokens leave no space.
            start = 0
            while start < len(tokens) and not tokens[start]:
                start += 1
            texts.append(" ".join(tokens[start:]))
        return texts

    def save_assets(self, dir_path):
        write_lines(os.path.join(dir_path, VOCABULARY_FILE), self.get_vocabulary())
        if self.counts is not None:
            write_lines(os.path.join(dir_path, COUNTS_FILE), self.counts)

    def load_assets(self, dir_path):
        counts = os.path.join(dir_path, COUNTS_FILE)
        self.set_vocabulary(
            os.path.join(dir_path, VOCABULARY_FILE),
            counts if os.path.exists(counts) else None,
        )

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocabulary": None,  # an asset, see the class docstring
            "counts": None,
            "lowercase": self.lowercase,
            "oov_token": self.oov_token,
            "pad_token": self.pad_token,
        })
        return config
