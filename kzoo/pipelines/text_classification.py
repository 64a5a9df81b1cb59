"""The "text-classification" pipeline: a label and a score per text."""

import numpy as np

from kzoo.pipelines.base import (NOT_GIVEN, Pipeline, batches, label_name,
                                 outputs_probabilities, softmax)

FUNCTIONS = ("default", "softmax", "sigmoid", "none")


class TextClassificationPipeline(Pipeline):
    """Labels and scores of texts (or text pairs), as Hugging Face's pipeline.

    Call it with a text, a ``{"text": ..., "text_pair": ...}`` dict, or a list
    of either (not mixed). Without ``top_k`` (Hugging Face's default) each
    input gives the dict ``{"label", "score"}`` of its best label, and one
    text gives ``[that dict]``. With ``top_k`` (an int, or None for every
    label) each input gives a list of dicts, the best first; one text gives
    that list alone. Labels are the task's ``label_names`` (``"LABEL_0"`` ...
    without names). Scores are the softmax of the logits; a regressor
    (``num_classes == 1``) gives its raw score as ``{"label": "LABEL_0",
    "score": value}``, as Hugging Face does for a regression model.

    Args:
        model: a preset name or folder (``kzoo.models.TextClassifier.from_preset``),
            or a built ``kzoo.models.TextClassifier``.
        top_k: int or None. Default for calls (see above).
        function_to_apply: ``"default"`` (softmax; none for a regressor),
            ``"softmax"``, ``"sigmoid"`` or ``"none"`` (the raw logits).
        batch_size: int. Texts per forward pass.
        model_kwargs: dict of ``from_preset`` arguments, with a preset.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> model = kzoo.models.BertClassifier(
    ...     backbone, num_classes=2, label_names=["neg", "pos"],
    ...     preprocessor=kzoo.models.BertClassifierPreprocessor(
    ...         kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8))
    >>> classify = kzoo.pipeline("text-classification", model)
    >>> [r["label"] in ("neg", "pos") for r in classify("a good film")]
    [True]
    >>> len(classify(["a film", "good"], top_k=None)[1])
    2
    """

    task = "text-classification"
    task_shape = "TextClassifier"

    def __init__(self, model, top_k=NOT_GIVEN, function_to_apply="default",
                 batch_size=32, model_kwargs=None):
        super().__init__(model, batch_size=batch_size, model_kwargs=model_kwargs)
        self.top_k = _check_top_k(top_k)
        self.function_to_apply = _check_function(function_to_apply)

    def __call__(self, inputs, top_k=NOT_GIVEN, function_to_apply=None):
        """Classifies ``inputs``; see the class docstring."""
        top_k = _check_top_k(self.top_k if top_k is NOT_GIVEN else top_k)
        function = _check_function(function_to_apply or self.function_to_apply)
        single = isinstance(inputs, (str, dict))
        items = [inputs] if single else inputs
        if not isinstance(items, (list, tuple)):
            raise TypeError("text-classification takes a str, a {'text', 'text_pair'} "
                            f"dict, or a list of them; got {type(inputs).__name__}.")
        scores = self._scores(list(items), function)
        results = [_postprocess(self.model, row, top_k) for row in scores]
        if single:
            return [results[0]] if top_k is NOT_GIVEN else results[0]
        return results

    def _scores(self, items, function_to_apply="default"):
        """The score of every class for each input: float numpy
        ``[len(items), num_classes]`` after ``function_to_apply``."""
        pairs = _pairs(items)
        rows = []
        for chunk in batches(items, self.batch_size):
            x = _texts(chunk) if pairs else list(chunk)
            outputs = self.model.predict_on_batch(self.model.preprocessor(x))
            rows.append(np.asarray(outputs, dtype="float64").reshape(len(chunk), -1))
        outputs = (np.concatenate(rows) if rows
                   else np.zeros((0, self.model.num_classes)))
        return _apply(self.model, outputs, function_to_apply)


def _check_top_k(top_k):
    if top_k is NOT_GIVEN or top_k is None:
        return top_k
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"`top_k` must be a positive int or None, got {top_k!r}.")
    return int(top_k)


def _check_function(function):
    if function not in FUNCTIONS:
        raise ValueError(f"`function_to_apply` must be one of {FUNCTIONS}, got "
                         f"{function!r}.")
    return function


def _pairs(items):
    kinds = {isinstance(x, dict) for x in items}
    bad = [x for x in items if not isinstance(x, (str, dict))]
    if bad or len(kinds) > 1:
        raise TypeError("text-classification takes texts (str) or pairs "
                        "({'text': ..., 'text_pair': ...}), not a mix or other "
                        "types: pass a list of one kind.")
    for x in items:
        if isinstance(x, dict) and set(x) != {"text", "text_pair"}:
            raise ValueError("A text pair is a dict with the keys 'text' and "
                             f"'text_pair'; got the keys {sorted(x)}.")
    return kinds == {True}


def _texts(chunk):
    return ([x["text"] for x in chunk], [x["text_pair"] for x in chunk])


def _apply(model, outputs, function):
    regressor = getattr(model, "num_classes", 2) == 1
    probabilities = outputs_probabilities(model)
    if function == "default":
        function = "none" if regressor or probabilities else "softmax"
    if function == "softmax":
        return outputs if probabilities else softmax(outputs)
    if function == "sigmoid":
        return 1.0 / (1.0 + np.exp(-outputs))
    return outputs


def _postprocess(model, scores, top_k):
    if top_k is NOT_GIVEN:
        best = int(np.argmax(scores))
        return {"label": label_name(model, best), "score": float(scores[best])}
    results = [{"label": label_name(model, i), "score": float(s)}
               for i, s in enumerate(scores)]
    results.sort(key=lambda r: r["score"], reverse=True)
    return results if top_k is None else results[:top_k]
