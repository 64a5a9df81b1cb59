"""BERT's WordPiece tokenizer, on TensorFlow and tensorflow-text or on
Hugging Face ``tokenizers``."""

import codecs
import re
import threading

import numpy as np

from kzoo.preprocessing.engine import tf, tf_text
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.preprocessing_layer import (
    check_type,
    preprocessing_function,
    to_python,
)
from kzoo.tokenizers import word_piece_unicode
from kzoo.tokenizers.tokenizer import Tokenizer, read_lines, to_valid_utf8

# Characters BERT deletes: every character outside the letter, mark, number,
# punctuation, symbol and separator categories (controls, format characters,
# private use, unassigned) except tab / newline / carriage return, plus U+FFFD
# (the replacement for invalid UTF-8).
CONTROL_PATTERN = r"[^\p{L}\p{M}\p{N}\p{P}\p{S}\p{Z}\t\n\r]|\x{FFFD}"
WHITESPACE_PATTERN = r"[\t\n\r\p{Z}]"
# BERT's punctuation: ASCII symbols and every Unicode punctuation character.
PUNCTUATION_PATTERN = r"[!-/:-@\[-`{-~\p{P}]"
# The CJK ideograph blocks that BERT splits into single characters.
CJK_PATTERN = (
    r"[\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
    r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}]"
)


def split_words_with_offsets(
    text, lowercase=True, strip_accents=None, split_on_punctuation=True
):
    """BERT's basic tokenizer: normalizes text and splits it into words.

    The steps are those of Hugging Face's ``BertTokenizer``: delete control
    characters, map whitespace to spaces, lowercase, strip accents (NFD, then
    drop non-spacing marks), and split on whitespace, punctuation and CJK
    ideographs. Each character is normalized on its own, which keeps a map
    from the normalized text back to the original bytes.

    Args:
        text: 1-D ``tf.string`` tensor of valid UTF-8.
        lowercase: bool. Lowercase the text.
        strip_accents: bool or None. Strip accents; None follows ``lowercase``.
        split_on_punctuation: bool. Make each punctuation character a word.

    Returns:
        ``(words, word_starts, to_source)``: ``words`` is a ``[batch, None]``
        ragged tensor of normalized words and ``word_starts`` their byte
        offsets in the normalized text; ``to_source(rows, starts, ends)`` maps
        byte offsets into the normalized text of those rows (flat int64
        tensors) to byte offsets into the original strings.
    """
    if strip_accents is None:
        strip_accents = lowercase
    chars, char_starts = tf.strings.unicode_split_with_offsets(text, "UTF-8")
    norm = chars.flat_values
    norm = tf.strings.regex_replace(norm, CONTROL_PATTERN, "")
    norm = tf.strings.regex_replace(norm, WHITESPACE_PATTERN, " ")
    if lowercase:
        norm = tf.strings.lower(norm, encoding="utf-8")
    if strip_accents:
        norm = tf_text.normalize_utf8(norm, "NFD")
        norm = tf.strings.regex_replace(norm, r"\p{Mn}", "")
    norm = tf.strings.regex_replace(
        norm, _normalize_pattern(split_on_punctuation), r" \1 ")

    # Where each character's normalized text starts, in one global coordinate
    # over the batch (each row shifted by the lengths of the rows before it).
    norm_lengths = tf.cast(tf.strings.length(norm), tf.int64)
    row_lengths = tf.math.unsorted_segment_sum(
        norm_lengths, chars.value_rowids(), chars.nrows())
    row_base = tf.cumsum(row_lengths, exclusive=True)
    norm_starts = tf.cumsum(norm_lengths, exclusive=True)
    source_starts = char_starts.flat_values
    source_ends = source_starts + tf.cast(
        tf.strings.length(chars.flat_values), tf.int64)

    norm_text = tf.strings.reduce_join(chars.with_flat_values(norm), axis=1)
    words, word_starts, _ = tf_text.regex_split_with_offsets(norm_text, " +", "")

    def to_source(rows, starts, ends):
        base = tf.gather(row_base, rows)
        first = tf.searchsorted(norm_starts, base + starts, side="right") - 1
        last = tf.searchsorted(norm_starts, base + ends - 1, side="right") - 1
        return tf.gather(source_starts, first), tf.gather(source_ends, last)

    return words, word_starts, to_source


