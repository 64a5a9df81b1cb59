"""The Python engine of GPT1Tokenizer against TensorFlow's.

Hypothesis draws Unicode text (cased and accented words, CJK, emoji,
punctuation, digits, controls, every kind of whitespace) and arbitrary ids;
both engines must give the same ids (unknown symbols included), padding and
strings.
"""

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from kzoo.models.gpt.gpt1_tokenizer import GPT1Tokenizer
from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.preprocessing_layer import numpy_outputs
from kzoo.testing import on_both_engines as both
from kzoo.testing.test_case import assert_all_equal, run_preprocessing_layer_test
from kzoo.testing.without_tensorflow import check_without_tensorflow
from kzoo.tokenizers.byte_pair_tokenizer import merge_order_is_local

CORPUS = ["The quick brown fox jumps over the lazy dog.",
          "Hello, world! It's 2024: naïve café résumé.",
          "Numbers 12345 and 3.14159 were seen\non two lines.",
          "ΣΊΣΥΦΟΣ σίσυφος Привет мир 東京 タワー",
          "a b c d e f g h i j k l m n o p q r s t u v w x y z"] * 10
FRAGMENTS = [
    "The", "quick", "BROWN", "fox", "lazy", "dog", "hello", "world", "It's",
    "naïve", "Café", "RÉSUMÉ", "e\u0301", "ΣΊΣΥΦΟΣ", "Σ", "İ", "ß", "Привет",
    "東京", "タワー", "😀", "☃", "12345", "3.14", "٣", ",", ".", "!", "?", "'",
    "-", "$", "«", "»", " ", "  ", "\t", "\n", "\n\n", "\r\n", "\u00a0",
    "\u2003", "\u3000", "\u200b", "\x00", "\x01", "\x7f", "\ufffd", "</w>",
    "<unk>",
]
CHARACTER = st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                          exclude_categories=("Cs",))
TEXT = st.lists(st.one_of(st.sampled_from(FRAGMENTS), CHARACTER),
                max_size=25).map("".join)
BATCH = st.lists(TEXT, min_size=1, max_size=8)

_CACHE = {}


def vocabulary_and_merges():
    """A GPT-1-style vocabulary (``</w>`` word ends, ``<unk>``) trained by
    Hugging Face tokenizers, the library behind OpenAIGPTTokenizer."""
    if "vocabulary" not in _CACHE:
        bpe = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
        bpe.normalizer = normalizers.BertNormalizer(lowercase=True)
        bpe.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        bpe.train_from_iterator(CORPUS, trainers.BpeTrainer(
            vocab_size=250, special_tokens=["<unk>"], end_of_word_suffix="</w>"))
        state = json.loads(bpe.to_str())["model"]
        merges = [m if isinstance(m, str) else " ".join(m) for m in state["merges"]]
        _CACHE["vocabulary"] = (dict(state["vocab"]), merges)
    return _CACHE["vocabulary"]


def tokenizer(shuffled=False):
    if shuffled not in _CACHE:
        vocabulary, merges = vocabulary_and_merges()
        if shuffled:  # merges Hugging Face's BPE orders differently
            merges = list(merges)
            random.Random(0).shuffle(merges)
            assert not merge_order_is_local(merges)
        _CACHE[shuffled] = GPT1Tokenizer(vocabulary, merges)
    return _CACHE[shuffled]



@settings(max_examples=40)
@given(BATCH)
def test_ids_match_tensorflow(texts):
    layer = tokenizer()
    assert "hf" in layer._python_state()
    expected, actual = both(lambda: layer(texts))
    assert_all_equal(actual, expected, repr(texts))


@settings(max_examples=25)
@given(BATCH)
def test_python_merge_loop_matches_tensorflow(texts):
    layer = tokenizer(shuffled=True)
    assert "hf" not in layer._python_state()
    expected, actual = both(lambda: layer(texts))
    assert_all_equal(actual, expected, repr(texts))


@settings(max_examples=30)
@given(st.lists(st.lists(st.integers(0, 10_000), max_size=8), min_size=1, max_size=8))
def test_detokenize_matches_tensorflow(ids):
    layer = tokenizer()
    size = layer.vocabulary_size()
    ids = [[i % size for i in row] for row in ids]
    expected, actual = both(lambda: layer.detokenize(ids))
    assert actual == expected
    expected, actual = both(lambda: layer.detokenize(ids[0]))
    assert isinstance(actual, str) and actual == expected


def test_unknown_symbols_and_whitespace_tokens():
    # "☃" is not in the vocabulary; a token of whitespace is stripped at the
    # ends of the text as tf.strings.strip does (ASCII whitespace only).
    vocabulary = {"<unk>": 0, "l": 1, "o": 2, "w</w>": 3, "lo": 4, "low</w>": 5,
                  "!</w>": 6, "\x0b</w>": 7, "\u00a0": 8, "\u3000</w>": 9}
    layer = GPT1Tokenizer(vocabulary, ["l o", "lo w</w>"])
    expected, actual = both(lambda: layer(["Low!", "lów ☃ ?", "LOW☃w"]))
    assert_all_equal(actual, expected)
    assert_all_equal(actual, [[5, 6], [5, 0, 0], [4, 0, 0, 3]])  # "w" is unknown
    ids = [[7, 5, 7], [8, 5, 9], [9, 8], [3, 0]]
    expected, actual = both(lambda: layer.detokenize(ids))
    assert actual == expected


@pytest.mark.parametrize("sequence_length", [None, 3, 30])
def test_preprocessing_layer(sequence_length):
    # Also checks the Python engine against TensorFlow's (run_preprocessing_layer_test).
    vocabulary, merges = vocabulary_and_merges()
    eager = run_preprocessing_layer_test(
        GPT1Tokenizer,
        {"vocabulary": vocabulary, "merges": merges,
         "sequence_length": sequence_length},
        ["The quick fox!", "", "Café ☃ 東京", "a b c d e f g"],
    )
    if sequence_length is not None:
        with engine_scope("python"), numpy_outputs():
            row = tokenizer()("The quick fox!").tolist()
            layer = GPT1Tokenizer(vocabulary, merges, sequence_length=sequence_length)
            assert layer(["x", ""]).dtype == np.int32
            assert layer("x").shape == (sequence_length,)
        padded = (row + [0] * sequence_length)[:sequence_length]
        assert np.asarray(eager)[0].tolist() == padded


def test_without_tensorflow():
    vocabulary, merges = vocabulary_and_merges()
    output = check_without_tensorflow(f"""
        from kzoo.preprocessing.engine import engine
        from kzoo.models.gpt.gpt1_tokenizer import GPT1Tokenizer
        assert engine() == "python"
        vocabulary, merges = {vocabulary!r}, {merges!r}
        layer = GPT1Tokenizer(vocabulary, merges)
        ids = layer(["The quick BROWN fox!", "", "Café ☃"])
        print(ids)
        print(layer.detokenize(ids))
        # GPT-2's merge loop in Python (merges in another order).
        print(GPT1Tokenizer(vocabulary, merges[::-1])(["The quick fox"]))
    """, backend="jax")  # Keras on TensorFlow needs TensorFlow
    layer = tokenizer()
    with engine_scope("tensorflow"):
        ids = layer(["The quick BROWN fox!", "", "Café ☃"])
        text = layer.detokenize(ids)
        reverse = GPT1Tokenizer(*vocabulary_and_merges()[:1],
                                vocabulary_and_merges()[1][::-1])(["The quick fox"])
    assert output.splitlines() == [str(ids), str(text), str(reverse)]
