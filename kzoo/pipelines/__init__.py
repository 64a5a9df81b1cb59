"""One-line inference, as Hugging Face's ``pipeline``: ``kzoo.pipeline(task, model)``.

Each task is a small class: it loads the model (a preset name or folder, or
a built kzoo task), runs it in batches and returns what Hugging Face's
pipeline of the same name returns (a list of inputs gives a list of
results; one input gives its result alone). The tasks: "text-classification"
(alias "sentiment-analysis"), "token-classification" (alias "ner"),
"question-answering", "fill-mask", "feature-extraction",
"sentence-similarity" and "text-generation".
"""

import difflib

from kzoo.pipelines.base import Pipeline  # noqa: F401
from kzoo.pipelines.feature_extraction import FeatureExtractionPipeline
from kzoo.pipelines.fill_mask import FillMaskPipeline
from kzoo.pipelines.question_answering import QuestionAnsweringPipeline
from kzoo.pipelines.sentence_similarity import SentenceSimilarityPipeline
from kzoo.pipelines.text_classification import TextClassificationPipeline
from kzoo.pipelines.text_generation import TextGenerationPipeline
from kzoo.pipelines.token_classification import TokenClassificationPipeline

#: the task names ``pipeline`` takes, and the class of each
TASKS = {
    "text-classification": TextClassificationPipeline,
    "token-classification": TokenClassificationPipeline,
    "question-answering": QuestionAnsweringPipeline,
    "fill-mask": FillMaskPipeline,
    "feature-extraction": FeatureExtractionPipeline,
    "sentence-similarity": SentenceSimilarityPipeline,
    "text-generation": TextGenerationPipeline,
}
#: other names of tasks (Hugging Face's)
ALIASES = {"sentiment-analysis": "text-classification", "ner": "token-classification"}


def pipeline(task, model, batch_size=32, model_kwargs=None, **kwargs):
    """A callable that runs ``model`` on raw inputs for ``task``.

    Args:
        task: str. One of ``kzoo.pipelines.TASKS`` (or an alias:
            "sentiment-analysis", "ner").
        model: a registered preset name (``"minilm_l6_en_uncased"``), a
            preset folder, or an already built kzoo task of the task's
            shape (``kzoo.models.TextClassifier`` for "text-classification").
            A preset is built with the shape's ``from_preset``, which picks
            the preset's family's class (or the fine-tuned task the folder
            holds, with its head and ``label_names``).
        batch_size: int. Inputs per forward pass.
        model_kwargs: dict of ``from_preset`` arguments (``num_classes``,
            ``sequence_length`` ...); only with a preset.
        **kwargs: the task's own defaults (``top_k=None``,
            ``aggregation_strategy="simple"``, ``max_length=32`` ...); see
            each class.

    Returns:
        The task's pipeline object (``TextClassificationPipeline`` ...).

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> model = kzoo.models.BertClassifier(
    ...     backbone, num_classes=2, preprocessor=kzoo.models.BertClassifierPreprocessor(
    ...         kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8))
    >>> classify = kzoo.pipeline("sentiment-analysis", model)
    >>> sorted(classify(["a good film"])[0])
    ['label', 'score']
    >>> kzoo.pipeline("text-clasification", model)
    Traceback (most recent call last):
    ...
    ValueError: Unknown task 'text-clasification'; did you mean 'text-classification'? The tasks: text-classification, token-classification, question-answering, fill-mask, feature-extraction, sentence-similarity, text-generation (aliases: sentiment-analysis, ner).
    """
    if not isinstance(task, str) or ALIASES.get(task, task) not in TASKS:
        names = list(TASKS) + list(ALIASES)
        close = difflib.get_close_matches(str(task), names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"Unknown task {task!r}; {hint}The tasks: {', '.join(TASKS)} "
            f"(aliases: {', '.join(ALIASES)}).")
    cls = TASKS[ALIASES.get(task, task)]
    return cls(model, batch_size=batch_size, model_kwargs=model_kwargs, **kwargs)
