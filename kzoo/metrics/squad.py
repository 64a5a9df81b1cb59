"""SQuAD v1.1 exact match and F1, as the official evaluation script computes them."""

import collections
import re
import string

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text):
    """Normalize an answer string the way SQuAD's evaluation script does.

    In this order: lowercase, remove ASCII punctuation
    (`string.punctuation`), replace the articles "a", "an" and "the"
    (whole words) with a space, then collapse runs of whitespace to one
    space and strip the ends. Other characters, accented and non-Latin
    letters included, are kept as they are.

    Args:
        text: str. An answer, predicted or gold.

    Returns:
        str: the normalized answer ("" when nothing is left).

    Example:
    >>> kzoo.metrics.normalize_answer("  The Eiffel-Tower, in  PARIS! ")
    'eiffeltower in paris'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _exact_match(prediction, gold):
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _f1(prediction, gold):
    prediction_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:  # also when both are empty, as in SQuAD v1.1
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_scores(predictions, answers):
    """SQuAD v1.1 exact match and F1, in percent, over a list of questions.

    For each question, the prediction is compared with every gold answer
    after `normalize_answer`: exact match is 1 when the normalized strings
    are equal, F1 is the harmonic mean of the precision and recall of the
    shared whitespace tokens (counted with multiplicity); each takes its
    maximum over the gold answers, and both are averaged over the
    questions and multiplied by 100. This is the computation of SQuAD
    v1.1's official `evaluate-v1.1.py`, question for question.

    Empty strings follow v1.1, not v2.0: when a prediction and a gold
    answer both normalize to nothing ("", "the", "!"), their exact match
    is 1 but their F1 is 0, because they share no token. (SQuAD v2.0's
    script, and the ports that follow it, such as torchmetrics' `squad`
    and transformers 4's `squad_metrics.compute_f1`, give that pair an F1
    of 1, since v2.0 uses the empty answer for "unanswerable".)

    Args:
        predictions: list of str. One predicted answer per question.
        answers: list of lists of str. The gold answers of each question
            (at least one each), in the same order as `predictions`.

    Returns:
        dict: `{"exact_match": float, "f1": float}`, both in [0, 100].

    Raises:
        ValueError: when the two lists differ in length, when they are
            empty, or when a question has no gold answer.
        TypeError: when a prediction is not a string, or a question's gold
            answers are one string instead of a list of strings.

    Example:
    >>> kzoo.metrics.squad_scores(
    ...     ["the Eiffel Tower", "in 1889"],
    ...     [["Eiffel Tower", "Tower"], ["1889", "March 1889"]])
    {'exact_match': 50.0, 'f1': 83.33333333333333}
    """
    predictions, answers = list(predictions), list(answers)
    if len(predictions) != len(answers):
        raise ValueError(
            f"`predictions` has {len(predictions)} entries but `answers` has "
            f"{len(answers)}: pass one prediction and one list of gold "
            "answers per question, in the same order.")
    if not predictions:
        raise ValueError(
            "`predictions` and `answers` are empty: SQuAD scores are averages "
            "over questions, so pass at least one.")
    exact_match = f1 = 0.0
    for index, (prediction, gold_answers) in enumerate(zip(predictions, answers)):
        if not isinstance(prediction, str):
            raise TypeError(
                f"predictions[{index}] is a {type(prediction).__name__}, not a "
                "str: pass each predicted answer as text.")
        if isinstance(gold_answers, str):
            raise TypeError(
                f"answers[{index}] is a str, not a list of str: wrap a single "
                f"gold answer in a list ([{gold_answers!r}]).")
        gold_answers = list(gold_answers)
        if not gold_answers:
            raise ValueError(
                f"answers[{index}] is empty: every question needs at least one "
                "gold answer (drop the question, or give its answer).")
        for gold in gold_answers:
            if not isinstance(gold, str):
                raise TypeError(
                    f"answers[{index}] holds a {type(gold).__name__}, not a "
                    "str: pass the gold answers as text.")
        exact_match += max(_exact_match(prediction, gold) for gold in gold_answers)
        f1 += max(_f1(prediction, gold) for gold in gold_answers)
    total = len(predictions)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}
