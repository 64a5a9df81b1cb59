"""The GLUE benchmark's official metrics of each task, as GLUE and Hugging
Face evaluate's "glue" metric define them."""

import numpy as np

from kzoo.metrics.classification import (
    _as_numpy,
    binary_f1,
    class_ids,
    matthews_correlation,
)
from kzoo.metrics.pearson_correlation import PearsonCorrelation
from kzoo.metrics.spearman_correlation import SpearmanCorrelation

# Each task (Hugging Face's config names) and the metrics GLUE reports for it.
GLUE_TASKS = {
    "cola": ("matthews_correlation",),
    "sst2": ("accuracy",),
    "mrpc": ("accuracy", "f1"),
    "qqp": ("accuracy", "f1"),
    "stsb": ("pearson", "spearmanr"),
    "mnli": ("accuracy",),
    "mnli_matched": ("accuracy",),
    "mnli_mismatched": ("accuracy",),
    "qnli": ("accuracy",),
    "rte": ("accuracy",),
    "wnli": ("accuracy",),
}
# GLUE's own spellings of the task names.
_ALIASES = {"sst-2": "sst2", "sts-b": "stsb", "mnli-m": "mnli_matched",
            "mnli-mm": "mnli_mismatched"}


def glue_task(task):
    """The Hugging Face name of a GLUE task (`"CoLA"` -> `"cola"`,
    `"MNLI-mm"` -> `"mnli_mismatched"`); a ValueError lists the tasks."""
    name = str(task).lower()
    name = _ALIASES.get(name, name)
    if name not in GLUE_TASKS:
        raise ValueError(
            f"Unknown GLUE task {task!r}: use one of {', '.join(GLUE_TASKS)} "
            "(or GLUE's spellings SST-2, STS-B, MNLI-m, MNLI-mm).")
    return name


def correlation_scores(labels, predictions):
    """`{"pearson", "spearmanr"}` of predicted scores with gold ones (as
    scipy's `pearsonr` and `spearmanr`), the values centred first so that
    predictions of a small spread keep their digits in float32."""
    labels = _as_numpy(labels).astype(np.float64)
    predictions = _as_numpy(predictions).astype(np.float64)
    if predictions.ndim == 2 and predictions.shape[-1] == 1:
        predictions = predictions[:, 0]
    if labels.ndim == 2 and labels.shape[-1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1 or predictions.shape != labels.shape:
        raise ValueError(
            f"STS-B takes one score per example: `labels` has shape "
            f"{labels.shape} and `predictions` {predictions.shape}; pass both "
            "as [n] (or [n, 1]) arrays of the same n.")
    if len(labels) == 0:
        raise ValueError("`labels` and `predictions` are empty: pass at least one example.")
    pearson = PearsonCorrelation()
    # Centred first: the metric's float32 sums keep more digits.
    pearson.update_state(labels - labels.mean(), predictions - predictions.mean())
    spearman = SpearmanCorrelation(capacity=max(len(labels), 2))
    spearman.update_state(labels, predictions)
    return {"pearson": float(pearson.result()), "spearmanr": float(spearman.result())}


def glue_scores(task, labels, predictions):
    """The official GLUE metrics of one task's predictions.

    CoLA: Matthews' correlation; SST-2, MNLI (matched and mismatched), QNLI,
    RTE and WNLI: accuracy; MRPC and QQP: accuracy and the F1 of class 1
    (paraphrase, duplicate); STS-B: Pearson's and Spearman's correlations
    with the gold scores. Keys and values are those of Hugging Face
    evaluate's `load("glue", task).compute(predictions=..., references=...)`
    (GLUE's leaderboard shows them times 100); STS-B's correlations are
    computed in float32, to about 1e-6.

    Args:
        task: str. A Hugging Face GLUE config name ("cola", "sst2", "mrpc",
            "qqp", "stsb", "mnli", "mnli_matched", "mnli_mismatched",
            "qnli", "rte", "wnli"), in any case, or GLUE's spelling
            ("SST-2", "STS-B", "MNLI-m", "MNLI-mm").
        labels: the gold labels: class ids of shape `[n]`, or STS-B's
            scores.
        predictions: class ids of shape `[n]` or scores of shape
            `[n, num_classes]` (their argmax is the prediction); STS-B's
            predicted scores, shape `[n]` or `[n, 1]`.

    Returns:
        dict: `{"matthews_correlation"}` (CoLA), `{"accuracy"}`,
        `{"accuracy", "f1"}` (MRPC, QQP) or `{"pearson", "spearmanr"}`
        (STS-B), floats.

    Raises:
        ValueError: for an unknown task (the message lists them), and for
            labels and predictions that do not fit the task.

    Example:
    >>> kzoo.metrics.glue_scores("mrpc", [1, 1, 0, 0], [1, 0, 0, 0])
    {'accuracy': 0.75, 'f1': 0.6666666666666666}
    >>> kzoo.metrics.glue_scores("CoLA", [1, 1, 0, 0], [1, 0, 0, 0])
    {'matthews_correlation': 0.5773502691896258}
    """
    name = glue_task(task)
    if name == "stsb":
        return correlation_scores(labels, predictions)
    labels, predictions = class_ids(labels, predictions)
    scores = {}
    for metric in GLUE_TASKS[name]:
        if metric == "accuracy":
            scores[metric] = float(np.mean(labels == predictions))
        elif metric == "f1":
            scores[metric] = binary_f1(labels, predictions)
        else:
            scores[metric] = matthews_correlation(labels, predictions)
    return scores