def valid_utf8_with_source_offsets(text):
    """Valid UTF-8 text, and a map of its byte offsets back to ``text``'s.

    Bytes that are not valid UTF-8 become U+FFFD (3 bytes), so offsets into
    the valid text are not offsets into ``text`` after such bytes.

    Args:
        text: 1-D ``tf.string`` tensor.

    Returns:
        ``(valid, to_source)``: ``valid`` the 1-D valid text;
        ``to_source(rows, offsets)`` maps byte offsets at character
        boundaries of ``valid`` (flat int64, one row index each) to byte
        offsets into ``text`` (the end of a row maps to the end of its text).
    """
    codepoints, source_starts = tf.strings.unicode_decode_with_offsets(
        text, "UTF-8", errors="replace", replacement_char=0xFFFD)
    valid = tf.strings.unicode_encode(codepoints, "UTF-8")
    values = tf.cast(codepoints.flat_values, tf.int64)
    lengths = 1 + sum(tf.cast(values >= bound, tf.int64)
                      for bound in (0x80, 0x800, 0x10000))
    # Character starts in one coordinate over the batch (rows end to end).
    starts = tf.cumsum(lengths, exclusive=True)
    row_base = tf.gather(tf.concat([starts, [tf.reduce_sum(lengths)]], 0),
                         codepoints.row_splits[:-1])
    source = tf.concat([source_starts.flat_values, [0]], 0)
    text_lengths = tf.cast(tf.strings.length(text), tf.int64)

    def to_source(rows, offsets):
        index = tf.searchsorted(starts, tf.gather(row_base, rows) + offsets,
                                out_type=tf.int64)
        at_end = index >= tf.gather(codepoints.row_splits, rows + 1)
        return tf.where(at_end, tf.gather(text_lengths, rows), tf.gather(source, index))

    return valid, to_source


def _normalize_pattern(split_on_punctuation):
    if split_on_punctuation:
        return f"({PUNCTUATION_PATTERN}|{CJK_PATTERN})"
    return f"({CJK_PATTERN})"


def split_words(text, lowercase=True, strip_accents=None, split_on_punctuation=True):
    """The words of ``split_words_with_offsets``, without the offsets.

    The same normalization applied to whole strings at once instead of
    character by character (no map back to the source bytes is kept): the
    fast path for token ids.

    Returns:
        A ``[batch, None]`` ragged tensor of normalized words.
    """
    if strip_accents is None:
        strip_accents = lowercase
    norm = tf.strings.regex_replace(text, CONTROL_PATTERN, "")
    norm = tf.strings.regex_replace(norm, WHITESPACE_PATTERN, " ")
    if lowercase:
        # Lowercasing whole strings applies Greek's final-sigma rule (Σ at
        # a word's end → ς); character by character, as BERT does, Σ → σ.
        norm = tf.strings.regex_replace(norm, "Σ", "σ")
        norm = tf.strings.lower(norm, encoding="utf-8")
    if strip_accents:
        norm = tf_text.normalize_utf8(norm, "NFD")
        norm = tf.strings.regex_replace(norm, r"\p{Mn}", "")
    norm = tf.strings.regex_replace(
        norm, _normalize_pattern(split_on_punctuation), r" \1 ")
    return tf_text.regex_split(norm, " +", "")


# --- The Python implementation (Hugging Face `tokenizers` and numpy) ---

# Private-use code points (deleted from the input as the first step, so never
# in the text later) that stand in for the characters whose lowercase or NFD
# `tokenizers` gets differently from TensorFlow (see `_with_exceptions`).
_PLACEHOLDER = 0xF0000


def _with_exceptions(step, exceptions, first_placeholder):
    """``tokenizers`` normalizers running ``step`` except on the characters
    of ``exceptions``, which become their value there instead."""
    from tokenizers import normalizers

    placeholders = [chr(first_placeholder + i) for i in range(len(exceptions))]
    return ([normalizers.Replace(chr(c), p) for c, p in zip(exceptions, placeholders)]
            + [step]
            + [normalizers.Replace(p, v)
               for p, v in zip(placeholders, exceptions.values())])


