"""The "sentence-similarity" pipeline: cosine similarities of sentence embeddings."""

from kzoo.pipelines.base import Pipeline, as_list


class SentenceSimilarityPipeline(Pipeline):
    """The cosine similarity of every sentence with every other sentence.

    sentence-transformers' ``util.cos_sim(model.encode(a), model.encode(b))``
    on the task's embeddings: ``similarity(sentences, other_sentences)``
    gives a matrix (a list of lists of floats) ``[len(sentences),
    len(other_sentences)]``; a single str counts as a list of one (so two
    strs give ``[[cosine]]``); without ``other_sentences``, the sentences
    against themselves.

    Args:
        model: a preset name or folder (``kzoo.models.TextEmbedder.from_preset``),
            or a built ``kzoo.models.TextEmbedder``.
        batch_size: int. Sentences per forward pass.
        model_kwargs: dict of ``from_preset`` arguments, with a preset.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> model = kzoo.models.BertTextEmbedder(
    ...     backbone, preprocessor=kzoo.models.BertClassifierPreprocessor(
    ...         kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8))
    >>> similarity = kzoo.pipeline("sentence-similarity", model)
    >>> found = similarity(["a good film", "a film"], ["a good film"])
    >>> len(found), len(found[0]), round(found[0][0], 4)
    (2, 1, 1.0)
    """

    task = "sentence-similarity"
    task_shape = "TextEmbedder"

    def __call__(self, sentences, other_sentences=None):
        """The cosine matrix of ``sentences`` and ``other_sentences``."""
        a, _ = as_list(sentences, "sentences")
        b = a if other_sentences is None else as_list(other_sentences,
                                                      "other sentences")[0]
        return self.model.similarity(a, b, batch_size=self.batch_size).tolist()
