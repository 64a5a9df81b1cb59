"""The "feature-extraction" pipeline: the backbone's hidden state per token."""

import numpy as np

from kzoo.pipelines.base import Pipeline, as_list, batches


class FeatureExtractionPipeline(Pipeline):
    """Per-token hidden states, as Hugging Face's feature-extraction pipeline.

    Each text gives its backbone's ``sequence_output`` at its real tokens
    (special tokens included, padding left out) as nested lists ``[1,
    tokens, hidden_dim]``, the shape Hugging Face returns; with
    ``return_tensors=True`` a float32 numpy array of that shape. Tokenization
    is the task's preprocessor (a text longer than its ``sequence_length``
    is truncated). One text gives its result; a list of texts a list.

    Args:
        model: a preset name or folder (``kzoo.models.TextEmbedder.from_preset``),
            or any built kzoo task with an encoder ``backbone`` (a
            ``sequence_output``) and a text preprocessor (``TextEmbedder``,
            ``TextClassifier`` ...).
        return_tensors: bool. Numpy arrays instead of nested lists.
        batch_size: int. Texts per forward pass.
        model_kwargs: dict of ``from_preset`` arguments, with a preset.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> model = kzoo.models.BertTextEmbedder(
    ...     backbone, preprocessor=kzoo.models.BertClassifierPreprocessor(
    ...         kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8))
    >>> features = kzoo.pipeline("feature-extraction", model)("a good film")
    >>> len(features), len(features[0]), len(features[0][0])  # [CLS] a good film [SEP]
    (1, 5, 4)
    """

    task = "feature-extraction"
    task_shape = "TextEmbedder"

    def __init__(self, model, return_tensors=False, batch_size=32, model_kwargs=None):
        if not isinstance(model, str) and hasattr(model, "backbone"):
            self.task_shape = "Task"  # any task: only its backbone is read
        super().__init__(model, batch_size=batch_size, model_kwargs=model_kwargs)
        self.return_tensors = return_tensors

    def __call__(self, inputs, return_tensors=None):
        """The features of ``inputs`` (a str or a list of str)."""
        texts, single = as_list(inputs)
        tensors = self.return_tensors if return_tensors is None else return_tensors
        results = []
        for chunk in batches(texts, self.batch_size):
            x = self.model.preprocessor(list(chunk))
            hidden = self.model.backbone.predict_on_batch(x)["sequence_output"]
            hidden = np.asarray(hidden, dtype="float32")
            real = np.asarray(x["padding_mask"]).astype(bool)
            for row, mask in zip(hidden, real):
                found = row[mask][None]
                results.append(found if tensors else found.tolist())
        return results[0] if single else results
