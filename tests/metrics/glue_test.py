"""`kzoo.metrics.glue_scores` against GLUE's definitions (those of Hugging
Face evaluate's "glue" metric) computed with scikit-learn and scipy."""

import keras
import numpy as np
import pytest

from kzoo.metrics import GLUE_TASKS, glue_scores

pytestmark = pytest.mark.without_tensorflow

sklearn_metrics = pytest.importorskip("sklearn.metrics")
scipy_stats = pytest.importorskip("scipy.stats")


def _reference(task, labels, predictions):
    """Hugging Face evaluate's glue metric, task by task."""
    if task == "cola":
        return {"matthews_correlation": sklearn_metrics.matthews_corrcoef(labels, predictions)}
    if task == "stsb":
        return {"pearson": scipy_stats.pearsonr(predictions, labels)[0],
                "spearmanr": scipy_stats.spearmanr(predictions, labels)[0]}
    accuracy = float((np.asarray(labels) == np.asarray(predictions)).mean())
    if task in ("mrpc", "qqp"):
        return {"accuracy": accuracy,
                "f1": sklearn_metrics.f1_score(y_true=labels, y_pred=predictions)}
    return {"accuracy": accuracy}


@pytest.mark.parametrize("task", sorted(set(GLUE_TASKS) - {"stsb"}))
def test_classification_tasks_match_the_reference(task):
    rng = np.random.default_rng(len(task))
    num_classes = 3 if task.startswith("mnli") else 2
    for _ in range(50):
        n = int(rng.integers(2, 60))
        labels = rng.integers(0, num_classes, n)
        predictions = np.where(rng.random(n) < rng.random(), labels,
                               rng.integers(0, num_classes, n))
        expected = _reference(task, labels, predictions)
        ours = glue_scores(task, labels, predictions)
        assert list(ours) == list(expected)
        assert ours == pytest.approx(expected, abs=1e-12)
        # Logits whose argmax is the prediction, as backend tensors.
        logits = rng.normal(size=(n, num_classes)).astype("float32")
        logits[np.arange(n), predictions] = logits.max(-1) + 1.0
        assert glue_scores(task, keras.ops.convert_to_tensor(labels),
                           keras.ops.convert_to_tensor(logits)) == pytest.approx(
            expected, abs=1e-12)


def test_stsb_matches_scipy():
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(3, 300))
        labels = np.round(rng.uniform(0, 5, n) * 5) / 5  # STS-B's 0..5, with ties
        predictions = labels + rng.normal(scale=rng.uniform(0.1, 3), size=n)
        if rng.random() < 0.3:
            predictions = np.round(predictions)  # tied predictions
        expected = _reference("stsb", labels, predictions)
        ours = glue_scores("STS-B", labels, predictions[:, None].astype("float32"))
        assert list(ours) == ["pearson", "spearmanr"]
        assert ours == pytest.approx(expected, abs=2e-6)


def test_glue_spellings_name_the_same_tasks():
    labels, predictions = [0, 1, 2, 1], [0, 1, 1, 1]
    assert glue_scores("MNLI-mm", labels, predictions) == glue_scores(
        "mnli_mismatched", labels, predictions)
    assert glue_scores("SST-2", [0, 1], [1, 1]) == {"accuracy": 0.5}


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="Unknown GLUE task 'squad': use one of cola, sst2"):
        glue_scores("squad", [0], [0])
    with pytest.raises(ValueError, match=r"two classes.*\[0, 1, 2\]"):
        glue_scores("mrpc", [0, 1, 2], [0, 1, 1])
    with pytest.raises(ValueError, match="STS-B takes one score per example"):
        glue_scores("stsb", [1.0, 2.0], [[1.0, 2.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="`y_true` has 2 examples but `y_pred` has 1"):
        glue_scores("rte", [0, 1], [0])
