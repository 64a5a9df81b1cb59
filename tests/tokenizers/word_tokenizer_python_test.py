"""The Python engine of `WordTokenizer` and `compute_word_vocabulary` gives
exactly what the TensorFlow engine gives, on fuzzed Unicode text.

Each property runs one input through both engines (`engine_scope`) and
compares ids (values, dtype, shape), text and vocabularies exactly.
"""

import os

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.preprocessing.engine import engine_scope
from kzoo.testing.without_tensorflow import check_without_tensorflow
from kzoo.tokenizers.word_tokenizer import (
    WordTokenizer,
    python_lower,
    python_split_text,
)
from kzoo.tokenizers.word_vocabulary import compute_word_vocabulary

ENGINES = ("tensorflow", "python")
# Every code point but lone surrogates (not text; see RAW_BYTES for
# invalid UTF-8), and the characters that the two engines could disagree on:
# every Unicode space (only the ASCII ones split), case pairs with special
# lowercasings (final sigma, dotted I, titlecase digraphs), controls, NUL.
CHARACTER = st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                          exclude_categories=("Cs",))
TRICKY = st.sampled_from(
    [" ", "  ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0",
     "\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f",
     "\u3000", "\u200b", "\ufeff", "\x00", "\x7f", "\ufffd", "Σ", "ΑΣ", "ΑΣ.",
     "İ", "I", "ǅ", "ẞ", "ß", "ᾼ", "ﬃ", "Ω", "K", "É", "e\u0301", "\U0001F642",
     "the", "The", "CAT", "cat", "[UNK]", "[PAD]"])
