"""Property tests (hypothesis) of the tokenizers on arbitrary Unicode.

Control characters, NUL, combining marks, emoji, right-to-left scripts, lone
surrogates (escaped as text, or passed as the invalid UTF-8 bytes they
encode to) and 10,000-character words: nothing crashes, offsets stay inside
the string, and the byte-level BPE round-trips exactly. The examples are
the same in every run (``derandomize``, see conftest.py); set
``HYPOTHESIS_PROFILE=explore`` to search new ones.
"""

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.tokenizers import (
    BytePairTokenizer,
    WordPieceTokenizer,
    WordTokenizer,
    compute_byte_pair_merges,
    compute_word_piece_vocabulary,
)
from kzoo.testing import to_numpy

CORPUS = ["The quick brown fox jumps over the lazy dog.",
          "Café naïve résumé — déjà vu!", "Привет, мир", "שלום עולם", "مرحبا بالعالم",
          "日本語のテキスト", "emoji 🙂👍🏽 and flags 🇫🇷", "tabs\tand\nnew lines"]

# Every code point, surrogates included (escaped before use, see _escaped).
ANY_CHARACTER = st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                              exclude_categories=())
# Characters that stress tokenizers: controls, NUL, combining marks, emoji
# (with skin-tone modifiers and joiners), RTL marks and letters, odd spaces.
TRICKY = st.sampled_from(
    ["\x00", "\x01", "\x1b", "\x7f", "\u0085", "\t", "\n", "\r", "\x0b", "\x0c", " ",
     "\u00a0", "\u2028", "\u3000", "\u200b", "\u200d", "\ufeff", "\u0301", "\u0308",
     "\u20dd", "e\u0301", "\U0001F642", "\U0001F44D\U0001F3FD", "\U0001F1EB\U0001F1F7",
     "\u200f", "\u202e", "\u05e9", "\u0645", "\ufffd", "\U0010FFFF", "\ud800",
     "\udfff", "[CLS]", "##", "<|endoftext|>", "Ġ", "a", "É", "ß", "İ", "日"])
TEXT = st.lists(st.one_of(ANY_CHARACTER, TRICKY), max_size=40).map("".join)
LONG_WORD = st.builds(lambda c, n: c * n, st.one_of(ANY_CHARACTER, TRICKY),
                      st.integers(5000, 10000))