def hugging_face_word_piece(vocabulary, oov_token="[UNK]", lowercase=True,
                            strip_accents=None, split_on_punctuation=True,
                            special_tokens=(), max_input_chars_per_word=100,
                            exceptions=True):
    """A Hugging Face ``tokenizers.Tokenizer`` doing what the TensorFlow
    implementation does (``split_words_with_offsets`` and
    FastWordpieceTokenizer), character class for character class.

    ``BertNormalizer`` and ``BertPreTokenizer`` are not used as they are:
    their Unicode tables are older than TensorFlow's (they keep unassigned
    code points, which BERT deletes, miss recent punctuation and marks, and
    skip the CJK block U+2B820-U+2B91F). The same steps are written with
    ``word_piece_unicode``'s explicit classes instead.

    Args:
        vocabulary: list of str.
        special_tokens: the tokens matched in the raw text, each one token.
        exceptions: bool. Whether to handle the few characters whose
            lowercase or NFD ``tokenizers`` gets differently
            (``exception_characters``); False gives a faster tokenizer for
            texts without them.
        (the others as ``WordPieceTokenizer``'s).
    """
    from tokenizers import AddedToken, Regex, Tokenizer
    from tokenizers import models, normalizers, pre_tokenizers

    unicode = word_piece_unicode
    if strip_accents is None:
        strip_accents = lowercase
    steps = [
        normalizers.Replace(Regex(unicode.regex_class(unicode.DELETED)), ""),
        normalizers.Replace(Regex(unicode.regex_class(unicode.WHITESPACE)), " "),
    ]
    if lowercase:
        steps += _with_exceptions(
            normalizers.Lowercase(),
            unicode.LOWERCASE_EXCEPTIONS if exceptions else {}, _PLACEHOLDER)
    if strip_accents:
        steps += _with_exceptions(
            normalizers.NFD(), unicode.NFD_EXCEPTIONS if exceptions else {},
            _PLACEHOLDER)
        steps.append(normalizers.Replace(
            Regex(unicode.regex_class(unicode.NONSPACING_MARKS)), ""))
    split = CJK_PATTERN
    if split_on_punctuation:
        split = unicode.regex_class(unicode.PUNCTUATION) + "|" + CJK_PATTERN
    tokenizer = Tokenizer(models.WordPiece(
        {t: i for i, t in enumerate(vocabulary)}, unk_token=oov_token,
        continuing_subword_prefix="##",
        max_input_chars_per_word=max_input_chars_per_word))
    tokenizer.normalizer = normalizers.Sequence(steps)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex(split), "isolated"),
    ])
    if special_tokens:
        tokenizer.add_special_tokens([
            AddedToken(t, special=True, normalized=False, single_word=False,
                       lstrip=False, rstrip=False) for t in special_tokens])
    return tokenizer


def exception_characters(lowercase=True, strip_accents=None):
    """The set of characters that need ``hugging_face_word_piece(...,
    exceptions=True)`` (a frozenset of str, empty when none do)."""
    if strip_accents is None:
        strip_accents = lowercase
    characters = ((list(word_piece_unicode.LOWERCASE_EXCEPTIONS) if lowercase else [])
                  + (list(word_piece_unicode.NFD_EXCEPTIONS) if strip_accents else []))
    return frozenset(map(chr, characters))


# Decoding bytes to text, the spans of the bytes replaced by U+FFFD.
_REPLACED = threading.local()


def _record_replacement(error):
    _REPLACED.spans.append((error.start, error.end))
    return "\ufffd", error.end


codecs.register_error("kzoo.word_piece.replace", _record_replacement)


def _char_byte_spans(raw):
    """Where each character of ``raw.decode("utf-8", "replace")`` lies in
    ``raw``: ``(starts, ends)`` byte offsets (a U+FFFD covers the invalid
    bytes it replaces)."""
    _REPLACED.spans = []
    raw.decode("utf-8", "kzoo.word_piece.replace")
    spans, _REPLACED.spans = _REPLACED.spans, []
    starts, ends, position = [], [], 0
    for start, end in spans + [(len(raw), len(raw))]:
        valid = raw[position:start].decode("utf-8")
        lengths = _utf8_lengths(valid)
        first = position + np.concatenate([[0], np.cumsum(lengths)])
        starts.append(first[:-1])
        ends.append(first[1:])
        if end > start:
            starts.append([start])
            ends.append([end])
        position = end
    return np.concatenate(starts).astype(np.int64), np.concatenate(ends).astype(np.int64)


def _utf8_lengths(text):
    """The UTF-8 length of each character of ``text`` (numpy int64)."""
    codepoints = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    return (1 + (codepoints >= 0x80).astype(np.int64) + (codepoints >= 0x800)
            + (codepoints >= 0x10000))


def _source_bytes(inputs):
    """The raw bytes of a bytes input (or the items of a batch), else None:
    offsets point into them, invalid UTF-8 included."""
    if isinstance(inputs, (bytes, np.bytes_)):
        return bytes(inputs)
    if isinstance(inputs, np.ndarray) and inputs.dtype.kind in "SO":
        inputs = inputs.tolist()
    if isinstance(inputs, (list, tuple)) and any(
            isinstance(v, (bytes, np.bytes_)) for v in inputs):
        return list(inputs)
    return None


