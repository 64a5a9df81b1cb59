"""GPT-2's byte-level byte-pair-encoding tokenizer, on TensorFlow or in
Python (Hugging Face ``tokenizers``)."""

import json
import math
import os
import re

import numpy as np

from kzoo.preprocessing.engine import tf, tf_text
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.preprocessing_layer import check_type, preprocessing_function
from kzoo.tokenizers.tokenizer import Tokenizer, read_lines, to_valid_utf8, write_lines

VOCABULARY_FILE = "vocabulary.json"
MERGES_FILE = "merges.txt"

# Python's (and Hugging Face's) \s: RE2's \s is ASCII only.
WHITESPACE = (r"\t\n\x0b\x0c\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}"
              r"\x{2029}\x{202F}\x{205F}\x{3000}")
# GPT-2's pre-tokenization regex without its lookahead `\s+(?!\S)`, which RE2
# lacks: `split_words` emulates it by cutting whitespace runs first.
WORD_PATTERN = (
    rf"'s|'t|'re|'ve|'m|'ll|'d| ?\p{{L}}+| ?\p{{N}}+| ?[^{WHITESPACE}\p{{L}}\p{{N}}]+"
    rf"|[{WHITESPACE}]+"
)


def bytes_to_unicode():
    """GPT-2's map from the 256 byte values to printable characters.

    Printable Latin-1 bytes map to themselves; the others (controls, space,
    ...) to the characters from U+0100 on, so the space byte is ``"Ġ"``.

    >>> table = bytes_to_unicode()
    >>> len(table), table[ord("a")], table[ord(" ")], table[ord("\\n")]
    (256, 'a', 'Ġ', 'Ċ')
    """
    printable = (list(range(ord("!"), ord("~") + 1))
                 + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    table, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + extra)
            extra += 1
    return table


def _split_with_offsets(text, pattern):
    """Splits into the matches of `pattern` and the text between them."""
    return tf_text.regex_split_with_offsets(text, pattern, pattern)


def _substrings(text, rows, starts, ends):
    """``text[rows][starts:ends]`` for flat int64 tensors (bytes)."""
    return tf.strings.substr(tf.gather(text, rows), starts, ends - starts)