def _escaped(text):
    """A valid str: lone surrogates written as their escapes ("\\ud800")."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _raw_bytes(text):
    """The bytes a str encodes to, lone surrogates as invalid UTF-8."""
    return text.encode("utf-8", "surrogatepass")


BATCH = st.lists(st.one_of(TEXT, TEXT.map(_escaped)), min_size=1, max_size=6)

_word_piece = None
_byte_pair = None


def word_piece():
    global _word_piece
    if _word_piece is None:
        _word_piece = WordPieceTokenizer(compute_word_piece_vocabulary(
            CORPUS * 5, vocabulary_size=300))
    return _word_piece


def byte_pair():
    global _byte_pair
    if _byte_pair is None:
        vocabulary, merges = compute_byte_pair_merges(CORPUS * 5, vocabulary_size=400)
        _byte_pair = BytePairTokenizer(vocabulary, merges,
                                       unsplittable_tokens=("<|endoftext|>",))
    return _byte_pair


def _rows(ids):
    return [list(map(int, row)) for row in to_numpy(ids).tolist()]


def _check_word_piece(texts):
    tokenizer = word_piece()
    inputs = [_raw_bytes(t) for t in texts]
    out = tokenizer.tokenize_with_offsets(inputs)
    ids, starts, ends = (_rows(out[k]) for k in
                         ("token_ids", "start_offsets", "end_offsets"))
    size = tokenizer.vocabulary_size()
    for data, row, start, end in zip(inputs, ids, starts, ends):
        assert len(row) == len(start) == len(end)
        assert all(0 <= i < size for i in row)
        assert all(0 <= s < e <= len(data) for s, e in zip(start, end)), (data, start, end)
        assert start == sorted(start) and end == sorted(end)
    assert ids == _rows(tokenizer(inputs))  # with and without offsets agree
    # Detokenizing never fails, and what it gives is stable: when no word was
    # out of vocabulary, tokenizing it again gives the same ids.
    again = _rows(tokenizer(to_numpy(tokenizer.detokenize(ids)).tolist()))
    for row, row_again in zip(ids, again):
        if tokenizer.oov_token_id not in row:
            assert row_again == row


@settings(max_examples=150)
@given(BATCH)
def test_word_piece_offsets_stay_inside_the_text(texts):
    _check_word_piece(texts)


@settings(max_examples=10)
@given(st.lists(LONG_WORD, min_size=1, max_size=2))
def test_word_piece_long_words(texts):
    _check_word_piece(texts)


def test_word_piece_word_longer_than_the_limit_is_one_unknown_token():
    tokenizer = word_piece()  # max_input_chars_per_word=100
    out = tokenizer.tokenize_with_offsets(["a" * 10000, "é" * 101 + " fox"])
    unk = tokenizer.oov_token_id
    assert _rows(out["token_ids"])[0] == [unk]
    assert _rows(out["token_ids"])[1][0] == unk
    assert _rows(out["start_offsets"])[0] == [0]
    assert _rows(out["end_offsets"])[0] == [10000]
    assert _rows(out["end_offsets"])[1][0] == 202  # bytes of the long word


def _check_byte_pair_round_trip(texts):
    tokenizer = byte_pair()
    ids = _rows(tokenizer(texts))
    size = len(tokenizer.get_vocabulary())
    assert all(0 <= i < size for row in ids for i in row)
    back = [t.decode("utf-8") if isinstance(t, bytes) else t
            for t in to_numpy(tokenizer.detokenize(ids)).tolist()]
    assert back == texts  # byte-level: every string comes back exactly
    # The end-of-text token written in the text keeps its id.
    end = tokenizer.token_to_id("<|endoftext|>")
    for text, row in zip(texts, ids):
        assert row.count(end) == text.count("<|endoftext|>")


@settings(max_examples=150)
@given(BATCH.map(lambda texts: [_escaped(t) for t in texts]))
def test_byte_pair_round_trips_exactly(texts):
    _check_byte_pair_round_trip(texts)


@settings(max_examples=10)
@given(st.lists(LONG_WORD.map(_escaped), min_size=1, max_size=2))
def test_byte_pair_long_words(texts):
    _check_byte_pair_round_trip(texts)


@settings(max_examples=100)
@given(BATCH)
def test_byte_pair_invalid_utf8_becomes_replacement_characters(texts):
    tokenizer = byte_pair()
    inputs = [_raw_bytes(t) for t in texts]
    back = to_numpy(tokenizer.detokenize(_rows(tokenizer(inputs)))).tolist()
    expected = [b.decode("utf-8", "replace").encode("utf-8") for b in inputs]
    # Invalid bytes become U+FFFD (one per maximal invalid subsequence, as
    # Python's "replace" does); valid text is unchanged.
    assert [b if isinstance(b, bytes) else b.encode() for b in back] == expected


# === WordTokenizer ===
WORDS = ["[UNK]", "the", "café", "🙂", "שלום", "e\u0301", "\x00", "日本語"]
_ASCII_SPACE = "[ \t\n\x0b\x0c\r]+"


@settings(max_examples=300)
@given(st.lists(st.one_of(st.sampled_from(WORDS[1:] + [" ", "\t", "\n"]), TEXT,
                          TEXT.map(_escaped)), max_size=12).map("".join))
def test_word_tokenizer_matches_a_python_split_and_lookup(text):
    tokenizer = WordTokenizer(vocabulary=WORDS)
    data = _raw_bytes(text)
    valid = data.decode("utf-8", "replace")  # invalid bytes become U+FFFD
    words = [w for w in re.split(_ASCII_SPACE, valid) if w]
    index = {w: i for i, w in enumerate(WORDS)}
    expected = [index.get(w, 0) for w in words]
    assert _rows(tokenizer([data])) == [expected]
    if all(w in index for w in words) and words:
        # In-vocabulary words separated by single spaces come back exactly.
        assert tokenizer.detokenize([expected]) == [" ".join(words)]


def test_word_tokenizer_handles_long_and_empty_text():
    tokenizer = WordTokenizer(vocabulary=WORDS, sequence_length=3, pad_token="the")
    long = "x" * 10000
    ids = to_numpy(tokenizer([long, "", " \t\n", "café " * 2000]))
    assert np.array_equal(ids, [[0, 1, 1], [1, 1, 1], [1, 1, 1], [2, 2, 2]])
