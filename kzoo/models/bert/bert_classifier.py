"""BERT with a classification head on the pooled ``[CLS]`` output."""

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_classifier_preprocessor import BertClassifierPreprocessor
from kzoo.models.text_classifier import TextClassifier


@kzoo_export("kzoo.models.BertClassifier")
class BertClassifier(TextClassifier):
    """Sentence and sentence-pair classification with BERT (fine-tuning).

    ``BertClassifier.from_preset("minilm_l6_en_uncased", num_classes=2)``
    loads the pretrained backbone and tokenizer and puts a fresh head on it;
    ``fit`` then takes raw strings (or pairs as a tuple) and labels.

    Args: see ``kzoo.models.TextClassifier``.
    """

    backbone_cls = BertBackbone
    preprocessor_cls = BertClassifierPreprocessor
