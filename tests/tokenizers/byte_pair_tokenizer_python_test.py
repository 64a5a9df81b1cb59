"""The Python engine of BytePairTokenizer and GPTTokenizer against TensorFlow's.

Hypothesis draws Unicode text (words, contractions, digits, punctuation,
accents, CJK, emoji, every kind of whitespace and runs of it, NUL, special
tokens and arbitrary code points) and arbitrary ids; both engines must give
the same ids, padding, dtypes and strings.
"""

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import ByteLevelBPETokenizer

from kzoo.models.gpt.gpt_tokenizer import GPTTokenizer
from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.preprocessing_layer import numpy_outputs
from kzoo.testing import on_both_engines as both
from kzoo.testing.test_case import assert_all_equal, to_numpy
from kzoo.testing.without_tensorflow import check_without_tensorflow
from kzoo.tokenizers.byte_pair_tokenizer import (
    BytePairTokenizer,
    bytes_to_unicode,
    merge_order_is_local,
)

END = "<|endoftext|>"
CORPUS = [
    "The quick brown fox jumps over the lazy dog. Don't stop!",
    "I'm here, you're there; we've 123 4567 numbers, they'll see.",
    "café naïve résumé déjà 東京タワー 😀🎉 emoji 🇫🇷",
    "tabs\tand\nnewlines\n\n  spaces   here\u00a0and\u3000there",
    "Hello world hello World HELLO 2024-01-01 $100.50",
] * 20
FRAGMENTS = [
    "the", "The", "quick", "hello", "world", "HELLO", "lower", "lowest", "x",
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'", "don't", "I'm",
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\x0b", "\x0c", "\x85",
    "\u00a0", "\u1680", "\u2003", "\u2009", "\u2028", "\u2029", "\u202f",
    "\u205f", "\u3000", "\u200b", "0", "123", "4567", "٣", "½", "!", "?", ".",
    ",", ";", "...", "--", "$", "(", ")", "\"", "café", "naïve", "e\u0301",
    "東京", "タワー", "😀", "🎉", "🇫🇷", "👍🏽", "\x00", "\x01", "\ufffd", "Ġ",
    END, "<|endoftext", "|>", "<|start|>",
]
CHARACTER = st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                          exclude_categories=("Cs",))
TEXT = st.lists(st.one_of(st.sampled_from(FRAGMENTS), CHARACTER),
                max_size=25).map("".join)
BATCH = st.lists(TEXT, min_size=1, max_size=8)

_VOCABULARY = []
_TOKENIZERS = {}


def vocabulary_and_merges():
    """A byte-level vocabulary (400 tokens) trained by Hugging Face's
    tokenizers on CORPUS, with ``<|endoftext|>``."""
    if not _VOCABULARY:
        trainer = ByteLevelBPETokenizer()
        trainer.train_from_iterator(CORPUS, vocab_size=400, min_frequency=1,
                                    special_tokens=[END], show_progress=False)
        state = json.loads(trainer.to_str())["model"]
        merges = [m if isinstance(m, str) else " ".join(m)
                  for m in state["merges"]]
        _VOCABULARY.append((dict(state["vocab"]), merges))
    return _VOCABULARY[0]


def tokenizer(add_prefix_space=False, unsplittable=True, sequence_length=None):
    key = (add_prefix_space, unsplittable, sequence_length)
    if key not in _TOKENIZERS:
        vocabulary, merges = vocabulary_and_merges()
        _TOKENIZERS[key] = BytePairTokenizer(
            vocabulary, merges, add_prefix_space=add_prefix_space,
            unsplittable_tokens=(END,) if unsplittable else None,
            sequence_length=sequence_length)
    return _TOKENIZERS[key]


