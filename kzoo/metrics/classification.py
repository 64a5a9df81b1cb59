"""Accuracy and macro-averaged F1 of class predictions, as scikit-learn computes them."""

import keras
import numpy as np


def _as_numpy(x):
    if isinstance(x, (np.ndarray, list, tuple)):
        return np.asarray(x)
    return np.asarray(keras.ops.convert_to_numpy(x))


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
            if not np.all(np.equal(np.mod(ids, 1), 0)):
                raise ValueError(
                    f"`{name}` holds non-integer values: pass class ids, or "
                    "scores of shape [n, num_classes].")
        if num_classes is not None and (ids.min() < 0 or ids.max() >= num_classes):
            raise ValueError(
                f"`{name}` holds the class id {ids.min() if ids.min() < 0 else ids.max()}"
                f", outside [0, {num_classes}): pass the right `num_classes` "
                "(or None to average over the classes that occur).")
    y_true, y_pred = y_true.astype(np.int64), y_pred.astype(np.int64)
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