def split_words(text, unsplittable_tokens=(), add_prefix_space=False):
    """GPT-2's pre-tokenization of 1-D valid UTF-8 strings.

    Equivalent to ``regex.findall`` with GPT-2's pattern, which ends in
    ``\\s+(?!\\S)|\\s+`` where ``WORD_PATTERN`` ends in a plain whitespace run:
    a whitespace run of two or more characters before a non-space character
    gives up its last character, which starts the next word. Here the runs
    are cut there first, and each piece is split with ``WORD_PATTERN``, which
    needs no lookahead (RE2 has none). As in Hugging Face's tokenizers,
    ``unsplittable_tokens`` are split out first and kept whole, and
    ``add_prefix_space`` prepends a space to each piece of text between them
    that does not start with one.

    Returns:
        ``(words, is_special)``: ``[batch, None]`` ragged tensors of the words
        (the original bytes) and of whether each is an unsplittable token.
    """
    # tensorflow-text's regex ops stop at NUL: they run on a copy where NUL is
    # \x01 (same length, same class), and the words are cut from the original.
    safe = tf.strings.regex_replace(text, "\x00", "\x01")
    if unsplittable_tokens:
        pattern = "|".join(re.escape(t) for t in
                           sorted(unsplittable_tokens, key=len, reverse=True))
        pieces, starts, ends = _split_with_offsets(safe, pattern)
        is_special = tf.strings.regex_full_match(pieces.flat_values, pattern)
        pieces = pieces.with_flat_values(_substrings(
            text, pieces.value_rowids(), starts.flat_values, ends.flat_values))
    else:
        pieces = tf.RaggedTensor.from_tensor(text[:, None])
        is_special = tf.zeros(tf.shape(text), tf.bool)
    values = tf.where(is_special, "", pieces.flat_values)
    if add_prefix_space:
        values = tf.where(tf.strings.regex_full_match(values, "(?s)[^ ].*"),
                          tf.strings.join([" ", values]), values)
    safe = tf.strings.regex_replace(values, "\x00", "\x01")

    # Cut before the last character of each whitespace run that has two or
    # more characters and is followed by more text.
    runs, _, run_ends = _split_with_offsets(safe, f"[{WHITESPACE}]+")
    run_values, run_rows = runs.flat_values, runs.value_rowids()
    position = tf.range(tf.size(run_values, tf.int64)) - tf.gather(
        runs.row_splits, run_rows)
    cut = (tf.strings.regex_full_match(run_values, f"[{WHITESPACE}]+")
           & (tf.strings.length(run_values, unit="UTF8_CHAR") > 1)
           & (position < tf.gather(runs.row_lengths(), run_rows) - 1))
    last_char = tf.strings.substr(run_values, -1, 1, unit="UTF8_CHAR")
    cut_at = run_ends.flat_values - tf.cast(tf.strings.length(last_char), tf.int64)
    cuts = tf.ragged.boolean_mask(runs.with_flat_values(cut_at),
                                  runs.with_flat_values(cut))
    lengths = tf.cast(tf.strings.length(values), tf.int64)[:, None]
    segment_starts = tf.concat(
        [tf.RaggedTensor.from_tensor(tf.zeros_like(lengths)), cuts], axis=1)
    segment_ends = tf.concat([cuts, tf.RaggedTensor.from_tensor(lengths)], axis=1)
    segments = _substrings(safe, segment_starts.value_rowids(),
                           segment_starts.flat_values, segment_ends.flat_values)
    words, starts, ends = _split_with_offsets(segments, WORD_PATTERN)
    shift = tf.gather(segment_starts.flat_values, words.value_rowids())
    rows = tf.gather(segment_starts.value_rowids(), words.value_rowids())
    words = tf.RaggedTensor.from_row_splits(
        _substrings(values, rows, starts.flat_values + shift, ends.flat_values + shift),
        tf.gather(words.row_splits, segment_starts.row_splits), validate=False)

    # An unsplittable token is one word; then back to the input rows.
    special = tf.RaggedTensor.from_row_lengths(
        tf.boolean_mask(pieces.flat_values, is_special),
        tf.cast(is_special, tf.int64), validate=False)
    words = tf.concat([special, words], axis=1)
    word_is_special = words.with_flat_values(
        tf.gather(is_special, words.value_rowids()))
    return (pieces.with_flat_values(words).merge_dims(1, 2),
            pieces.with_flat_values(word_is_special).merge_dims(1, 2))


def unique_merges(merges):
    """``merges`` without repeated rules (a repeated rule keeps its first
    rank, as ``BytePairTokenizer`` ranks them)."""
    return list(dict.fromkeys(merges))


def merge_order_is_local(merges, unk_token=None):
    """Whether Hugging Face's BPE merge loop gives GPT-2's result on ``merges``.

    GPT-2 (and ``BytePairTokenizer``'s TensorFlow loop) merges, at each
    step, every non-overlapping occurrence (left to right) of a word's
    best-ranked pair; Hugging Face's ``models.BPE`` merges one occurrence
    at a time, best rank then leftmost first, so a pair that a merge has
    just formed can overtake the remaining occurrences of the merge being
    applied. That never happens when every rule that uses a token ranks
    after every rule that makes it (true of merges learned in order, unless
    a token is rebuilt from another split after it was used), and when no
    rule uses ``unk_token`` (Hugging Face merges an unknown symbol as
    ``unk_token``). ``merges``: unique ``"a b"`` rules, best first.
    """
    made, used = {}, {}
    for rank, merge in enumerate(merges):
        a, b = merge.split(" ")
        made[a + b] = rank
        used.setdefault(a, rank)
        used.setdefault(b, rank)
    if unk_token is not None and unk_token in used:
        return False
    return all(used.get(token, math.inf) > rank for token, rank in made.items())


