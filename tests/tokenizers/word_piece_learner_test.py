"""kzoo's WordPiece learner against tensorflow-text's (the reference
implementation of the same algorithm), and both preprocessing engines of
compute_word_piece_vocabulary against each other."""

import pytest
import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib

from kzoo.datasets import gensim_test_data_path
from kzoo.preprocessing.engine import engine_scope
from kzoo.tokenizers.word_piece_learner import learn_word_piece
from kzoo.tokenizers.word_piece_tokenizer import split_words_with_offsets
from kzoo.tokenizers.word_piece_vocabulary import (
    compute_word_piece_vocabulary,
    count_words,
    python_word_counts,
    text_batches,
)

RESERVED = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TINY = ["The cat sat.", "The bat sat!"] * 20
MULTILINGUAL = [
    "Ein Café in Zürich serviert naïve Crêpes; ÉCOLE, élève, Ñandú.",
    "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다.",
    "Emoji 😀 and 🚀🚀 appear; so do Ωμέγα, ΣΟΦΙΑ and русский текст.",
    "Tokenizers split words into sub-word pieces: token-izers! 3.14 + 42",
    "Ἀρχὴ ἥμισυ παντός — ﬁne ligatures, İstanbul, straße, ǅ.",
] * 7


def lee_lines():
    with open(gensim_test_data_path("lee_background.cor"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def tensorflow_counts(texts, **kwargs):
    def split(text):
        return split_words_with_offsets(text, **kwargs)[0]

    return {w.decode("utf-8"): c
            for w, c in count_words(text_batches(texts), split).items()}


def reference(counts, size, **kwargs):
    return wordpiece_tokenizer_learner_lib.learn(
        list(counts.items()), size, RESERVED, **kwargs)


@pytest.mark.parametrize("texts,size", [(TINY, 40), (MULTILINGUAL, 150),
                                        (MULTILINGUAL, 400)])
@pytest.mark.parametrize("options", [
    {"lower_thresh": 1}, {}, {"lower_thresh": 1, "include_joiner_token": False},
    {"lower_thresh": 1, "max_unique_chars": 20, "max_token_length": 6},
])
def test_learner_equals_tensorflow_text(texts, size, options):
    counts = tensorflow_counts(texts)
    names = {"lower_thresh": "lower_threshold",
             "max_unique_chars": "max_unique_characters"}
    ours = learn_word_piece(counts, size, RESERVED,
                            **{names.get(k, k): v for k, v in options.items()})
    assert ours == reference(counts, size, **options)


def test_learner_without_words():
    assert learn_word_piece({}, 10, RESERVED) == RESERVED
    assert learn_word_piece({"[UNK]": 3}, 10, RESERVED, lower_threshold=1) == RESERVED


@pytest.mark.parametrize("lowercase", [True, False])
@pytest.mark.parametrize("split_on_punctuation", [True, False])
def test_engines_count_the_same_words(lowercase, split_on_punctuation):
    options = {"lowercase": lowercase, "strip_accents": None,
               "split_on_punctuation": split_on_punctuation}
    assert python_word_counts(MULTILINGUAL, **options) == tensorflow_counts(
        MULTILINGUAL, **options)


@pytest.mark.parametrize("texts,size", [(TINY, 40), (MULTILINGUAL, 150)])
@pytest.mark.parametrize("lowercase", [True, False])
def test_engines_return_the_same_vocabulary(texts, size, lowercase):
    counts = tensorflow_counts(texts, lowercase=lowercase)
    expected = reference(counts, size, lower_thresh=1)[:size]
    for name in ("python", "tensorflow"):
        with engine_scope(name):
            assert compute_word_piece_vocabulary(
                texts, size, lowercase=lowercase) == expected, name


@pytest.mark.large
@pytest.mark.parametrize("size", [3000, 8000])
def test_lee_corpus_equals_tensorflow_text(size):
    lines = lee_lines()
    counts = tensorflow_counts(lines)
    assert python_word_counts(lines, True, None, True) == counts
    expected = reference(counts, size, lower_thresh=1)[:size]
    for name in ("python", "tensorflow"):
        with engine_scope(name):
            assert compute_word_piece_vocabulary(lines, size) == expected, name
