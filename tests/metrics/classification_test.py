"""`kzoo.metrics.classification_scores`, `matthews_correlation` and
`binary_f1` against scikit-learn's `accuracy_score`, `f1_score` (macro and
binary) and `matthews_corrcoef` on seeded random labels."""

import warnings

import keras
import numpy as np
import pytest

from kzoo.metrics import binary_f1, classification_scores, matthews_correlation

pytestmark = pytest.mark.without_tensorflow

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def _reference(y_true, y_pred, num_classes=None):
    labels = None if num_classes is None else list(range(num_classes))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # classes with no sample: 0, with a warning
        return {
            "accuracy": float(sklearn_metrics.accuracy_score(y_true, y_pred)),
            "macro_f1": float(sklearn_metrics.f1_score(
                y_true, y_pred, average="macro", labels=labels)),
        }


@pytest.mark.parametrize("with_num_classes", [False, True])
def test_random_labels_match_sklearn(with_num_classes):
    rng = np.random.default_rng(int(with_num_classes))
    for _ in range(300):
        num_classes = int(rng.integers(2, 7))
        n = int(rng.integers(1, 40))
        # Some classes absent from the labels, the predictions, or both.
        present = rng.choice(num_classes, size=rng.integers(1, num_classes + 1),
                             replace=False)
        y_true = rng.choice(present, size=n)
        y_pred = np.where(rng.random(n) < 0.6, y_true, rng.integers(0, num_classes, n))
        k = num_classes if with_num_classes else None
        expected = _reference(y_true, y_pred, k)
        assert classification_scores(y_true, y_pred, num_classes=k) == pytest.approx(
            expected, abs=1e-12)
        # Scores whose argmax is the prediction give the same numbers.
        scores = rng.normal(size=(n, num_classes))
        scores[np.arange(n), y_pred] = scores.max(-1) + 1.0
        assert classification_scores(y_true, scores, num_classes=k) == pytest.approx(
            expected, abs=1e-12)


def test_backend_tensors_and_column_labels():
    rng = np.random.default_rng(7)
    y_true = rng.integers(0, 4, 64)
    logits = rng.normal(size=(64, 4)).astype("float32")
    expected = _reference(y_true, logits.argmax(-1))
    assert classification_scores(
        keras.ops.convert_to_tensor(y_true[:, None]),
        keras.ops.convert_to_tensor(logits)) == pytest.approx(expected, abs=1e-12)
    assert classification_scores(list(y_true), list(logits.argmax(-1))) == (
        pytest.approx(expected, abs=1e-12))


def test_multiple_choice_accuracy_is_the_compiled_accuracy():
    # SWAG-style: the argmax over the choices, as Keras' accuracy counts it.
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, 50)
    choice_scores = rng.normal(size=(50, 4)).astype("float32")
    accuracy = keras.metrics.SparseCategoricalAccuracy()
    accuracy.update_state(labels, choice_scores)
    assert classification_scores(labels, choice_scores)["accuracy"] == pytest.approx(
        float(accuracy.result()), abs=1e-6)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="`y_true` has 3 examples but `y_pred` has 2"):
        classification_scores([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="empty"):
        classification_scores([], [])
    with pytest.raises(ValueError, match=r"class id 3, outside \[0, 3\)"):
        classification_scores([0, 1, 2], [0, 1, 3], num_classes=3)
    with pytest.raises(ValueError, match="non-integer"):
        classification_scores([0, 1], [0.5, 1.0])
    with pytest.raises(ValueError, match=r"`y_true` has shape \(2, 3\)"):
        classification_scores(np.eye(2, 3), [0, 1])


def test_matthews_correlation_matches_sklearn():
    rng = np.random.default_rng(11)
    for _ in range(300):
        num_classes = int(rng.integers(2, 6))
        n = int(rng.integers(1, 50))
        y_true = rng.integers(0, num_classes, n)
        agreement = rng.random()  # from chance to nearly perfect predictions
        y_pred = np.where(rng.random(n) < agreement, y_true,
                          rng.integers(0, num_classes, n))
        if rng.random() < 0.1:
            y_pred = np.full(n, y_pred[0])  # a constant prediction: 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a single class: sklearn warns, gives 0
            expected = float(sklearn_metrics.matthews_corrcoef(y_true, y_pred))
        assert matthews_correlation(y_true, y_pred) == pytest.approx(expected, abs=1e-12)
        scores = rng.normal(size=(n, num_classes))
        scores[np.arange(n), y_pred] = scores.max(-1) + 1.0
        assert matthews_correlation(keras.ops.convert_to_tensor(y_true),
                                    scores) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("positive_label", [0, 1])
def test_binary_f1_matches_sklearn(positive_label):
    rng = np.random.default_rng(positive_label)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        y_true = (rng.random(n) < rng.random()).astype(int)
        y_pred = np.where(rng.random(n) < rng.random(), y_true, 1 - y_true)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = float(sklearn_metrics.f1_score(y_true, y_pred,
                                                      pos_label=positive_label))
        assert binary_f1(y_true, y_pred, positive_label=positive_label) == (
            pytest.approx(expected, abs=1e-12)), (y_true, y_pred)


def test_binary_f1_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"two classes.*\[0, 1, 2\].*classification_scores"):
        binary_f1([0, 1, 2], [0, 1, 1])
    with pytest.raises(ValueError, match=r"positive_label=2 is not one of the classes \[0, 1\]"):
        binary_f1([0, 1], [1, 1], positive_label=2)
    with pytest.raises(ValueError, match="non-integer"):
        matthews_correlation(["pos", "neg"], [0, 1])