def byte_pair_merge(symbols, ranks):
    """GPT-2's merge loop on one word: ``symbols`` (a list of str) merged
    by ``ranks`` (``{(a, b): rank}``), each step merging every
    non-overlapping occurrence, left to right, of the best-ranked pair."""
    word = list(symbols)
    while len(word) > 1:
        best = min(zip(word, word[1:]),
                   key=lambda pair: ranks.get(pair, math.inf))
        if best not in ranks:
            break
        first, second = best
        merged, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and word[i] == first and word[i + 1] == second:
                merged.append(first + second)
                i += 2
            else:
                merged.append(word[i])
                i += 1
        word = merged
    return word


def python_texts(inputs):
    """The Python engine's text input as ``(texts, is_scalar)``, with the
    TensorFlow path's errors for numbers and for nested batches."""
    if isinstance(inputs, str):
        return [inputs], True
    if isinstance(inputs, np.ndarray):
        raise TypeError(f"`inputs` must be strings, got a {inputs.dtype.name} "
                        "tensor.")
    if isinstance(inputs, (list, tuple)):
        if any(not isinstance(v, str) for v in inputs):
            if all(isinstance(v, np.ndarray) for v in inputs):
                dtype = inputs[0].dtype.name
                raise TypeError(f"`inputs` must be strings, got a {dtype} tensor.")
            raise ValueError("`inputs` must be a string or a 1-D batch of "
                             "strings, got a nested batch.")
        return list(inputs), False
    raise TypeError(f"`inputs` must be strings, got {type(inputs).__name__}.")


def _static_table(keys, values, default, dtype="string"):
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys, tf.string), tf.constant(values, dtype)),
        default_value=tf.constant(default, dtype))


