"""BERT's WordPiece tokenizer, on TensorFlow and tensorflow-text."""

import re


from kzoo.preprocessing.engine import tf, tf_text
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.preprocessing_layer import (
    check_type,
    preprocessing_function,
    to_tf,
)
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
    and a Greek final-sigma rule). The same TensorFlow ops run eagerly and
    inside ``tf.data``. Invalid UTF-8 is replaced by U+FFFD, which BERT
    deletes.

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
        self._word_piece = tf_text.FastWordpieceTokenizer(
            vocabulary,
            suffix_indicator="##",
            max_bytes_per_word=4 * self.max_input_chars_per_word,
            token_out_type=tf.int64,
            unknown_token=self.oov_token,
            no_pretokenization=True,
            support_detokenization=False,
        )
        self._vocabulary_tensor = tf.constant(vocabulary)
        index = {t: i for i, t in enumerate(vocabulary)}
        self._special_ids = {t: index[t] for t in self.special_tokens if t in index}

    def get_vocabulary(self):
        """The vocabulary, a list of str in id order."""
        self._check_vocabulary()
        return list(self.vocabulary)

    def _check_vocabulary(self):
        if self.vocabulary is None:
            raise ValueError(
                "No vocabulary is set on this WordPieceTokenizer: pass "
                "`vocabulary=` or call `set_vocabulary()` / `load_assets()`.")

    def _id_of(self, token):
        self._check_vocabulary()
        if self._token_index is None:
            self._token_index = {t: i for i, t in enumerate(self.vocabulary)}
        return self._token_index.get(token)

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
        ids = self._word_piece.tokenize(word_values)
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
        ids, starts, ends = self._word_piece.tokenize_with_offsets(word_values)
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
        self._check_vocabulary()
        if inputs.dtype != tf.string:
            raise TypeError(f"`inputs` must be strings, got a {inputs.dtype.name} "
                            "tensor.")
        rank = inputs.shape.rank
        if rank is None or rank > 1:
            raise ValueError("`inputs` must be a string or a 1-D batch of strings, "
                             f"got shape {inputs.shape}.")
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

    @preprocessing_function
    def tokenize_with_offsets(self, inputs):
        """Strings to a dict of ``token_ids``, ``start_offsets``, ``end_offsets``.

        The offsets are byte offsets into the original (UTF-8) string: token
        ``i`` of ``text`` came from ``text.encode()[start:end]``. A special
        token or an out-of-vocabulary word covers its whole span. Padding
        positions get offsets 0.
        """
        return self._tokenize_all(inputs)

    def detokenize(self, inputs):
        """Token ids to strings: tokens joined by spaces, ``##`` pieces glued.

        Padding ids are dropped. Like BERT's ``convert_tokens_to_string``, the
        result is the normalized text with a space between words
        (``"The fox!"`` → ``"the fox !"``).
        """
        # The layer reads Python lists as strings (its input dtype): ids here.
        # One sequence is detokenized as a batch of one (the eager conversion
        # handles 1-D string tensors, not scalars).
        inputs = to_tf(inputs, tf.int32)
        if inputs.shape.rank == 1:
            return self._detokenize(inputs[None])[0]
        return self._detokenize(inputs)

    @preprocessing_function
    def _detokenize(self, inputs):
        self._check_vocabulary()
        ids = tf.cast(inputs, tf.int64)
        size = len(self.vocabulary)
        flat = ids.flat_values if isinstance(ids, tf.RaggedTensor) else ids
        with tf.control_dependencies([
            tf.debugging.assert_non_negative(flat, message="`inputs` has negative ids"),
            tf.debugging.assert_less(flat, tf.constant(size, tf.int64), message=(
                f"`inputs` has ids >= the vocabulary size {size}")),
        ]):
            ids = tf.identity(ids)
        if ids.shape.rank != 2:
            raise ValueError("`inputs` must be a 1-D or 2-D batch of ids, got "
                             f"shape {ids.shape}.")
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        if self.pad_token_id is not None:
            ids = tf.ragged.boolean_mask(ids, ids != self.pad_token_id)
        tokens = tf.gather(self._vocabulary_tensor, ids)
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        text = tf.strings.regex_replace(text, " ##", "")
        return text

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
