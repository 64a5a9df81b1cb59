"""Class-prediction scores as scikit-learn computes them: accuracy, macro
F1, binary F1 and Matthews' correlation."""

import math

import keras
import numpy as np


def _as_numpy(x):
    if isinstance(x, (np.ndarray, list, tuple)):
        return np.asarray(x)
    return np.asarray(keras.ops.convert_to_numpy(x))


def class_ids(y_true, y_pred, num_classes=None):
    """`(y_true, y_pred)` as int64 arrays of shape `[n]`, checked: labels of
    shape `[n]` or `[n, 1]`, predictions the same or `[n, classes]` scores
    (their argmax); the message of each error names the fix."""
    y_true, y_pred = _as_numpy(y_true), _as_numpy(y_pred)
    if y_true.ndim == 2 and y_true.shape[-1] == 1:
        y_true = y_true[:, 0]
    if y_true.ndim != 1:
        raise ValueError(
            f"`y_true` has shape {y_true.shape}: pass one integer class id per "
            "example (shape [n]); for one-hot labels, pass their argmax.")
    if y_pred.ndim == 2 and y_pred.shape[-1] != 1:
        y_pred = np.argmax(y_pred, axis=-1)
    elif y_pred.ndim == 2:
        y_pred = y_pred[:, 0]
    if y_pred.ndim != 1:
        raise ValueError(
            f"`y_pred` has shape {y_pred.shape}: pass one class id per example "
            "(shape [n]) or one row of class scores per example "
            "(shape [n, num_classes]).")
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"`y_true` has {len(y_true)} examples but `y_pred` has "
            f"{len(y_pred)}: pass one prediction per example.")
    if len(y_true) == 0:
        raise ValueError("`y_true` and `y_pred` are empty: pass at least one example.")
    for name, ids in (("y_true", y_true), ("y_pred", y_pred)):
        if not np.issubdtype(ids.dtype, np.integer):
            if not np.issubdtype(ids.dtype, np.number) or not np.all(
                    np.equal(np.mod(ids, 1), 0)):
                raise ValueError(
                    f"`{name}` holds non-integer values: pass class ids, or "
                    "scores of shape [n, num_classes].")
        if num_classes is not None and (ids.min() < 0 or ids.max() >= num_classes):
            raise ValueError(
                f"`{name}` holds the class id {ids.min() if ids.min() < 0 else ids.max()}"
                f", outside [0, {num_classes}): pass the right `num_classes` "
                "(or None to average over the classes that occur).")
    return y_true.astype(np.int64), y_pred.astype(np.int64)


def classification_scores(y_true, y_pred, num_classes=None):
    """Accuracy and macro-averaged F1 of a classifier's predictions.

    Accuracy is the share of examples whose predicted class is the true
    one. Macro F1 is the unweighted mean over the classes of each class's
    F1, `2 * tp / (2 * tp + fp + fn)` (0 for a class that is neither true
    nor predicted anywhere), so rare classes weigh as much as frequent
    ones. The classes averaged over are those that occur in `y_true` or in
    the predictions, or all of `0 .. num_classes - 1` when `num_classes` is
    given: the same numbers as `sklearn.metrics.accuracy_score` and
    `sklearn.metrics.f1_score(average="macro")` (with
    `labels=range(num_classes)` in the second case).

    Multiple-choice benchmarks (SWAG, HellaSwag, ...) report plain
    accuracy of the argmax over the choices: pass a `MultipleChoice` task's
    `[batch, num_choices]` scores as `y_pred` and read `"accuracy"` (the
    `"accuracy"` metric that `MultipleChoice.compile()` adds by default
    is the same number); nothing else is needed for them.

    Args:
        y_true: integer class ids, shape `[n]` (or `[n, 1]`).
        y_pred: predicted class ids of the same shape, or scores (logits
            or probabilities) of shape `[n, num_classes]`, whose argmax is
            the prediction. Numpy arrays, lists and backend tensors all
            work.
        num_classes: int or None. Average the F1 over exactly these
            classes; ids must then lie in `[0, num_classes)`.

    Returns:
        dict: `{"accuracy": float, "macro_f1": float}`, both in [0, 1].

    Raises:
        ValueError: when the numbers of examples differ, when there are
            none, when the shapes do not fit the description above, or when
            an id lies outside `[0, num_classes)`.

    Example:
    >>> kzoo.metrics.classification_scores([0, 0, 1, 2], [0, 1, 1, 2])
    {'accuracy': 0.75, 'macro_f1': 0.7777777777777777}
    >>> logits = np.array([[2.0, 0.1], [0.3, 0.9], [1.5, -1.0]])
    >>> kzoo.metrics.classification_scores([0, 1, 1], logits)["accuracy"]
    0.6666666666666666
    """
    y_true, y_pred = class_ids(y_true, y_pred, num_classes)
    if num_classes is None:
        classes = np.union1d(y_true, y_pred)
    else:
        classes = np.arange(num_classes)
    true_positives = np.array([np.sum((y_true == c) & (y_pred == c)) for c in classes])
    true_counts = np.array([np.sum(y_true == c) for c in classes])
    predicted_counts = np.array([np.sum(y_pred == c) for c in classes])
    denominator = true_counts + predicted_counts  # 2 tp + fp + fn
    f1 = np.where(denominator > 0,
                  2 * true_positives / np.maximum(denominator, 1), 0.0)
    return {"accuracy": float(np.mean(y_true == y_pred)),
            "macro_f1": float(np.mean(f1))}


