import collections
import os
import re

import gensim
import numpy as np
import pytest
import tensorflow as tf

from kzoo.testing.test_case import assert_all_equal
from kzoo.testing.test_case import run_preprocessing_layer_test
from kzoo.tokenizers.word_tokenizer import WordTokenizer

LEE = os.path.join(
    os.path.dirname(gensim.__file__), "test", "test_data", "lee_background.cor"
)
VOCABULARY = ["[PAD]", "[UNK]", "the", "cat", "sat", "on", "mat", "caf\ufffd"]


def lee_lines(n=40):
    with open(LEE, encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(n)]


def python_vocabulary(lines, min_count):
    """The vocabulary by hand: counts, then (-count, first occurrence)."""
    counter = collections.Counter(w for line in lines for w in line.split())
    words = [w for w, n in counter.items() if n >= min_count]
    words.sort(key=lambda w: -counter[w])  # stable sort keeps first occurrence
    return ["[UNK]"] + words


def test_matches_a_python_dict_lookup_on_real_text():
    lines = lee_lines()
    vocabulary = python_vocabulary(lines, min_count=3)
    index = {w: i for i, w in enumerate(vocabulary)}
    expected = [[index.get(w, 0) for w in line.split()] for line in lines]
    tokenizer = WordTokenizer(vocabulary=vocabulary)
    assert_all_equal(tokenizer(lines), expected)
    # One string gives one 1-D list.
    assert_all_equal(tokenizer(lines[3]), expected[3])
    # detokenize joins with spaces, out-of-vocabulary words as [UNK].
    text = [" ".join(vocabulary[i] for i in row) for row in expected]
    assert tokenizer.detokenize(expected) == text


def test_tf_data_on_every_backend():
    lines = lee_lines(12)
    vocabulary = python_vocabulary(lines, min_count=2)
    index = {w: i for i, w in enumerate(vocabulary)}
    tokenizer = WordTokenizer(vocabulary=vocabulary, sequence_length=16)
    ds = tf.data.Dataset.from_tensor_slices(lines).batch(5).map(tokenizer)
    actual = np.concatenate([batch.numpy() for batch in ds])
    for row, line in zip(actual, lines):
        ids = [index.get(w, 0) for w in line.split()][:16]
        assert row.tolist() == ids + [0] * (16 - len(ids))


def test_preprocessing_layer_checks():
    run_preprocessing_layer_test(
        WordTokenizer,
        {"vocabulary": VOCABULARY, "counts": list(range(8)), "lowercase": True},
        ["The cat  sat\ton the MAT", "a dog", ""],
        expected_output=[[2, 3, 4, 5, 2, 6], [1, 1], []],
    )


def test_lowercase_is_unicode_aware():
    tokenizer = WordTokenizer(
        vocabulary=["[UNK]", "élan", "ÉLAN", "straße"], lowercase=True)
    text = "ÉLAN Élan STRAßE"
    expected = [["[UNK]", "élan", "ÉLAN", "straße"].index(w) for w in text.lower().split()]
    assert_all_equal(tokenizer(text), expected)
    assert_all_equal(WordTokenizer(vocabulary=["[UNK]", "ÉLAN"])(text), [1, 0, 0])


def test_invalid_utf8_is_replaced():
    tokenizer = WordTokenizer(vocabulary=VOCABULARY)
    raw = b"caf\xe9 the \xff\xfe"
    expected = [VOCABULARY.index(w) if w in VOCABULARY else 1
                for w in raw.decode("utf-8", errors="replace").split()]
    assert expected[0] == 7
    assert_all_equal(tokenizer(tf.constant([raw])), [expected])