def non_local_tokenizer():
    """A tokenizer whose merges are shuffled (rules that use a token rank
    before the rule that makes it), so that the Python engine runs GPT-2's
    merge loop, not Hugging Face's, whose order differs there."""
    if "non_local" not in _TOKENIZERS:
        vocabulary, merges = vocabulary_and_merges()
        merges = list(merges)
        random.Random(0).shuffle(merges)
        assert not merge_order_is_local(merges)
        _TOKENIZERS["non_local"] = BytePairTokenizer(
            vocabulary, merges, unsplittable_tokens=(END,))
    return _TOKENIZERS["non_local"]



@settings(max_examples=40)
@given(BATCH, st.booleans(), st.booleans())
def test_ids_match_tensorflow(texts, add_prefix_space, unsplittable):
    layer = tokenizer(add_prefix_space, unsplittable)
    assert "hf" in layer._python_state()  # Hugging Face's BPE runs
    expected, actual = both(lambda: layer(texts))
    assert_all_equal(actual, expected, repr(texts))


@settings(max_examples=30)
@given(BATCH)
def test_python_merge_loop_matches_tensorflow(texts):
    layer = non_local_tokenizer()
    assert "hf" not in layer._python_state()  # GPT-2's loop in Python runs
    expected, actual = both(lambda: layer(texts))
    assert_all_equal(actual, expected, repr(texts))


def test_merge_order_where_hugging_face_differs():
    # GPT-2 merges every "a b" of "abab" before looking at "ab a"; Hugging
    # Face's BPE would merge "ab a" as soon as the first "ab" forms.
    symbols = list(bytes_to_unicode().values())
    vocabulary = {s: i for i, s in enumerate(symbols)}
    vocabulary.update({"ab": 256, "aba": 257})
    merges = ["ab a", "a b"]
    assert not merge_order_is_local(merges)
    layer = BytePairTokenizer(vocabulary, merges)
    expected, actual = both(lambda: layer(["abab", "ababa", "aab"]))
    assert_all_equal(actual, expected)
    assert_all_equal(actual, [[256, 256], [256, 257], [symbols.index("a"), 256]])


@settings(max_examples=30)
@given(st.lists(st.lists(st.integers(0, 399), max_size=8), min_size=1, max_size=8))
def test_detokenize_matches_tensorflow(ids):
    # Arbitrary ids, including bytes that are not whole UTF-8 characters
    # (U+FFFD replaces them) and the special token.
    layer = tokenizer()
    expected, actual = both(lambda: layer.detokenize(ids))
    assert isinstance(actual, list) and all(isinstance(t, str) for t in actual)
    assert actual == expected
    expected, actual = both(lambda: layer.detokenize(ids[0]))
    assert isinstance(actual, str) and actual == expected
    expected, actual = both(lambda: layer.detokenize(np.asarray(ids[0], "int32")))
    assert actual == expected


@settings(max_examples=60)
@given(BATCH, st.booleans())
def test_detokenize_round_trips(texts, add_prefix_space):
    layer = tokenizer(add_prefix_space)
    with engine_scope("python"):
        text = layer.detokenize(layer(texts))
    if add_prefix_space:  # each piece between special tokens gets a space
        return
    assert text == texts


@settings(max_examples=30)
@given(st.lists(st.binary(max_size=12), min_size=1, max_size=8))
def test_invalid_utf8_matches_tensorflow(data):
    # Bytes that are not valid UTF-8 are replaced by U+FFFD on both engines.
    layer = tokenizer()
    expected, actual = both(lambda: layer(data))
    assert_all_equal(actual, expected, repr(data))


@pytest.mark.parametrize("sequence_length", [1, 6, 40])
def test_dense_output_scalar_input_and_dtypes(sequence_length):
    layer = tokenizer(sequence_length=sequence_length)
    texts = ["hello world, the quick brown fox", "", "café 😀" + END, "a"]
    for inputs in (texts, texts[0], texts[1], np.asarray(texts, object), []):
        expected, actual = both(lambda: layer(inputs))
        assert_all_equal(actual, expected, repr(inputs))
        assert to_numpy(actual).shape == to_numpy(expected).shape
    with engine_scope("python"), numpy_outputs():
        dense = layer(texts)
        assert dense.dtype == np.int32 and dense.shape == (4, sequence_length)
        assert layer(texts[0]).shape == (sequence_length,)
        assert layer([]).shape == (0, sequence_length)
    with engine_scope("python"), numpy_outputs():
        ragged = tokenizer()(texts)
        assert isinstance(ragged, list) and ragged[1] == []
        assert tokenizer()("a b").dtype == np.int32
        int64 = BytePairTokenizer(*vocabulary_and_merges(), dtype="int64")
        assert int64("a b").dtype == np.int64