def matthews_correlation(y_true, y_pred):
    """Matthews' correlation coefficient of class predictions (binary or
    multiclass): CoLA's metric in GLUE.

    With `C` the confusion matrix of `n` examples, `t` its row sums (the
    true count of each class), `p` its column sums (the predicted count)
    and `c` its trace (the correct predictions), the coefficient is
    `(c * n - t . p) / sqrt((n^2 - p . p) * (n^2 - t . t))`, Gorodkin's
    multiclass form, which is Pearson's correlation of the true and
    predicted indicators for two classes. It lies in [-1, 1]: 1 for
    perfect predictions, 0 for chance or a constant prediction (where the
    denominator is 0). The number of `sklearn.metrics.matthews_corrcoef`.

    Args:
        y_true: integer class ids, shape `[n]` (or `[n, 1]`).
        y_pred: predicted class ids of the same shape, or scores of shape
            `[n, num_classes]`, whose argmax is the prediction.

    Returns:
        float.

    Raises:
        ValueError: as `classification_scores` does, for shapes, sizes and
            non-integer ids.

    Example:
    >>> kzoo.metrics.matthews_correlation([1, 1, 0, 0], [1, 0, 0, 0])
    0.5773502691896258
    """
    y_true, y_pred = class_ids(y_true, y_pred)
    classes, codes = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
    n, k = len(y_true), len(classes)
    confusion = np.zeros((k, k), dtype=np.int64)
    np.add.at(confusion, (codes[:n], codes[n:]), 1)
    true_counts = confusion.sum(axis=1).astype(np.float64)
    predicted_counts = confusion.sum(axis=0).astype(np.float64)
    covariance = np.trace(confusion) * n - true_counts @ predicted_counts
    true_variance = n * n - true_counts @ true_counts
    predicted_variance = n * n - predicted_counts @ predicted_counts
    if true_variance * predicted_variance == 0:
        return 0.0
    return float(covariance / math.sqrt(true_variance * predicted_variance))


def binary_f1(y_true, y_pred, positive_label=1):
    """F1 of the positive class of binary predictions: MRPC's and QQP's
    metric in GLUE (beside accuracy).

    `2 * tp / (2 * tp + fp + fn)`, counting true positives, false positives
    and false negatives of `positive_label` (0 when it is neither true nor
    predicted anywhere): the number of `sklearn.metrics.f1_score(y_true,
    y_pred, pos_label=positive_label)`.

    Args:
        y_true: integer class ids, shape `[n]` (or `[n, 1]`); at most two
            classes between the labels and the predictions.
        y_pred: predicted class ids of the same shape, or scores of shape
            `[n, 2]`, whose argmax is the prediction.
        positive_label: int. The class whose F1 is reported.

    Returns:
        float in [0, 1].

    Raises:
        ValueError: when the labels and predictions hold more than two
            classes, or two that do not include `positive_label`; and as
            `classification_scores` does, for shapes, sizes and ids.

    Example:
    >>> kzoo.metrics.binary_f1([1, 1, 0, 0], [1, 0, 1, 0])
    0.5
    >>> kzoo.metrics.binary_f1([1, 1, 0, 0], [1, 0, 0, 0], positive_label=0)
    0.8
    """
    y_true, y_pred = class_ids(y_true, y_pred)
    present = sorted(set(np.union1d(y_true, y_pred).tolist()))
    if len(present) > 2:
        raise ValueError(
            f"binary F1 needs two classes, but the labels and predictions hold "
            f"{present}: use classification_scores (macro F1) for more classes.")
    if len(present) == 2 and positive_label not in present:
        raise ValueError(
            f"positive_label={positive_label!r} is not one of the classes "
            f"{present}: pass the id of the positive class.")
    true_positive = np.sum((y_true == positive_label) & (y_pred == positive_label))
    denominator = np.sum(y_true == positive_label) + np.sum(y_pred == positive_label)
    return float(2 * true_positive / denominator) if denominator else 0.0