TEXT = st.lists(st.one_of(CHARACTER, TRICKY), max_size=30).map("".join)
# Invalid UTF-8 too: truncated and overlong sequences, encoded surrogates.
RAW_BYTES = st.lists(st.one_of(
    TEXT.map(lambda t: t.encode("utf-8")),
    st.sampled_from([b"\xff", b"\xc0\x80", b"\xe2\x82", b"\xf0\x9f\x98",
                     b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe9"])),
    max_size=6).map(b"".join)
BATCH = st.one_of(st.lists(TEXT, max_size=6), st.lists(RAW_BYTES, max_size=6))
def _no_trailing_nul(token):
    return token + "." if token.endswith("\x00") else token


# Split tokens. The TensorFlow engine's conversion of nested Python lists
# of equal lengths goes through a numpy str array, which drops a token's
# trailing NUL characters: none ends in one here.
TOKENS = st.lists(st.lists(st.one_of(TEXT, TRICKY).map(_no_trailing_nul),
                           max_size=6), max_size=5)
OPTIONS = st.fixed_dictionaries({
    "lowercase": st.booleans(),
    "sequence_length": st.one_of(st.none(), st.integers(0, 8)),
    "pad_token": st.sampled_from([None, "[PAD]"]),
})


def _vocabulary(texts, keep):
    """`[PAD]`, `[UNK]` and every `keep`-th distinct word of `texts` (as
    either engine splits it, lowercased or not, so both cases occur)."""
    words = []
    for text in texts:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        for word in python_split_text(text) + python_split_text(python_lower(text)):
            if word not in words and word not in ("[PAD]", "[UNK]"):
                words.append(word)
    return ["[PAD]", "[UNK]"] + words[::keep]


def _value(x):
    """An output in a comparable form: lists stay lists (ragged ids, text),
    tensors become (dtype, shape, values)."""
    if isinstance(x, (list, str)):
        return x
    x = np.asarray(keras.ops.convert_to_numpy(x))
    return (x.dtype.name, x.shape, x.tolist())


def _both(fn):
    """`fn()` under each engine: a dict engine → value or error."""
    results = {}
    for name in ENGINES:
        with engine_scope(name):
            try:
                results[name] = _value(fn())
            except (TypeError, ValueError) as error:
                results[name] = type(error)
    return results


def _assert_same(fn):
    results = _both(fn)
    assert results["python"] == results["tensorflow"]
    return results["python"]


@settings(max_examples=80)
@given(BATCH, OPTIONS, st.integers(1, 3))
def test_tokenize_batches_of_text(batch, options, keep):
    tokenizer = WordTokenizer(vocabulary=_vocabulary(batch, keep), **options)
    ids = _assert_same(lambda: tokenizer(batch))
    # And back: detokenize gives the same text on both engines.
    _assert_same(lambda: tokenizer.detokenize(ids if isinstance(ids, list)
                                              else ids[2]))


@settings(max_examples=60)
@given(st.one_of(TEXT, RAW_BYTES), OPTIONS, st.integers(1, 3))
def test_tokenize_one_text(text, options, keep):
    tokenizer = WordTokenizer(vocabulary=_vocabulary([text], keep), **options)
    ids = _assert_same(lambda: tokenizer(text))
    _assert_same(lambda: tokenizer.detokenize(ids[2]))


@settings(max_examples=60)
@given(TOKENS, OPTIONS, st.integers(1, 3))
def test_tokenize_token_lists(tokens, options, keep):
    """Split tokens are looked up as they are (spaces inside kept)."""
    vocabulary = ["[PAD]", "[UNK]"] + sorted(
        {t for row in tokens for t in row} - {"[PAD]", "[UNK]"})[::keep]
    tokenizer = WordTokenizer(vocabulary=vocabulary, **options)
    _assert_same(lambda: tokenizer(tokens))


@settings(max_examples=60)
@given(st.lists(st.lists(st.integers(0, 5), max_size=6), max_size=4),
       st.sampled_from([None, "[PAD]"]))
def test_detokenize_ids(ids, pad_token):
    tokenizer = WordTokenizer(vocabulary=["[PAD]", "[UNK]", "a", "b c", "", "é"],
                              pad_token=pad_token)
    _assert_same(lambda: tokenizer.detokenize(ids))
    if ids:
        _assert_same(lambda: tokenizer.detokenize(ids[0]))
        dense = [row + [0] * (6 - len(row)) for row in ids]
        _assert_same(lambda: tokenizer.detokenize(np.asarray(dense, np.int64)))


def test_bad_inputs_fail_the_same_way():
    tokenizer = WordTokenizer(vocabulary=["[UNK]", "a"])
    assert _assert_same(lambda: tokenizer([1, 2])) is TypeError
    assert _assert_same(lambda: tokenizer(np.zeros([2, 2]))) is TypeError
    assert _assert_same(lambda: tokenizer.detokenize([[0.5]])) is TypeError
    with engine_scope("python"):
        with pytest.raises(ValueError, match="negative ids"):
            tokenizer.detokenize([[0, -1]])
        with pytest.raises(ValueError, match="vocabulary size 2"):
            tokenizer.detokenize([[0, 2]])
        with pytest.raises(ValueError, match="rank 0, 1 or 2"):
            tokenizer([[["a"]]])


@settings(max_examples=60)
@given(st.lists(st.one_of(TEXT, RAW_BYTES), min_size=1, max_size=8),
       st.integers(1, 2), st.one_of(st.none(), st.integers(3, 8)), st.booleans())
def test_compute_word_vocabulary(lines, min_count, max_size, lowercase):
    def compute():
        try:
            return compute_word_vocabulary(
                lines, min_count=min_count, max_size=max_size,
                lowercase=lowercase, special_tokens=("[UNK]", "the"))
        except ValueError as error:
            return str(error)
    results = {}
    for name in ENGINES:
        with engine_scope(name):
            results[name] = compute()
    assert results["python"] == results["tensorflow"]


def test_compute_word_vocabulary_from_a_file_in_chunks(tmp_path, monkeypatch):
    """A file with invalid UTF-8 and Windows line ends, read in chunks."""
    import kzoo.tokenizers.word_vocabulary as module

    monkeypatch.setattr(module, "_CHUNK_LINES", 3)
    path = os.path.join(tmp_path, "corpus.txt")
    with open(path, "wb") as f:
        f.write(b"The cat\r\nsat on \xff the\x0bmat\n\nCAF\xc3\x89 caf\xe9\n"
                b"\xce\xa3\xce\xa3 the cat\n" * 3 + b"last line without end")
    results = {}
    for name in ENGINES:
        with engine_scope(name):
            results[name] = compute_word_vocabulary(path, lowercase=True)
    assert results["python"] == results["tensorflow"]
    assert results["python"][0][:3] == ["[UNK]", "the", "cat"]


@pytest.mark.without_tensorflow
@pytest.mark.backends("jax", "torch")
def test_without_tensorflow():
    output = check_without_tensorflow("""
        import numpy as np
        import kzoo
        from kzoo.preprocessing.engine import engine
        assert engine() == "python"
        vocabulary, counts = kzoo.tokenizers.compute_word_vocabulary(
            ["The cat sat", "the dog sat on the mat"], min_count=2,
            lowercase=True)
        tokenizer = kzoo.tokenizers.WordTokenizer(
            vocabulary=vocabulary, counts=counts, lowercase=True)
        print(vocabulary, counts)
        print(tokenizer(["The cat sat", "a dog"]))
        print(tokenizer.detokenize([[1, 2, 0]]))
        padded = kzoo.tokenizers.WordTokenizer(
            vocabulary=["[PAD]"] + vocabulary, pad_token="[PAD]",
            sequence_length=4)
        print(np.asarray(padded(["the sat the sat the"])).tolist())
    """)
    assert output.splitlines() == [
        "['[UNK]', 'the', 'sat'] [4, 3, 2]",
        "[[1, 0, 2], [0, 0]]",
        "['the sat [UNK]']",
        "[[2, 3, 2, 3]]",
    ]
