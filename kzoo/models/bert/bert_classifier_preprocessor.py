"""Strings → BERT classifier inputs: ``[CLS] a [SEP] (b [SEP])``."""

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.text_classifier_preprocessor import TextClassifierPreprocessor


@kzoo_export("kzoo.models.BertClassifierPreprocessor")
class BertClassifierPreprocessor(TextClassifierPreprocessor):
    """BERT's packing of one text or a text pair (see TextClassifierPreprocessor).

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
    >>> pre = kzoo.models.BertClassifierPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8)
    >>> x = pre((["a good film"], ["good"]))
    >>> ops.convert_to_numpy(x["token_ids"]).tolist()
    [[2, 5, 6, 7, 3, 6, 3, 0]]
    >>> ops.convert_to_numpy(x["segment_ids"]).tolist()
    [[0, 0, 0, 0, 0, 1, 1, 0]]
    """

    backbone_cls = BertBackbone
    tokenizer_cls = BertTokenizer
    start_token = "[CLS]"
    sep_token = "[SEP]"
    end_token = "[SEP]"
