"""BERT sentence embeddings (sentence-transformers' mean pooling)."""

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_classifier_preprocessor import BertClassifierPreprocessor
from kzoo.models.text_embedder import TextEmbedder


@kzoo_export("kzoo.models.BertTextEmbedder")
class BertTextEmbedder(TextEmbedder):
    """Sentence embeddings from BERT: ``[CLS] text [SEP]`` → encoder → mean
    of the real tokens' vectors → unit length.

    ``BertTextEmbedder.from_preset("minilm_l6_en_uncased")`` gives
    all-MiniLM-L6-v2's sentence embeddings (its sentence-transformers
    pooling config: mean, normalized).

    Args: see ``kzoo.models.TextEmbedder``.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
    >>> pre = kzoo.models.BertClassifierPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8)
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> model = kzoo.models.BertTextEmbedder(backbone, preprocessor=pre)
    >>> model.predict(["a good film", "good"], verbose=0).shape
    (2, 4)
    >>> model.similarity(["a good film"], ["a good film", "good"]).round(4).tolist()[0][0]
    1.0
    """

    backbone_cls = BertBackbone
    preprocessor_cls = BertClassifierPreprocessor
