"""The "token-classification" pipeline: a label per word, or grouped entities."""

import re

import numpy as np

from kzoo.pipelines.base import (Pipeline, as_list, batches, label_name,
                                 outputs_probabilities, softmax)

STRATEGIES = ("none", "simple", "first", "average", "max")


class TokenClassificationPipeline(Pipeline):
    """Labels of the words of texts (named entities ...), as Hugging Face's
    pipeline.

    Words are the text split on whitespace (their character offsets are
    where each appears in the text); kzoo's token classifier labels words
    (a word's tokenizer pieces all belong to it), so results are per word,
    not per piece.

    With ``aggregation_strategy="none"`` each word gives ``{"entity",
    "score", "index", "word", "start", "end"}``: its label, that label's
    softmax probability at the word's first piece, ``index`` the position of
    that piece in the model's input (``[CLS]`` is 0, as Hugging Face's token
    index) and ``text[start:end] == word``. ``"simple"`` groups adjacent
    words as Hugging Face's simple strategy does: a word joins the previous
    group when it has the same tag and is not a ``B-`` tag (``B-PER I-PER``
    → one ``PER``), giving ``{"entity_group", "score", "word", "start",
    "end"}`` with the mean score and the words joined by a space. A word's
    label reads its first piece (``"simple"`` and ``"first"`` are the
    same); ``"average"`` averages the probabilities of its pieces and
    ``"max"`` takes the piece with the highest score. Results whose label
    is in ``ignore_labels`` (default ``["O"]``) are dropped. Words the model
    did not see (cut by truncation, or with no piece) are left out. One text
    gives its list of results; a list of texts gives a list of lists.

    Args:
        model: a preset name or folder (``kzoo.models.TokenClassifier.from_preset``),
            or a built ``kzoo.models.TokenClassifier``.
        aggregation_strategy: one of ``STRATEGIES``.
        ignore_labels: list of label names to leave out (default ``["O"]``).
        batch_size: int. Texts per forward pass.
        model_kwargs: dict of ``from_preset`` arguments, with a preset.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "lives",
    ...          "in", "paris"]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=9, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> model = kzoo.models.BertTokenClassifier(
    ...     backbone, num_classes=3, label_names=["B-PER", "I-PER", "B-LOC"],
    ...     preprocessor=kzoo.models.BertTokenClassifierPreprocessor(
    ...         kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8))
    >>> ner = kzoo.pipeline("ner", model)
    >>> [(e["word"], e["start"], e["end"], e["index"]) for e in ner("John lives in Paris")]
    [('John', 0, 4, 1), ('lives', 5, 10, 2), ('in', 11, 13, 3), ('Paris', 14, 19, 4)]
    >>> sorted(ner(["John lives in Paris"], aggregation_strategy="simple")[0][0])
    ['end', 'entity_group', 'score', 'start', 'word']
    """

    task = "token-classification"
    task_shape = "TokenClassifier"

    def __init__(self, model, aggregation_strategy="none", ignore_labels=None,
                 batch_size=32, model_kwargs=None):
        super().__init__(model, batch_size=batch_size, model_kwargs=model_kwargs)
        self.aggregation_strategy = _check_strategy(aggregation_strategy)
        self.ignore_labels = ["O"] if ignore_labels is None else list(ignore_labels)

    def __call__(self, inputs, aggregation_strategy=None, ignore_labels=None):
        """Labels the words of ``inputs`` (a str or a list of str)."""
        strategy = _check_strategy(aggregation_strategy or self.aggregation_strategy)
        ignore = self.ignore_labels if ignore_labels is None else list(ignore_labels)
        texts, single = as_list(inputs)
        results = []
        for chunk in batches(texts, self.batch_size):
            for words in self._words(chunk, strategy):
                if strategy != "none":
                    words = group_entities(words)
                results.append([w for w in words if w.get("entity") not in ignore
                                and w.get("entity_group") not in ignore])
        return results[0] if single else results

    def _words(self, texts, strategy):
        """Per text, the list of ``{"entity", "score", "index", "word",
        "start", "end"}`` of its words the model saw."""
        spans = [[(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", t)]
                 for t in texts]
        words = [[w for w, _, _ in row] for row in spans]
        preprocessor = self.model.preprocessor
        outputs = np.asarray(self.model.predict_on_batch(preprocessor(words)), "float64")
        probabilities = outputs if outputs_probabilities(self.model) else softmax(outputs)
        word_ids = np.asarray(preprocessor.word_ids(words))
        results = []
        for row, row_spans in enumerate(spans):
            found = []
            for word, (text, start, end) in enumerate(row_spans):
                positions = np.flatnonzero(word_ids[row] == word)
                if not len(positions):
                    continue
                scores = probabilities[row, positions]
                if strategy == "average":
                    piece = scores.mean(axis=0)
                elif strategy == "max":
                    piece = scores[scores.max(axis=-1).argmax()]
                else:
                    piece = scores[0]
                best = int(piece.argmax())
                found.append({"entity": label_name(self.model, best),
                              "score": float(piece[best]), "index": int(positions[0]),
                              "word": text, "start": start, "end": end})
            results.append(found)
        return results


def _check_strategy(strategy):
    if strategy not in STRATEGIES:
        raise ValueError(f"`aggregation_strategy` must be one of {STRATEGIES}, got "
                         f"{strategy!r}.")
    return strategy


def _tag(entity):
    if entity.startswith(("B-", "I-")):
        return entity[0], entity[2:]
    return "I", entity  # not in B-/I- form: a continuation


def group_entities(words):
    """Adjacent words of one entity → ``{"entity_group", "score", "word",
    "start", "end"}``, as Hugging Face's ``group_entities``: a word joins the
    group before it when it has the same tag and is not a ``B-`` word.

    Example:
    >>> words = [{"entity": e, "score": s, "word": w, "start": b, "end": b + len(w)}
    ...          for e, s, w, b in [("B-PER", 0.5, "Ada", 0), ("I-PER", 1.0, "Love", 4),
    ...                             ("O", 1.0, "wrote", 9)]]
    >>> [(g["entity_group"], g["word"], g["score"]) for g in group_entities(words)]
    [('PER', 'Ada Love', 0.75), ('O', 'wrote', 1.0)]
    """
    groups, current = [], []
    for word in words:
        if current:
            bi, tag = _tag(word["entity"])
            if tag == _tag(current[-1]["entity"])[1] and bi != "B":
                current.append(word)
                continue
            groups.append(_group(current))
        current = [word]
    if current:
        groups.append(_group(current))
    return groups


def _group(words):
    return {"entity_group": words[0]["entity"].split("-", 1)[-1],
            "score": float(np.mean([w["score"] for w in words])),
            "word": " ".join(w["word"] for w in words),
            "start": words[0]["start"], "end": words[-1]["end"]}