def test_empty_inputs_give_empty_outputs():
    tokenizer = WordTokenizer(vocabulary=VOCABULARY)
    assert_all_equal(tokenizer(""), [])
    assert_all_equal(tokenizer(["", "  \n"]), [[], []])
    assert_all_equal(tokenizer([]), [])
    padded = WordTokenizer(vocabulary=VOCABULARY, pad_token="[PAD]",
                           sequence_length=3)
    assert_all_equal(padded([""]), np.zeros((1, 3), "int32"))
    assert tuple(padded([]).shape) == (0, 3)
    assert padded.detokenize([[0, 0, 0]]) == [""]


def test_pre_split_tokens_are_not_split_again():
    tokenizer = WordTokenizer(vocabulary=VOCABULARY, lowercase=True)
    assert_all_equal(tokenizer([["The", "cat sat"], ["mat"]]), [[2, 1], [6]])
    # A rectangular list of lists is a dense [batch, tokens] input.
    assert_all_equal(tokenizer([["on", "the"], ["cat", ""]]), [[5, 2], [3, 1]])
    ragged = tf.ragged.constant([["sat"], []])
    assert_all_equal(tokenizer(ragged), [[4], []])


def test_sequence_length_pads_with_pad_token_and_truncates():
    tokenizer = WordTokenizer(
        vocabulary=["[UNK]", "[PAD]", "the", "cat"], pad_token="[PAD]",
        sequence_length=3)
    out = tokenizer(["the cat the cat", "cat"])
    assert_all_equal(out, [[2, 3, 2], [3, 1, 1]])
    assert tokenizer.detokenize(out) == ["the cat the", "cat"]
    assert tokenizer.detokenize([3, 1]) == "cat"


def test_counts_are_saved_as_an_asset(tmp_path):
    tokenizer = WordTokenizer(vocabulary=VOCABULARY, counts=np.arange(8))
    tokenizer.save_assets(str(tmp_path))
    assert (tmp_path / "counts.txt").read_text().split() == [str(i) for i in range(8)]
    restored = WordTokenizer.from_config(tokenizer.get_config())
    restored.load_assets(str(tmp_path))
    assert restored.get_vocabulary() == VOCABULARY
    assert restored.counts == tuple(range(8))
    # From files, and without counts.
    plain = WordTokenizer(vocabulary=str(tmp_path / "vocabulary.txt"))
    assert plain.counts is None and plain.vocabulary_size() == 8
    assert plain.token_to_id("mat") == 6


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"vocabulary": ["a", "b"]}, "`oov_token` '\\[UNK\\]' is not in `vocabulary`"),
        ({"vocabulary": VOCABULARY, "pad_token": "<pad>"}, "`pad_token`"),
        ({"vocabulary": ["[UNK]", "a", "a"]}, "duplicate tokens: \\['a'\\]"),
        ({"vocabulary": VOCABULARY, "counts": [1, 2]}, "`counts` has 2 entries"),
        ({"vocabulary": VOCABULARY, "counts": [-1] * 8}, "non-negative"),
        ({"vocabulary": []}, "non-empty list"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WordTokenizer(**kwargs)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="No vocabulary is set on this WordTokenizer"):
        WordTokenizer()(["a"])
    tokenizer = WordTokenizer(vocabulary=VOCABULARY)
    with pytest.raises(TypeError, match="`inputs` must be strings"):
        tokenizer.tokenize(np.array([1, 2]))
    with pytest.raises(TypeError, match="lowercase"):
        WordTokenizer(vocabulary=VOCABULARY, lowercase="yes")
    with pytest.raises(tf.errors.InvalidArgumentError, match="vocabulary size"):
        tokenizer.detokenize([[1, 8]])


def test_ascii_whitespace_only_separates_words():
    tokenizer = WordTokenizer(vocabulary=["[UNK]", "a", "b", "a\u00a0b"])
    text = "a\u00a0b a\tb\r\na\x0bb\x0c"
    expected = [[1, 2, 3][["a", "b", "a\u00a0b"].index(w)]
                for w in re.split(r"[ \t\n\r\x0b\x0c]+", text) if w]
    assert_all_equal(tokenizer(text), expected)