def test_unsplittable_tokens():
    layer, plain = tokenizer(), tokenizer(unsplittable=False)
    end = layer.token_to_id(END)
    texts = [END, "hi" + END, END + END + " x", "<|endoftext", END[:-1] + END]
    expected, actual = both(lambda: layer(texts))
    assert_all_equal(actual, expected)
    assert actual[0] == [end] and actual[2][:2] == [end, end]
    expected, actual = both(lambda: plain(texts))
    assert_all_equal(actual, expected)
    assert end not in actual[0]


def test_errors():
    layer = tokenizer()
    with engine_scope("python"):
        with pytest.raises(TypeError, match="`inputs` must be strings"):
            layer(np.asarray([1, 2]))
        with pytest.raises(ValueError, match="1-D batch of strings"):
            layer([["a"], ["b"]])
        with pytest.raises(ValueError, match="negative ids"):
            layer.detokenize([[1, -1]])
        with pytest.raises(ValueError, match="vocabulary size"):
            layer.detokenize([[1, 400]])
        with pytest.raises(ValueError, match="No vocabulary"):
            BytePairTokenizer()(["a"])


@settings(max_examples=25)
@given(BATCH)
def test_gpt_tokenizer_matches_tensorflow(texts):
    vocabulary, merges = vocabulary_and_merges()
    if "gpt" not in _TOKENIZERS:
        vocabulary = {**vocabulary, "<|start|>": len(vocabulary)}
        _TOKENIZERS["gpt"] = GPTTokenizer(vocabulary, merges)
    layer = _TOKENIZERS["gpt"]
    expected, actual = both(lambda: layer(texts))
    assert_all_equal(actual, expected, repr(texts))
    expected, actual = both(lambda: layer.detokenize(layer(texts)))
    assert actual == expected


def test_without_tensorflow():
    vocabulary, merges = vocabulary_and_merges()
    output = check_without_tensorflow(f"""
        import keras
        from kzoo.preprocessing.engine import engine
        from kzoo.models.gpt.gpt_tokenizer import GPTTokenizer
        from kzoo.tokenizers.byte_pair_tokenizer import BytePairTokenizer
        assert engine() == "python"
        vocabulary, merges = {vocabulary!r}, {merges!r}
        texts = ["Hello world, don't 123!", "", "café 😀<|endoftext|>x"]
        layer = GPTTokenizer(vocabulary, merges, sequence_length=8)
        dense = keras.ops.convert_to_numpy(layer(texts))
        assert dense.shape == (3, 8), dense.shape
        ids = BytePairTokenizer(vocabulary, merges,
                                unsplittable_tokens=("<|endoftext|>",))(texts)
        assert isinstance(ids, list) and ids[1] == []
        assert layer.detokenize(ids) == texts, layer.detokenize(ids)
        assert layer.detokenize(ids[0]) == texts[0]
        # GPT-2's merge loop in Python (merges Hugging Face's BPE orders
        # differently), and the pre-tokenizer it uses.
        from kzoo.tokenizers.byte_pair_tokenizer import bytes_to_unicode
        odd = {{s: i for i, s in enumerate(bytes_to_unicode().values())}}
        odd.update({{"ab": 256, "aba": 257}})
        print(BytePairTokenizer(odd, ["ab a", "a b"])(["abab x"]))
    """, backend="jax")  # Keras on TensorFlow needs TensorFlow
    symbols = list(bytes_to_unicode().values())
    assert output.strip() == str([[256, 256, symbols.index("Ġ"),
                                   symbols.index("x")]])
