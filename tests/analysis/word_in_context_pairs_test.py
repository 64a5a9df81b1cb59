"""The WordNet pair builder: balance, split by lemma, determinism."""

import collections

import pytest

from kzoo.analysis.word_in_context_pairs import build_word_in_context_pairs
from kzoo.analysis.wordnet import SenseExample


def _examples():
    """Six lemmas, each with examples in 3 synsets and 2 supersenses."""
    out = []
    for lemma in ("bank", "play", "run", "line", "head", "cut"):
        for synset, supersense, count in (("1", "noun.group", 3), ("2", "noun.group", 2),
                                          ("3", "noun.object", 2)):
            for k in range(count):
                sentence = f"{lemma} sense {synset} example {k}"
                out.append(SenseExample(lemma, "n", f"n:{lemma}{synset}", supersense,
                                        sentence, 0, len(lemma)))
    return out


def _key(pair):
    return (pair.first.sentence, pair.second.sentence, pair.label)


def test_balanced_per_lemma_and_split_by_lemma():
    pairs = build_word_in_context_pairs(_examples(), max_pairs_per_lemma=2, seed=3)
    per_lemma = collections.Counter()
    for pair in pairs.dev + pairs.test:
        assert pair.first.lemma == pair.second.lemma and pair.first.pos == pair.second.pos
        assert pair.label == int(pair.first.synset == pair.second.synset)
        per_lemma[(pair.first.lemma, pair.label)] += 1
    # Same-synset pairs per lemma: 3 + 1 = 4; capped at 2, balanced 2 / 2.
    assert set(per_lemma.values()) == {2} and len(per_lemma) == 12
    dev = {p.first.lemma for p in pairs.dev}
    test = {p.first.lemma for p in pairs.test}
    assert dev.isdisjoint(test) and len(dev) == 3 and len(test) == 3


def test_coarse_negatives_differ_in_supersense():
    pairs = build_word_in_context_pairs(_examples(), max_pairs_per_lemma=10,
                                        dev_fraction=0.0)
    negatives = [p for p in pairs.test if p.label == 0]
    assert negatives and all(p.first.supersense != p.second.supersense for p in negatives)
    # Same-synset pairs per lemma: 3 + 1 + 1 = 5; coarse negatives: 5 x 2 = 10.
    assert len(pairs.test) == 6 * (5 + 5)
    fine = build_word_in_context_pairs(_examples(), max_pairs_per_lemma=10,
                                       dev_fraction=0.0, coarse=False)
    assert any(p.first.supersense == p.second.supersense
               for p in fine.test if p.label == 0)


def test_same_seed_same_pairs_other_seed_other_pairs():
    a = build_word_in_context_pairs(_examples(), seed=0)
    b = build_word_in_context_pairs(list(reversed(_examples())), seed=0)
    c = build_word_in_context_pairs(_examples(), seed=1)
    assert [_key(p) for p in a.dev + a.test] == [_key(p) for p in b.dev + b.test]
    assert ([_key(p) for p in a.dev], [_key(p) for p in a.test]) != (
        [_key(p) for p in c.dev], [_key(p) for p in c.test])


def test_statistics_counted_by_hand():
    # "bank": synset 1 twice (one same pair), synset 3 once (two different
    # pairs, one drawn); "cut": one synset only (no pair).
    def ex(lemma, synset, supersense, sentence):
        return SenseExample(lemma, "n", synset, supersense, sentence, 0, len(lemma))

    examples = [ex("bank", "n:1", "noun.group", "bank one"),
                ex("bank", "n:1", "noun.group", "bank two"),
                ex("bank", "n:3", "noun.object", "bank three"),
                ex("cut", "n:4", "noun.act", "cut one"),
                ex("cut", "n:4", "noun.act", "cut two")]
    pairs = build_word_in_context_pairs(examples, dev_fraction=0.0)
    assert pairs.statistics() == {
        "dev": {"pairs": 0, "same": 0, "different": 0, "lemmas": 0, "senses": 0},
        "test": {"pairs": 2, "same": 1, "different": 1, "lemmas": 1, "senses": 2},
    }


def test_same_form_pairs_only_identical_spellings():
    examples = [
        SenseExample("play", "v", "v:1", "verb.competition", "they play chess", 5, 9),
        SenseExample("play", "v", "v:1", "verb.competition", "we played chess", 3, 9),
        SenseExample("play", "v", "v:1", "verb.competition", "kids play ball", 5, 9),
        SenseExample("play", "v", "v:2", "verb.creation", "play the piano", 0, 4),
        SenseExample("play", "v", "v:2", "verb.creation", "she played Bach", 4, 10),
    ]
    pairs = build_word_in_context_pairs(examples, dev_fraction=0.0, same_form=True,
                                        max_pairs_per_lemma=5)
    assert pairs.test
    for p in pairs.test:
        first = p.first.sentence[p.first.start:p.first.end].lower()
        assert first == p.second.sentence[p.second.start:p.second.end].lower()


def test_bad_arguments():
    with pytest.raises(ValueError, match="`dev_fraction` must be in"):
        build_word_in_context_pairs(_examples(), dev_fraction=1.5)
    with pytest.raises(ValueError, match="`max_pairs_per_lemma` must be a positive int"):
        build_word_in_context_pairs(_examples(), max_pairs_per_lemma=0)
    assert build_word_in_context_pairs([]).statistics()["test"]["pairs"] == 0
