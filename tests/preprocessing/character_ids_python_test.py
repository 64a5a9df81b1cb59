"""`CharacterIds` on the Python engine gives exactly the TensorFlow engine's
ids and masks (values, dtypes, shapes) on fuzzed Unicode text and tokens."""

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.preprocessing.character_ids import CharacterIds
from kzoo.preprocessing.engine import engine_scope
from kzoo.testing.without_tensorflow import check_without_tensorflow

# Every code point but lone surrogates, and the characters and words the
# encoding treats apart: every Unicode space (only ASCII ones split), the
# sentence boundaries, multi-byte characters cut by the word limit.
CHARACTER = st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                          exclude_categories=("Cs",))
TRICKY = st.sampled_from(
    [" ", "  ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\xa0",
     "\u2003", "\u3000", "\x00", "\ufffd", "<S>", "</S>", " <S> ", " </S> ",
     "<S", "S>", "é" * 7, "€" * 5, "\U0001F642" * 3, "x" * 12, "日本語"])
TEXT = st.lists(st.one_of(CHARACTER, TRICKY), max_size=30).map("".join)
RAW_BYTES = st.lists(st.one_of(
    TEXT.map(lambda t: t.encode("utf-8")),
    st.sampled_from([b"\xff", b"\xc0\x80", b"\xe2\x82", b"\xf0\x9f\x98",
                     b"\xed\xa0\x80", b" \xe9 "])),
    max_size=6).map(b"".join)
BATCH = st.one_of(st.lists(TEXT, max_size=5), st.lists(RAW_BYTES, max_size=5))
def _no_trailing_nul(token):
    return token + "." if token.endswith("\x00") else token


# Split tokens. The TensorFlow engine's conversion of nested Python lists
# of equal lengths goes through a numpy str array, which drops a token's
# trailing NUL characters: none ends in one here.
TOKENS = st.lists(st.lists(st.one_of(TEXT, TRICKY).map(_no_trailing_nul),
                           max_size=5), max_size=4)
OPTIONS = st.fixed_dictionaries({
    "max_word_length": st.sampled_from([3, 4, 6, 9, 50]),
    "add_sentence_boundaries": st.booleans(),
    "sequence_length": st.one_of(st.none(), st.integers(2, 7)),
})


def _value(outputs):
    arrays = {k: np.asarray(keras.ops.convert_to_numpy(v)) for k, v in outputs.items()}
    return {k: (a.dtype.name, a.shape, a.tolist()) for k, a in arrays.items()}


def _assert_same(options, inputs):
    results = {}
    for name in ("tensorflow", "python"):
        with engine_scope(name):
            results[name] = _value(CharacterIds(**options)(inputs))
    assert results["python"] == results["tensorflow"]
    return results["python"]


@settings(max_examples=80)
@given(BATCH, OPTIONS)
def test_sentences(batch, options):
    _assert_same(options, batch)


@settings(max_examples=60)
@given(TOKENS, OPTIONS)
def test_token_lists(tokens, options):
    _assert_same(options, tokens)


@settings(max_examples=40)
@given(st.one_of(TEXT, RAW_BYTES), OPTIONS)
def test_one_sentence(text, options):
    out = _assert_same(options, text)
    assert len(out["character_ids"][1]) == 2  # no batch axis


def test_the_documented_example_and_an_empty_batch():
    with engine_scope("python"):
        out = CharacterIds(max_word_length=6)(["hi there", "a"])
        empty = CharacterIds(max_word_length=6, sequence_length=4)([])
    assert np.asarray(out["character_ids"]).tolist()[1] == [
        [259, 98, 260, 261, 261, 261], [0, 0, 0, 0, 0, 0]]
    assert np.asarray(out["padding_mask"]).tolist() == [[True, True], [True, False]]
    assert np.asarray(empty["character_ids"]).shape == (0, 4, 6)
    _assert_same({"max_word_length": 6}, [])
    _assert_same({"add_sentence_boundaries": True}, [])


@pytest.mark.without_tensorflow
@pytest.mark.backends("jax", "torch")
def test_without_tensorflow():
    output = check_without_tensorflow("""
        import numpy as np
        import kzoo
        layer = kzoo.preprocessing.CharacterIds(
            max_word_length=6, add_sentence_boundaries=True, sequence_length=4)
        out = layer(["a bé", "x y z w"])
        print(np.asarray(out["character_ids"])[0].tolist())
        print(np.asarray(out["padding_mask"]).tolist())
    """)
    assert output.splitlines() == [
        "[[259, 257, 260, 261, 261, 261], [259, 98, 260, 261, 261, 261], "
        "[259, 99, 196, 170, 260, 261], [259, 258, 260, 261, 261, 261]]",
        "[[True, True, True, True], [True, True, True, True]]",
    ]
