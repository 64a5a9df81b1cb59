"""kzoo's WordPiece learner against tensorflow-text's (the reference
implementation of the same algorithm), and both preprocessing engines of
compute_word_piece_vocabulary against each other."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib

from kzoo.datasets import gensim_test_data_path
from kzoo.preprocessing.engine import engine_scope
from kzoo.tokenizers import word_piece_learner
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


def zipf_counts(num_words, seed=0):
    """Distinct words made of English-like syllables, with Zipf counts
    (the word of rank r counts ``num_words // r``), some starting with or
    holding the joiner."""
    rng = np.random.default_rng(seed)
    onsets = "b c d f g h l m n p r s t w bl ch st str th tr ##".split()
    vowels = "a e i o u ea io ou".split()
    endings = ["", "", "s", "ed", "ing", "er", "ly", "tion", "#"]
    words = set()
    while len(words) < num_words:
        syllables = rng.integers(1, 4)
        words.add("".join(onsets[rng.integers(len(onsets))]
                          + vowels[rng.integers(len(vowels))]
                          for _ in range(syllables))
                  + endings[rng.integers(len(endings))])
    words = sorted(words)
    rng.shuffle(words)
    return {w: max(1, num_words // rank) for rank, w in enumerate(words, 1)}


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


@pytest.mark.parametrize("num_words,size", [(300, 60), (1000, 250)])
@pytest.mark.parametrize("options", [
    {}, {"lower_thresh": 1}, {"lower_thresh": 1, "include_joiner_token": False},
])
def test_learner_on_many_words_equals_tensorflow_text(num_words, size, options):
    # More distinct words than tokens: the search's floor prunes candidates.
    counts = zipf_counts(num_words)
    names = {"lower_thresh": "lower_threshold"}
    ours = learn_word_piece(counts, size, RESERVED,
                            **{names.get(k, k): v for k, v in options.items()})
    assert ours == reference(counts, size, **options)


def test_joiner_inside_words_equals_tensorflow_text():
    counts = {"##": 9, "##ab": 7, "ab": 6, "a##b": 5, "#a": 4, "b##": 4,
              "####a": 3, "ab##ab": 2, "x": 1}
    for size in (12, 20, 30):
        for joiner in (True, False):
            assert learn_word_piece(
                counts, size, RESERVED, lower_threshold=1,
                include_joiner_token=joiner) == reference(
                    counts, size, lower_thresh=1, include_joiner_token=joiner)


@pytest.mark.parametrize("texts", ["tiny", "multilingual", "zipf"])
@pytest.mark.parametrize("size", [40, 150, 400])
def test_pruning_keeps_the_vocabulary(texts, size, monkeypatch):
    # The search's floor prunes candidate tokens, and the floor holds: one
    # candidate set serves every threshold the search tries.
    counts = {"tiny": lambda: tensorflow_counts(TINY),
              "multilingual": lambda: tensorflow_counts(MULTILINGUAL),
              "zipf": lambda: zipf_counts(2000)}[texts]()
    builds = []
    candidates = word_piece_learner._Candidates

    def counting(words, floor, *args):
        builds.append(floor)
        return candidates(words, floor, *args)

    monkeypatch.setattr(word_piece_learner, "_Candidates", counting)
    pruned = learn_word_piece(counts, size, RESERVED, lower_threshold=1)
    assert len(builds) == 1
    if texts == "zipf":
        assert builds[0] > 1
    monkeypatch.setattr(word_piece_learner, "_lowest_threshold",
                        lambda *args: 1)
    assert learn_word_piece(counts, size, RESERVED, lower_threshold=1) == pruned
    assert builds[-1] == 1


def test_learner_rejects_bad_counts():
    with pytest.raises(ValueError, match="positive ints.*'b' has count 0"):
        learn_word_piece({"a": 2, "b": 0}, 10)
    with pytest.raises(ValueError, match="`vocabulary_size` must be a positive"):
        learn_word_piece({"a": 2}, 0)


@pytest.mark.large
def test_learner_on_a_large_zipf_corpus_equals_tensorflow_text():
    counts = zipf_counts(20_000, seed=1)
    assert learn_word_piece(counts, 3000, RESERVED) == reference(counts, 3000)


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
