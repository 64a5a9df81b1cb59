"""ROC AUC, the tuned threshold and the per-layer scores, against hand counts."""

import numpy as np
import pytest

from kzoo.analysis.evaluation import (
    best_threshold,
    format_table,
    pair_cosines,
    roc_auc,
    score_layers,
)
from kzoo.analysis.static_word_in_context import StaticWordInContext
from kzoo.analysis.word_in_context_pairs import WordInContextPair
from kzoo.analysis.wordnet import SenseExample
from kzoo.models.word2vec.word_vectors import WordVectors


def _auc_by_counting(scores, labels):
    """Every (positive, negative) pair: 1 if ordered right, 1/2 if tied."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def test_auc_hand_computed_case():
    # Positives 0.8, 0.6, 0.6; negatives 0.6, 0.2. Pairs: (0.8 > 0.6, 0.8 > 0.2,
    # 0.6 = 0.6, 0.6 > 0.2, 0.6 = 0.6, 0.6 > 0.2) = 1 + 1 + .5 + 1 + .5 + 1 = 5 of 6.
    assert roc_auc([0.8, 0.6, 0.6, 0.6, 0.2], [1, 1, 1, 0, 0]) == pytest.approx(5 / 6)
    assert roc_auc([0.1, 0.9], [1, 0]) == 0.0
    assert roc_auc([0.5] * 4, [1, 0, 1, 0]) == 0.5  # a static model: all ties


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_equals_pair_counting_with_ties(seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 6, 40) / 5.0  # many ties
    labels = rng.integers(0, 2, 40)
    assert roc_auc(scores, labels) == pytest.approx(_auc_by_counting(scores, labels))


def test_auc_needs_both_classes():
    with pytest.raises(ValueError, match="both positive and negative pairs, got 2 and 0"):
        roc_auc([0.1, 0.2], [1, 1])


def test_threshold_is_the_best_of_all_cuts():
    rng = np.random.default_rng(0)
    scores, labels = rng.normal(size=30), rng.integers(0, 2, 30)
    threshold, accuracy = best_threshold(scores, labels)
    assert accuracy == np.mean((scores >= threshold) == labels)
    # No cut does better: try one between every two sorted scores, and both ends.
    cuts = np.concatenate([[-np.inf], np.sort(scores), [np.inf]])
    assert accuracy == max(np.mean((scores >= c) == labels) for c in cuts)


def test_score_layers_tunes_on_dev_and_skips_missing_vectors():
    dev = np.array([[0.9, 1.0], [0.8, 1.0], [0.2, 1.0], [0.1, 1.0]])
    test = np.array([[0.7, np.nan], [0.3, 1.0], [0.6, 1.0], [0.1, 1.0]])
    rows = score_layers("m", ["one", "two"], dev, [1, 1, 0, 0], test, [1, 1, 0, 0])
    one, two = rows
    assert one.threshold == pytest.approx(0.5) and one.dev_auc == 1.0
    # Test at 0.5: predictions 1, 0, 1, 0 vs labels 1, 1, 0, 0.
    assert one.accuracy == 0.5 and one.pairs == 4
    assert one.auc == pytest.approx(_auc_by_counting(test[:, 0], [1, 1, 0, 0]))
    assert two.pairs == 3 and two.auc == 0.5  # the NaN pair is left out
    table = format_table(rows)
    assert "| m | one | 4 | 0.750 | 0.500 | 0.5000 | 1.000 |" in table


def test_pair_cosines_by_hand_and_nan_for_unknown_words():
    wv = WordVectors(np.array([[3.0, 4.0], [4.0, 3.0]]), ["bank", "banks"])

    def ex(sentence, start, end):
        return SenseExample("bank", "n", "n:1", "noun.group", sentence, start, end)

    pairs = [WordInContextPair(ex("a bank", 2, 6), ex("the banks", 4, 9), 1),
             WordInContextPair(ex("a bank", 2, 6), ex("a bank", 2, 6), 1),
             WordInContextPair(ex("a loan", 2, 6), ex("the banks", 4, 9), 0)]
    cosines = pair_cosines(StaticWordInContext(wv), pairs)
    assert cosines.shape == (3, 1)
    assert cosines[0, 0] == pytest.approx(24 / 25) and cosines[1, 0] == pytest.approx(1.0)
    assert np.isnan(cosines[2, 0])  # "loan" has no vector: the pair is not scored
    with pytest.raises(ValueError, match="No pairs were given"):
        pair_cosines(StaticWordInContext(wv), [])


def test_one_static_vector_per_word_ties_exactly():
    # Unrounded, these cosines of a vector with itself are 1 +- 2e-16 by word.
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(50)]
    wv = WordVectors(rng.normal(size=(50, 7)).astype("float32"), words)
    pairs = [WordInContextPair(
        SenseExample(w, "n", "n:1", "noun.act", f"{w} here", 0, len(w)),
        SenseExample(w, "n", "n:2", "noun.act", f"there {w}", 6, 6 + len(w)), i % 2)
        for i, w in enumerate(words)]
    cosines = pair_cosines(StaticWordInContext(wv), pairs)
    assert set(cosines[:, 0].tolist()) == {1.0}
    assert roc_auc(cosines[:, 0], [p.label for p in pairs]) == 0.5