@kzoo_export("kzoo.tokenizers.WordPieceTokenizer")
class WordPieceTokenizer(Tokenizer):
    """BERT's WordPiece tokenizer: text to subword ids and back.

    Text is split into words as BERT's basic tokenizer does (delete control
    characters, lowercase, strip accents, split on whitespace, punctuation
    and CJK ideographs), then each word into the longest vocabulary pieces
    from the left, continuation pieces carrying a ``##`` prefix. A word with
    no such split, or longer than ``max_input_chars_per_word``, becomes the
    ``oov_token``. The ids match Hugging Face's ``BertTokenizer`` (the
    ``tokenizers``-backed one; the legacy Python tokenizer also applies NFC
    and a Greek final-sigma rule). Invalid UTF-8 is replaced by U+FFFD,
    which BERT deletes. ``detokenize`` joins the tokens with spaces and glues
    the ``##`` pieces, dropping padding ids: like BERT's
    ``convert_tokens_to_string``, the result is the normalized text with a
    space between words (``"The fox!"`` → ``"the fox !"``).

    Two implementations give the same ids and offsets (see
    ``kzoo.preprocessing.engine``): TensorFlow and tensorflow-text ops, which
    run eagerly and inside ``tf.data``, and a Python one on Hugging Face
    ``tokenizers`` (``hugging_face_word_piece``, with the character classes
    of ``word_piece_unicode``), which needs no TensorFlow. One exception: a
    spacing mark of nonzero combining class (25 characters, such as U+1D165)
    right after other marks is reordered by NFD; there TensorFlow's
    ``tokenize_with_offsets`` may order the pieces differently from its
    ``tokenize``, and the Python implementation gives ``tokenize``'s ids to
    both, with offsets that may point at the neighbouring mark.

    Args:
        vocabulary: list of str, a path to a ``vocab.txt`` (one token per
            line), or None to set it later with ``set_vocabulary``. Saved as
            an asset, not in the config.
        lowercase: bool. Lowercase the input. Defaults to True.
        strip_accents: bool or None. Remove accents; None (the default) does
            so when ``lowercase`` is True, as ``BertTokenizer`` does.
        split_on_punctuation: bool. Split punctuation characters into words
            of their own. Defaults to True.
        oov_token: str. The token for words that cannot be split; must be in
            the vocabulary. Defaults to ``"[UNK]"``.
        special_tokens: tuple of str. Tokens that are never split when
            ``special_tokens_in_strings`` is True.
        special_tokens_in_strings: bool. Whether special tokens written in the
            input text (``"[CLS] hi [SEP]"``) map to their ids. Defaults to
            False: they are tokenized like any other text.
        max_input_chars_per_word: int. Longer words become ``oov_token``.
        sequence_length: int or None. If set, outputs are dense, truncated or
            padded (with the ``[PAD]`` id, or 0 without one) to this length.
        **kwargs: base layer arguments (``name``, ``dtype``).

    Call arguments:
        inputs: a string or a 1-D batch of strings (list, numpy or tensor).

    Returns:
        Token ids: 1-D for a string; for a batch, ``[batch, None]`` (ragged)
        or ``[batch, sequence_length]`` when ``sequence_length`` is set.

    Example:
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...               "the", "qu", "##ick", "fox", "cafe", "!"]
    >>> tokenizer = kzoo.tokenizers.WordPieceTokenizer(vocabulary)
    >>> tokenizer(["The quick fox!", "Café?"])
    [[5, 6, 7, 8, 10], [9, 1]]
    >>> tokenizer.detokenize([[5, 6, 7, 8, 10]])
    ['the quick fox !']
    >>> offsets = tokenizer.tokenize_with_offsets("Café!")
    >>> ops.convert_to_numpy(offsets["end_offsets"]).tolist()  # bytes
    [5, 6]

    Reference:
        Devlin et al., 2019, "BERT: Pre-training of Deep Bidirectional
        Transformers for Language Understanding".
    """

    def __init__(
        self,
        vocabulary=None,
        lowercase=True,
        strip_accents=None,
        split_on_punctuation=True,
        oov_token="[UNK]",
        special_tokens=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
        special_tokens_in_strings=False,
        max_input_chars_per_word=100,
        sequence_length=None,
        **kwargs,
    ):
        check_type("lowercase", lowercase, bool, "a bool")
        if strip_accents is not None:
            check_type("strip_accents", strip_accents, bool, "a bool or None")
        check_type("split_on_punctuation", split_on_punctuation, bool, "a bool")
        check_type("oov_token", oov_token, str, "a str")
        check_type("special_tokens_in_strings", special_tokens_in_strings, bool,
                   "a bool")
        check_type("max_input_chars_per_word", max_input_chars_per_word, int,
                   "a positive int")
        if max_input_chars_per_word < 1:
            raise ValueError("`max_input_chars_per_word` must be a positive int, "
                             f"got {max_input_chars_per_word}.")
        special_tokens = tuple(check_type(
            "special_tokens", special_tokens, (list, tuple), "a tuple of str"))
        for token in special_tokens:
            check_type("special_tokens", token, str, "a tuple of str")
        super().__init__(sequence_length=sequence_length, **kwargs)
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.split_on_punctuation = split_on_punctuation
        self.oov_token = oov_token
        self.special_tokens = special_tokens
        self.special_tokens_in_strings = special_tokens_in_strings
        self.max_input_chars_per_word = max_input_chars_per_word
        self.vocabulary = None
        self.set_vocabulary(vocabulary)

    # --- vocabulary ---
    def set_vocabulary(self, vocabulary):
        """Sets the vocabulary: a list of str, a vocab.txt path, or None."""
        self._token_index = None
        if vocabulary is None:
            self.vocabulary = None
            return
        if isinstance(vocabulary, str):
            vocabulary = read_lines(vocabulary)
        check_type("vocabulary", vocabulary, (list, tuple),
                   "a list of str, a path to a vocab.txt file, or None")
        vocabulary = list(vocabulary)
        bad = [t for t in vocabulary if not isinstance(t, str) or not t]
        if bad:
            raise ValueError("`vocabulary` must hold non-empty strings, got "
                             f"{bad[:5]!r}.")
        if len(set(vocabulary)) != len(vocabulary):
            seen, duplicates = set(), []
            for token in vocabulary:
                if token in seen:
                    duplicates.append(token)
                seen.add(token)
            raise ValueError(f"`vocabulary` has duplicate tokens {duplicates[:5]!r}.")
        if self.oov_token not in vocabulary:
            raise ValueError(
                f"`vocabulary` must contain the oov_token {self.oov_token!r} "
                "(BERT's '[UNK]'): add it, or pass the `oov_token` it uses.")
        self.vocabulary = vocabulary
        index = {t: i for i, t in enumerate(vocabulary)}
        self._special_ids = {t: index[t] for t in self.special_tokens if t in index}
        # Each engine's tables are built on first use: the TensorFlow ones
        # (`_tensorflow_tables`) need TensorFlow, the Python engine's
        # (`_python_tokenizer`) do not.
        self._word_piece = None
        self._vocabulary_tensor = None
        object.__setattr__(self, "_python_tables", None)
        object.__setattr__(self, "_python_vocabulary", None)

    def _tensorflow_tables(self):
        """The FastWordpieceTokenizer and the vocabulary tensor (built once)."""
        if self._word_piece is None:
            with tf.init_scope():
                self._word_piece = tf_text.FastWordpieceTokenizer(
                    self.vocabulary,
                    suffix_indicator="##",
                    max_bytes_per_word=4 * self.max_input_chars_per_word,
                    token_out_type=tf.int64,
                    unknown_token=self.oov_token,
                    no_pretokenization=True,
                    support_detokenization=False,
                )
                self._vocabulary_tensor = tf.constant(self.vocabulary)
        return self._word_piece, self._vocabulary_tensor

    def _id_of(self, token):
        return self._token_ids().get(token)

    @property
    def pad_token_id(self):
        """The id of ``[PAD]``, or None when the vocabulary has none."""
        return self._id_of("[PAD]")

    @property
    def cls_token_id(self):
        """The id of ``[CLS]``, or None when the vocabulary has none."""
        return self._id_of("[CLS]")

    @property
    def sep_token_id(self):
        """The id of ``[SEP]``, or None when the vocabulary has none."""
        return self._id_of("[SEP]")

    @property
    def mask_token_id(self):
        """The id of ``[MASK]``, or None when the vocabulary has none."""
        return self._id_of("[MASK]")

    @property
    def oov_token_id(self):
        """The id of ``oov_token``."""
        return self._id_of(self.oov_token)

    def continuation_token_ids(self):
        """The ids of the pieces that continue a word (those written with
        the ``##`` prefix), ascending: the word boundaries whole-word masking
        reads (``MaskedLMMaskGenerator(whole_word=True)``)."""
        if self.vocabulary is None:
            raise ValueError("The tokenizer has no vocabulary yet: call "
                             "`set_vocabulary` first.")
        special = set(self.special_tokens)
        return tuple(i for i, token in enumerate(self.vocabulary)
                     if token.startswith("##") and token not in special)

    # --- tokenize ---
    def _split_special_tokens(self, text):
        """Splits out special tokens: segments, their offsets, their ids."""
        tokens = sorted(self._special_ids, key=len, reverse=True)
        if not (self.special_tokens_in_strings and tokens):
            segments = tf.RaggedTensor.from_tensor(text[:, None])
            starts = tf.zeros_like(segments, tf.int64)
            return segments, starts, tf.fill(tf.shape(text), tf.constant(-1, tf.int64))
        pattern = "|".join(re.escape(t) for t in tokens)
        # regex_split stops at NUL: use another deleted byte of the same length.
        text = tf.strings.regex_replace(text, "\x00", "\x01")
        segments, starts, _ = tf_text.regex_split_with_offsets(text, pattern, pattern)
        ids = tf.fill(tf.shape(segments.flat_values), tf.constant(-1, tf.int64))
        for token in tokens:
            token_id = tf.constant(self._special_ids[token], tf.int64)
            ids = tf.where(segments.flat_values == token, token_id, ids)
        return segments, starts, ids

    def _word_pieces(self, word_values):
        """Which words are too long, and the words with those made ``oov_token``."""
        too_long = (tf.strings.length(word_values, unit="UTF8_CHAR")
                    > self.max_input_chars_per_word)
        word_values = tf.where(too_long, self.oov_token, word_values)
        return too_long, word_values

    def _tokenize_ids(self, text):
        """1-D strings to ragged ids (int64): ``_tokenize_flat`` less offsets."""
        text = to_valid_utf8(text)
        segments, _, special_ids = self._split_special_tokens(text)
        is_special = special_ids >= 0
        flat = tf.where(is_special, tf.constant(""), segments.flat_values)
        words = split_words(flat, self.lowercase, self.strip_accents,
                            self.split_on_punctuation)
        _, word_values = self._word_pieces(words.flat_values)
        ids = self._tensorflow_tables()[0].tokenize(word_values)
        pieces = tf.RaggedTensor.from_row_splits(
            ids.flat_values, tf.gather(ids.row_splits, words.row_splits),
            validate=False)
        special = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(special_ids, is_special), tf.cast(is_special, tf.int64),
            validate=False)
        pieces = tf.concat([special, pieces], axis=1)
        return segments.with_flat_values(pieces).merge_dims(1, 2)

    def _tokenize_flat(self, text):
        """1-D strings to ragged ids and source byte offsets (int64)."""
        text, valid_to_source = valid_utf8_with_source_offsets(text)
        segments, segment_starts, special_ids = self._split_special_tokens(text)
        flat = segments.flat_values
        is_special = special_ids >= 0
        # Special segments bypass the word splitting and become one token.
        flat = tf.where(is_special, tf.constant(""), flat)
        words, word_starts, to_source = split_words_with_offsets(
            flat, self.lowercase, self.strip_accents, self.split_on_punctuation)

        too_long, word_values = self._word_pieces(words.flat_values)
        ids, starts, ends = self._tensorflow_tables()[0].tokenize_with_offsets(
            word_values)
        word_of_piece = ids.value_rowids()
        word_length = tf.cast(tf.strings.length(words.flat_values), tf.int64)
        piece_too_long = tf.gather(too_long, word_of_piece)
        starts = tf.where(piece_too_long, tf.zeros_like(starts.flat_values),
                          starts.flat_values)
        ends = tf.where(piece_too_long, tf.gather(word_length, word_of_piece),
                        ends.flat_values)
        word_start = tf.gather(word_starts.flat_values, word_of_piece)
        segment_of_piece = tf.gather(words.value_rowids(), word_of_piece)
        starts, ends = to_source(segment_of_piece, word_start + starts,
                                 word_start + ends)
        # Per segment: its word pieces, or its special token.
        piece_rows = words.row_splits
        pieces = tf.RaggedTensor.from_row_splits(
            tf.stack([ids.flat_values, starts, ends], axis=1),
            tf.gather(ids.row_splits, piece_rows), validate=False)
        segment_length = tf.cast(tf.strings.length(segments.flat_values), tf.int64)
        special = tf.stack([special_ids, tf.zeros_like(special_ids), segment_length], 1)
        special = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(special, is_special), tf.cast(is_special, tf.int64),
            validate=False)
        pieces = tf.concat([special, pieces], axis=1)
        segment_start = tf.gather(segment_starts.flat_values, pieces.value_rowids())
        values = pieces.flat_values
        pieces = segments.with_flat_values(pieces).merge_dims(1, 2)
        rows = pieces.value_rowids()
        outputs = {
            "token_ids": values[:, 0],
            "start_offsets": valid_to_source(rows, values[:, 1] + segment_start),
            "end_offsets": valid_to_source(rows, values[:, 2] + segment_start),
        }
        return {k: pieces.with_flat_values(tf.cast(v, self.compute_dtype))
                for k, v in outputs.items()}

    def _tokenize_all(self, inputs, offsets=True):
        rank = self._check_text(inputs)
        flat = tf.reshape(inputs, [-1])
        if offsets:
            outputs = self._tokenize_flat(flat)
        else:
            outputs = {"token_ids": tf.cast(self._tokenize_ids(flat), self.compute_dtype)}
        pad_id = self.pad_token_id or 0
        outputs = {k: self._pad_to_sequence_length(v, pad_id if k == "token_ids" else 0)
                   for k, v in outputs.items()}
        if rank == 0:
            outputs = {k: v[0] for k, v in outputs.items()}
        return outputs

    @preprocessing_function
    def tokenize(self, inputs):
        """Strings to token ids (see the class docstring for shapes)."""
        return self._tokenize_all(inputs, offsets=False)["token_ids"]

    def tokenize_with_offsets(self, inputs):
        """Strings to a dict of ``token_ids``, ``start_offsets``, ``end_offsets``.

        The offsets are byte offsets into the original (UTF-8) string: token
        ``i`` of ``text`` came from ``text.encode()[start:end]`` (of the
        bytes themselves for ``bytes`` input, invalid UTF-8 included). A
        special token or an out-of-vocabulary word covers its whole span.
        Padding positions get offsets 0.
        """
        return self._tokenize_with_offsets(inputs, source=_source_bytes(inputs))

    @preprocessing_function
    def _tokenize_with_offsets(self, inputs, source=None):
        del source  # TensorFlow keeps the original bytes itself
        return self._tokenize_all(inputs)

    @preprocessing_function
    def _detokenize(self, inputs):
        ids = self._checked_ids(inputs)
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        if self.pad_token_id is not None:
            ids = tf.ragged.boolean_mask(ids, ids != self.pad_token_id)
        tokens = tf.gather(self._tensorflow_tables()[1], ids)
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        text = tf.strings.regex_replace(text, " ##", "")
        return text

    # --- the Python implementation ---
    def _python_tokenizer(self, exceptions=False):
        """The Hugging Face tokenizer of the vocabulary (built once), and the
        characters that need its ``exceptions`` variant."""
        tables = self.__dict__.get("_python_tables")
        if tables is None:
            tables = {"characters": exception_characters(self.lowercase,
                                                         self.strip_accents)}
            object.__setattr__(self, "_python_tables", tables)
        if exceptions not in tables:
            tables[exceptions] = hugging_face_word_piece(
                self.vocabulary, self.oov_token, self.lowercase, self.strip_accents,
                self.split_on_punctuation,
                tuple(self._special_ids) if self.special_tokens_in_strings else (),
                self.max_input_chars_per_word, exceptions=exceptions)
        return tables[exceptions], tables["characters"]

    def _python_encode(self, texts):
        """``tokenizers`` encodings of the texts (without special tokens)."""
        tokenizer, characters = self._python_tokenizer()
        rare = []
        joined = "".join(texts)
        if characters and not joined.isascii() and not characters.isdisjoint(joined):
            rare = [i for i, text in enumerate(texts)
                    if not characters.isdisjoint(text)]
        if not rare:
            return tokenizer.encode_batch(texts, add_special_tokens=False)
        encodings = [None] * len(texts)
        common = sorted(set(range(len(texts))) - set(rare))
        for rows, exceptions in ((common, False), (rare, True)):
            batch = self._python_tokenizer(exceptions)[0].encode_batch(
                [texts[i] for i in rows], add_special_tokens=False)
            for i, encoding in zip(rows, batch):
                encodings[i] = encoding
        return encodings

    def _python_texts(self, inputs):
        """``(texts, scalar)``: the input as a list of str."""
        if isinstance(inputs, np.ndarray):
            if inputs.dtype.kind not in "USO":
                raise TypeError("`inputs` must be strings, got a "
                                f"{inputs.dtype.name} tensor.")
            if inputs.ndim > 1:
                raise ValueError("`inputs` must be a string or a 1-D batch of "
                                 f"strings, got shape {inputs.shape}.")
            inputs = to_python(inputs.tolist() if inputs.ndim else inputs.item())
        if isinstance(inputs, (str, bytes, np.str_, np.bytes_)):
            return to_python([inputs]), True
        inputs = list(inputs)
        if any(isinstance(v, (list, tuple, np.ndarray)) for v in inputs):
            raise ValueError("`inputs` must be a string or a 1-D batch of "
                             f"strings, got shape {np.shape(inputs)}.")
        return to_python(inputs), False

    def _python_tokenize_all(self, inputs, offsets=True, source=None):
        self._check_vocabulary()
        texts, scalar = self._python_texts(inputs)
        encodings = self._python_encode(texts)
        lengths = np.fromiter((len(e.ids) for e in encodings), np.int64,
                              len(encodings))
        splits = np.cumsum(lengths)[:-1]

        def rows(values):
            return np.split(values.astype(self.compute_dtype), splits) if texts else []

        outputs = {"token_ids": rows(np.fromiter(
            (i for e in encodings for i in e.ids), np.int64, int(lengths.sum())))}
        if offsets:
            starts, ends = self._python_byte_offsets(texts, encodings, lengths, source)
            outputs["start_offsets"] = rows(starts)
            outputs["end_offsets"] = rows(ends)
        pad_id = self.pad_token_id or 0
        outputs = {k: self._python_pad_to_sequence_length(
            v, pad_id if k == "token_ids" else 0) for k, v in outputs.items()}
        if scalar:
            outputs = {k: v[0] for k, v in outputs.items()}
        return outputs

    @staticmethod
    def _python_byte_offsets(texts, encodings, lengths, source):
        """The tokens' character offsets from ``tokenizers`` as byte offsets
        into the UTF-8 texts (into ``source``'s bytes where it has them)."""
        total = int(lengths.sum())
        chars = np.fromiter((o for e in encodings for pair in e.offsets for o in pair),
                            np.int64, 2 * total).reshape(total, 2)
        rows = np.repeat(np.arange(len(texts)), lengths)
        text_lengths = np.fromiter(map(len, texts), np.int64, len(texts))
        joined = "".join(texts)
        if len(joined.encode("utf-8", "surrogatepass")) == len(joined):  # ASCII
            starts, ends = chars[:, 0], chars[:, 1]
        else:
            # Byte offset of each character over the texts end to end.
            position = np.concatenate([[0], np.cumsum(_utf8_lengths(joined))])
            first_char = np.concatenate([[0], np.cumsum(text_lengths)])
            base = first_char[rows]
            row_bytes = position[base]
            starts = position[base + chars[:, 0]] - row_bytes
            ends = position[base + chars[:, 1]] - row_bytes
        if source is not None:
            source = [source] if isinstance(source, bytes) else source
            token_starts = np.concatenate([[0], np.cumsum(lengths)])
            for row, (raw, text) in enumerate(zip(source, texts)):
                if (not isinstance(raw, (bytes, np.bytes_))
                        or text.encode("utf-8", "surrogatepass") == raw):
                    continue
                char_starts, char_ends = _char_byte_spans(bytes(raw))
                tokens = slice(token_starts[row], token_starts[row + 1])
                starts[tokens] = char_starts[chars[tokens, 0]]
                ends[tokens] = char_ends[chars[tokens, 1] - 1]
        return starts, ends

    def python_tokenize(self, inputs):
        return self._python_tokenize_all(inputs, offsets=False)["token_ids"]

    def python_tokenize_with_offsets(self, inputs, source=None):
        return self._python_tokenize_all(inputs, source=source)

    def python_detokenize(self, inputs):
        rows = self._python_checked_ids(inputs)
        lengths = np.fromiter(map(len, rows), np.int64, len(rows))
        ids = (np.concatenate(rows) if rows else np.zeros([0])).astype(np.int64)
        vocabulary = self.__dict__.get("_python_vocabulary")
        if vocabulary is None:
            vocabulary = np.asarray(self.vocabulary, dtype=object)
            object.__setattr__(self, "_python_vocabulary", vocabulary)
        keep = np.ones(len(ids), bool)
        if self.pad_token_id is not None:
            keep = ids != self.pad_token_id
        tokens = vocabulary[ids[keep]].tolist()
        lengths = np.bincount(np.repeat(np.arange(len(rows)), lengths)[keep],
                              minlength=len(rows))
        texts, start = [], 0
        for length in lengths.tolist():
            texts.append(" ".join(tokens[start:start + length]).replace(" ##", ""))
            start += length
        return texts

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocabulary": None,  # saved as an asset (vocabulary.txt)
            "lowercase": self.lowercase,
            "strip_accents": self.strip_accents,
            "split_on_punctuation": self.split_on_punctuation,
            "oov_token": self.oov_token,
            "special_tokens": self.special_tokens,
            "special_tokens_in_strings": self.special_tokens_in_strings,
            "max_input_chars_per_word": self.max_input_chars_per_word,
        })
        return config