@kzoo_export("kzoo.tokenizers.BytePairTokenizer")
class BytePairTokenizer(Tokenizer):
    """GPT-2's byte-level byte-pair-encoding (BPE) tokenizer.

    Text is split into words with GPT-2's regex (contractions, letter runs,
    number runs, other-symbol runs, each with an optional leading space, and
    whitespace), each word's UTF-8 bytes are mapped to printable characters
    (``bytes_to_unicode``), and the pairs of adjacent symbols are merged in
    the order of ``merges`` until none applies. Every string is encoded
    (there is no unknown token) and ``detokenize`` gives back its exact
    bytes (decoded as UTF-8 when returned eagerly, U+FFFD replacing what is
    not valid UTF-8). The ids match Hugging Face's ``GPT2Tokenizer`` and OpenAI's
    ``encoder.py``. TensorFlow ops run inside ``tf.data`` and eagerly on
    the TensorFlow engine (the merge loop is compiled in a ``tf.function``,
    once per tokenizer; each distinct word of a batch is merged once); the
    Python implementation (no TensorFlow, see ``kzoo.preprocessing.engine``)
    gives the same ids and strings with Hugging Face ``tokenizers``' BPE, or
    with GPT-2's merge loop in Python (words cached) for merges on which
    that BPE's merge order differs (``merge_order_is_local``). Invalid
    UTF-8 is replaced by U+FFFD first.

    Args:
        vocabulary: dict mapping each token to its id (ids ``0 .. n-1``), a
            path to a ``vocab.json``, or None to set it later with
            ``set_vocabulary_and_merges``. It must hold the 256 byte symbols
            and every merge result. Saved as an asset, not in the config.
        merges: list of ``"a b"`` merge rules, highest priority first, or a
            path to a ``merges.txt`` (a first line ``#version...`` is skipped).
        sequence_length: int or None. If set, outputs are dense, truncated or
            padded with 0 (GPT-2 has no padding token) to this length.
        add_prefix_space: bool. Prepend a space to inputs (to each piece
            between unsplittable tokens, as Hugging Face does) that do not
            start with one, so the first word is encoded like the others.
        unsplittable_tokens: tuple of str or None. Tokens (e.g.
            ``("<|endoftext|>",)``) kept whole and mapped to their ids when
            they appear in the text; they must be in the vocabulary.
        **kwargs: base layer arguments (``name``, ``dtype``).

    Call arguments:
        inputs: a string or a 1-D batch of strings (list, numpy or tensor).

    Returns:
        Token ids: 1-D for a string; for a batch, ``[batch, None]`` (ragged)
        or ``[batch, sequence_length]`` when ``sequence_length`` is set.

    Example:
    >>> vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
    ...     ["low lower lowest"] * 3, vocabulary_size=262, special_tokens=())
    >>> merges
    ['l o', 'lo w', 'low e', 'Ġ lowe', 's t', 'Ġlowe r']
    >>> tokenizer = kzoo.tokenizers.BytePairTokenizer(vocabulary, merges)
    >>> tokenizer(["low lower", "lowest!"])
    [[257, 261], [258, 260, 33]]
    >>> tokenizer.detokenize([[258, 260, 33]])
    ['lowest!']

    Reference:
        Radford et al., 2019, "Language Models are Unsupervised Multitask
        Learners"; Sennrich et al., 2016, "Neural Machine Translation of Rare
        Words with Subword Units".
    """

    asset_files = (VOCABULARY_FILE, MERGES_FILE)
    vocabulary_hint = ("pass `vocabulary=` and `merges=`, or call "
                       "`set_vocabulary_and_merges()` / `load_assets()`")

    def __init__(
        self,
        vocabulary=None,
        merges=None,
        sequence_length=None,
        add_prefix_space=False,
        unsplittable_tokens=None,
        **kwargs,
    ):
        check_type("add_prefix_space", add_prefix_space, bool, "a bool")
        if unsplittable_tokens is not None:
            unsplittable_tokens = tuple(check_type(
                "unsplittable_tokens", unsplittable_tokens, (list, tuple),
                "a tuple of str or None"))
            for token in unsplittable_tokens:
                check_type("unsplittable_tokens", token, str, "a tuple of str")
                if not token:
                    raise ValueError("`unsplittable_tokens` must not hold ''.")
        super().__init__(sequence_length=sequence_length, **kwargs)
        self.add_prefix_space = add_prefix_space
        self.unsplittable_tokens = unsplittable_tokens
        self.vocabulary = None
        self.merges = None
        self._tokens = None  # the tokens in id order
        self._functions = {}  # lookup tables and the compiled merge loop
        self.set_vocabulary_and_merges(vocabulary, merges)

    # --- vocabulary ---
    def set_vocabulary_and_merges(self, vocabulary, merges):
        """Sets the vocabulary (dict or vocab.json path) and merges (list or path)."""
        self._token_index = None
        self._functions.clear()
        if vocabulary is None and merges is None:
            self.vocabulary = self.merges = self._tokens = None
            return
        if vocabulary is None or merges is None:
            raise ValueError("Pass both `vocabulary` and `merges`, or neither.")
        if isinstance(vocabulary, str):
            with open(vocabulary, encoding="utf-8") as f:
                vocabulary = json.load(f)
        check_type("vocabulary", vocabulary, dict,
                   "a dict of token to id or a path to a vocab.json file")
        if sorted(vocabulary.values()) != list(range(len(vocabulary))):
            raise ValueError("`vocabulary` ids must be 0 .. n-1, each used once; "
                             f"got {len(vocabulary)} tokens with other ids.")
        merges_file = merges if isinstance(merges, str) else None
        if merges_file is not None:
            merges = read_lines(merges_file)
        check_type("merges", merges, (list, tuple),
                   "a list of 'a b' strings or a path to a merges.txt file")
        merges = [m for i, m in enumerate(merges) if m and not (
            i == 0 and isinstance(m, str) and m.startswith("#version"))]
        try:
            self._check_vocabulary_and_merges(vocabulary, merges)
        except ValueError as exc:
            if merges_file is None:
                raise
            raise ValueError(f"{merges_file}: {exc}") from None
        self.vocabulary = dict(vocabulary)
        self.merges = merges
        self._tokens = sorted(vocabulary, key=vocabulary.get)

    def _check_symbols(self, vocabulary):
        """The vocabulary holds every symbol a word starts as (the bytes)."""
        missing = [c for c in bytes_to_unicode().values() if c not in vocabulary]
        if missing:
            raise ValueError(
                f"`vocabulary` lacks {len(missing)} of the 256 byte symbols "
                f"(e.g. {missing[:3]!r}): a byte-level BPE vocabulary needs them "
                "all (`compute_byte_pair_merges` always includes them).")

    def _check_vocabulary_and_merges(self, vocabulary, merges):
        self._check_symbols(vocabulary)
        for merge in merges:
            parts = merge.split(" ") if isinstance(merge, str) else None
            if parts is None or len(parts) != 2 or not all(parts):
                raise ValueError(f"`merges` rules must be 'a b', got {merge!r}.")
            if "".join(parts) not in vocabulary or not all(
                    p in vocabulary for p in parts):
                raise ValueError(f"Merge rule {merge!r} uses a token that is not "
                                 "in `vocabulary`.")
        for token in self.unsplittable_tokens or ():
            if token not in vocabulary:
                raise ValueError(f"`unsplittable_tokens` holds {token!r}, which "
                                 "is not in `vocabulary`.")

    def _id_tokens(self):
        self._check_vocabulary()
        return self._tokens

    def _token_ids(self):
        self._check_vocabulary()
        return self.vocabulary

    def set_vocabulary(self, vocabulary):
        """Sets the vocabulary, keeping the merges (use set_vocabulary_and_merges)."""
        self.set_vocabulary_and_merges(vocabulary, self.merges or [])

    def save_assets(self, dir_path):
        self._check_vocabulary()
        path = os.path.join(dir_path, VOCABULARY_FILE)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.vocabulary, f, ensure_ascii=False)
        write_lines(os.path.join(dir_path, MERGES_FILE),
                    ["#version: 0.2"] + list(self.merges))

    def load_assets(self, dir_path):
        self.set_vocabulary_and_merges(os.path.join(dir_path, VOCABULARY_FILE),
                                       os.path.join(dir_path, MERGES_FILE))

    # --- tokenize ---
    def _tables(self):
        if "tables" not in self._functions:
            with tf.init_scope():
                tokens = self._tokens
                byte_map = bytes_to_unicode()
                ranks = {}
                for rank, merge in enumerate(self.merges):
                    ranks.setdefault(merge, rank)  # a repeated rule keeps rank 1st
                self._functions["tables"] = {
                    "byte_to_symbol": _static_table(
                        [bytes([b]) for b in byte_map], list(byte_map.values()), ""),
                    "symbol_to_byte": _static_table(
                        list(byte_map.values()), [bytes([b]) for b in byte_map], ""),
                    "rank": _static_table(list(ranks), list(ranks.values()),
                                          len(self.merges), tf.int64),
                    "id": _static_table(tokens, list(range(len(tokens))), -1,
                                        tf.int64),
                    "tokens": tf.constant(tokens),
                }
        return self._functions["tables"]

    def _initial_symbols(self, words):
        """1-D words → ragged ``[words, None]`` symbols before any merge: each
        byte's printable character (GPT-2)."""
        return self._tables()["byte_to_symbol"].lookup(tf.strings.bytes_split(words))

    def _merge_function(self):
        """``_merge`` compiled once per tokenizer."""
        if "merge" not in self._functions:
            self._functions["merge"] = tf.function(
                self._merge, input_signature=[tf.TensorSpec([None], tf.string)],
                autograph=False)
        return self._functions["merge"]

    def _merge(self, words):
        """Byte-pair merges of 1-D words to a ragged [words, None] of symbols."""
        tables = self._tables()
        symbols = self._initial_symbols(words)
        num_words = tf.shape(words, tf.int64)[0]
        no_rank = len(self.merges)

        def step(values, rows, _):
            # GPT-2: merge every non-overlapping occurrence (left to right) of
            # each word's best-ranked pair.
            same_row = rows[1:] == rows[:-1]
            pairs = tf.strings.join([values[:-1], values[1:]], separator=" ")
            rank = tf.where(same_row, tables["rank"].lookup(pairs), no_rank)
            best = tf.math.unsorted_segment_min(rank, rows[:-1], num_words)
            chosen = (rank == tf.gather(best, rows[:-1])) & (rank < no_rank)
            # In a run of chosen overlapping pairs (x x x), keep every other.
            index = tf.range(tf.size(chosen, tf.int64))
            previous = tf.concat([[False], chosen[:-1]], 0)
            run_start = tf.boolean_mask(index, chosen & ~previous)
            run_id = tf.cumsum(tf.cast(chosen & ~previous, tf.int64)) - 1
            start = tf.gather(tf.concat([run_start, [0]], 0), tf.maximum(run_id, 0))
            chosen &= (index - start) % 2 == 0
            merged = tf.concat([chosen, [False]], 0)
            dropped = tf.concat([[False], chosen], 0)
            following = tf.concat([values[1:], [""]], 0)
            values = tf.where(merged, tf.strings.join([values, following]), values)
            return (tf.boolean_mask(values, ~dropped),
                    tf.boolean_mask(rows, ~dropped), tf.reduce_any(chosen))

        values, rows, _ = tf.while_loop(
            lambda values, rows, changed: changed, step,
            [symbols.flat_values, symbols.value_rowids(),
             tf.size(symbols.flat_values) > 0],
            shape_invariants=[tf.TensorShape([None]), tf.TensorShape([None]),
                              tf.TensorShape([])])
        return tf.RaggedTensor.from_value_rowids(values, rows, nrows=num_words,
                                                 validate=False)

    def _tokenize_flat(self, text):
        """1-D strings to ragged int64 ids."""
        merge = self._merge_function()
        text = to_valid_utf8(text)
        words, is_special = split_words(text, self.unsplittable_tokens or (),
                                        self.add_prefix_space)
        is_special = is_special.flat_values
        ids_table = self._tables()["id"]
        # Each distinct word is merged once; unsplittable tokens are not.
        unique, index = tf.unique(tf.where(is_special, "", words.flat_values))
        ids = tf.gather(ids_table.lookup(merge(unique)), index)
        special_ids = tf.RaggedTensor.from_row_lengths(
            ids_table.lookup(tf.boolean_mask(words.flat_values, is_special)),
            tf.cast(is_special, tf.int64), validate=False)
        ids = tf.concat([special_ids, ids], axis=1)
        return words.with_flat_values(ids).merge_dims(1, 2)

    @preprocessing_function
    def tokenize(self, inputs):
        """Strings to token ids (see the class docstring for shapes)."""
        rank = self._check_text(inputs)
        ids = self._tokenize_flat(tf.reshape(inputs, [-1]))
        ids = self._pad_to_sequence_length(tf.cast(ids, self.compute_dtype), 0)
        return ids[0] if rank == 0 else ids

    @preprocessing_function
    def _detokenize(self, inputs):
        ids = self._checked_ids(inputs)
        tables = self._tables()
        text = tf.strings.reduce_join(tf.gather(tables["tokens"], ids), axis=-1)
        chars = tf.strings.unicode_split(text, "UTF-8")
        data = tables["symbol_to_byte"].lookup(chars.flat_values)
        # A character outside the byte map (in a special token) stays as is.
        data = tf.where(data == "", chars.flat_values, data)
        return tf.strings.reduce_join(chars.with_flat_values(data), axis=-1)

    # --- the Python engine ---
    def _python_state(self):
        """What the Python engine needs, built once per vocabulary: the
        Hugging Face tokenizer when its merge loop gives GPT-2's result on
        these merges (``merge_order_is_local``), else the merge ranks for
        ``byte_pair_merge`` (and a cache of merged words); the bytes of
        each id for ``detokenize``."""
        if "python" not in self._functions:
            merges = unique_merges(self.merges)
            state = {"cache": {}, "id_bytes": self._python_id_bytes()}
            if merge_order_is_local(merges, getattr(self, "unk_token", None)):
                state["hf"] = self._python_hf_tokenizer(merges)
            else:
                state["ranks"] = {tuple(m.split(" ")): rank
                                  for rank, m in enumerate(merges)}
                state.update(self._python_splitter())
            self._functions["python"] = state
        return self._functions["python"]

    def _python_id_bytes(self):
        """The bytes each id's token stands for (characters outside the byte
        map, in special tokens, as their own UTF-8)."""
        to_byte = {symbol: bytes([b]) for b, symbol in bytes_to_unicode().items()}
        return [b"".join(to_byte.get(c) or c.encode("utf-8") for c in token)
                for token in self._tokens]

    def _python_hf_tokenizer(self, merges):
        from tokenizers import AddedToken, Tokenizer as HFTokenizer
        from tokenizers import models, pre_tokenizers

        model = models.BPE(dict(self.vocabulary),
                           [tuple(m.split(" ")) for m in merges])
        hf = HFTokenizer(model)
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(
            add_prefix_space=self.add_prefix_space, use_regex=True)
        if self.unsplittable_tokens:
            hf.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                   for t in self.unsplittable_tokens])
        return hf

    def _python_splitter(self):
        from tokenizers import pre_tokenizers

        state = {"pre_tokenizer": pre_tokenizers.ByteLevel(
            add_prefix_space=self.add_prefix_space, use_regex=True)}
        if self.unsplittable_tokens:
            state["special"] = re.compile("(" + "|".join(
                re.escape(t) for t in sorted(self.unsplittable_tokens, key=len,
                                             reverse=True)) + ")")
        return state

    def _python_word_ids(self, word, state):
        """The ids of one pre-tokenized word (byte-mapped), cached."""
        cache = state["cache"]
        ids = cache.get(word)
        if ids is None:
            if len(cache) >= 100_000:
                cache.clear()
            unk = state.get("unk_id")
            ids = cache[word] = [self.vocabulary.get(s, unk) for s in
                                 byte_pair_merge(self._python_symbols(word),
                                                 state["ranks"])]
        return ids

    def _python_symbols(self, word):
        """A word's symbols before any merge (it is already byte-mapped)."""
        return list(word)

    def _python_text_ids(self, text, state):
        """One text's ids with ``byte_pair_merge`` (merges on which Hugging
        Face's merge order differs from GPT-2's)."""
        special = state.get("special")
        pieces = special.split(text) if special is not None else [text]
        ids = []
        for i, piece in enumerate(pieces):
            if i % 2:  # an unsplittable token
                ids.append(self.vocabulary[piece])
            elif piece:
                for word, _ in state["pre_tokenizer"].pre_tokenize_str(piece):
                    ids.extend(self._python_word_ids(word, state))
        return ids

    def _python_tokenize_texts(self, texts):
        """Token ids of a list of str, as a list of 1-D arrays."""
        state = self._python_state()
        dtype = self.compute_dtype
        hf = state.get("hf")
        if hf is not None:
            encode = getattr(hf, "encode_batch_fast", hf.encode_batch)
            return [np.asarray(e.ids, dtype) for e in encode(texts)]
        return [np.asarray(self._python_text_ids(t, state), dtype) for t in texts]

    def python_tokenize(self, inputs):
        self._check_vocabulary()
        texts, scalar = python_texts(inputs)
        rows = self._python_pad_to_sequence_length(
            self._python_tokenize_texts(texts), 0)
        return rows[0] if scalar else rows

    def python_detokenize(self, inputs):
        rows = self._python_checked_ids(inputs)
        id_bytes = self._python_state()["id_bytes"]
        return [b"".join([id_bytes[i] for i in row.tolist()]).decode(
            "utf-8", errors="replace") for row in rows]

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocabulary": None,  # saved as assets (vocabulary.json, merges.txt)
            "merges": None,
            "add_prefix_space": self.add_prefix_space,
            "unsplittable_tokens": self.unsplittable_tokens,
        })
        return config
