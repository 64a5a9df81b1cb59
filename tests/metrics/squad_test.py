"""`kzoo.metrics.squad_scores` and `normalize_answer` against torchmetrics'
port of SQuAD v1.1's official evaluation script
(`torchmetrics.functional.text.squad`), on seeded random answers."""

import numpy as np
import pytest

from kzoo.metrics import normalize_answer, squad_scores

pytestmark = pytest.mark.without_tensorflow



@pytest.fixture
def squad_reference():
    """torchmetrics' port of the official script (the comparisons skip
    without it; the other tests run)."""
    return pytest.importorskip(
        "torchmetrics.functional.text.squad",
        reason="torchmetrics ports SQuAD's evaluation script: pip install torchmetrics")

# Pieces of answers: articles in every case, ASCII punctuation alone and
# inside words, punctuation that is not ASCII (kept by the script), accented,
# Greek, CJK and dotted-I letters, and whitespace of several kinds.
PIECES = [
    "the", "The", "THE", "a", "A", "an", "An", "another", "theatre", "anthem",
    "Eiffel", "tower", "Tower", "Paris", "1889", "1,889", "U.S.", "don't",
    "rock-and-roll", "(1976)", "$5", "50%", "café", "CAFÉ", "naïve", "Straße",
    "İstanbul", "Ωμέγα", "東京", "«quoted»", "“curly”", "，", "—", "!", "?!",
    ".", "'", "-", "the.", "a-", "", " ", "  ", "\t", "\n", "\u00a0",
]


def _answer(rng):
    words = rng.choice(PIECES, size=rng.integers(0, 6))
    separators = rng.choice([" ", " ", " ", "", "  ", "\t"], size=len(words))
    return "".join(w + s for w, s in zip(words, separators))


def _cases(seed, count):
    rng = np.random.default_rng(seed)
    predictions, answers = [], []
    for _ in range(count):
        golds = [_answer(rng) for _ in range(rng.integers(1, 4))]
        if rng.random() < 0.3:  # a gold answer, reworded or exact
            prediction = rng.choice(golds) + rng.choice(["", ".", " the", "!"])
        else:
            prediction = _answer(rng)
        predictions.append(str(prediction))
        answers.append(golds)
    return predictions, answers


def _reference(squad_reference, predictions, answers):
    """SQuAD scores from torchmetrics, as floats."""
    preds = [{"prediction_text": p, "id": str(i)} for i, p in enumerate(predictions)]
    target = [{"answers": {"answer_start": [0] * len(golds), "text": golds},
               "id": str(i)} for i, golds in enumerate(answers)]
    return {k: float(v) for k, v in squad_reference.squad(preds, target).items()}


def _both_empty(prediction, gold):
    return not normalize_answer(prediction) and not normalize_answer(gold)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_normalize_answer_matches_the_script(seed, squad_reference):
    predictions, answers = _cases(seed, 200)
    texts = predictions + [gold for golds in answers for gold in golds]
    for text in texts:
        assert normalize_answer(text) == squad_reference._normalize_text(text), text


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_question_matches_the_script(seed, squad_reference):
    # One question at a time: exact match and F1 equal the reference's,
    # except for SQuAD v1.1's empty answers (tested below).
    predictions, answers = _cases(seed, 200)
    compared = 0
    for prediction, golds in zip(predictions, answers):
        if any(_both_empty(prediction, gold) for gold in golds):
            continue
        ours = squad_scores([prediction], [golds])
        reference = _reference(squad_reference, [prediction], [golds])
        assert ours == pytest.approx(reference, rel=1e-6, abs=1e-4), (prediction, golds)
        compared += 1
    assert compared > 150


@pytest.mark.parametrize("seed", [3, 4])
def test_averages_over_questions_match_the_script(seed, squad_reference):
    predictions, answers = _cases(seed, 300)
    kept = [(p, g) for p, g in zip(predictions, answers)
            if not any(_both_empty(p, gold) for gold in g)]
    predictions, answers = [p for p, _ in kept], [g for _, g in kept]
    ours = squad_scores(predictions, answers)
    assert 0 < ours["exact_match"] < ours["f1"] < 100  # the cases are mixed
    assert ours == pytest.approx(_reference(squad_reference, predictions, answers), rel=1e-5)


@pytest.mark.parametrize("prediction, gold", [
    ("", ""), ("the", ""), ("!", "a an the"), ("", " . "), ("An", "THE")])
def test_empty_answers_follow_squad_v1_1(prediction, gold, squad_reference):
    # Both normalize to "": equal strings (exact match), but no shared token,
    # so F1 is 0 in SQuAD v1.1. The reference follows SQuAD v2.0 here
    # ("unanswerable" predicted for an unanswerable question: F1 1).
    ours = squad_scores([prediction], [[gold]])
    reference = _reference(squad_reference, [prediction], [[gold]])
    assert ours["exact_match"] == reference["exact_match"]
    assert ours["f1"] == 0.0 and reference["f1"] == 100.0
    # One side empty: 0 in both versions.
    assert squad_scores([prediction], [[gold + " x"]]) == _reference(
        squad_reference, [prediction], [[gold + " x"]])


def test_documented_example_of_the_reference():
    # torchmetrics' own docstring example (SQuAD question 56e10a3be3433e1400422b22).
    assert squad_scores(["1976"], [["1976"]]) == {"exact_match": 100.0, "f1": 100.0}


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="`predictions` has 2 entries but `answers` has 1"):
        squad_scores(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match="empty"):
        squad_scores([], [])
    with pytest.raises(ValueError, match=r"answers\[1\] is empty"):
        squad_scores(["a", "b"], [["a"], []])
    with pytest.raises(TypeError, match=r"answers\[0\] is a str.*\['Paris'\]"):
        squad_scores(["Paris"], ["Paris"])
    with pytest.raises(TypeError, match=r"predictions\[0\] is a NoneType"):
        squad_scores([None], [["Paris"]])
    with pytest.raises(TypeError, match=r"answers\[0\] holds a int"):
        squad_scores(["1"], [[1]])
