"""BERT with a per-token classification head (NER, tagging)."""

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_token_classifier_preprocessor import (
    BertTokenClassifierPreprocessor,
)
from kzoo.models.token_classifier import TokenClassifier


@kzoo_export("kzoo.models.BertTokenClassifier")
class BertTokenClassifier(TokenClassifier):
    """Word-level labelling with BERT (fine-tuning), as the paper's CoNLL NER.

    ``BertTokenClassifier.from_preset("minilm_l6_en_uncased", num_classes=9)``
    loads the pretrained backbone and tokenizer and puts a fresh per-token
    head on it; ``fit`` then takes pre-split words (a list of lists of str,
    or a ragged string tensor) and one label per word, and
    ``predict_words`` gives one label per word back (-1 for words cut by
    truncation).

    Args: see ``kzoo.models.TokenClassifier``.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...          "john", "play", "##s", "in", "paris"]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=len(vocab), num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> preprocessor = kzoo.models.BertTokenClassifierPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8)
    >>> model = kzoo.models.BertTokenClassifier(
    ...     backbone, num_classes=3, preprocessor=preprocessor)
    >>> predictions = model.predict_words([["John", "plays", "in", "Paris"], ["Paris"]])
    >>> [len(p) for p in predictions]
    [4, 1]

    Reference:
        Devlin et al., 2019, "BERT: Pre-training of Deep Bidirectional
        Transformers for Language Understanding", section 5.3 (CoNLL-2003
        NER, first sub-token as the word's representation).
    """

    backbone_cls = BertBackbone
    preprocessor_cls = BertTokenClassifierPreprocessor
