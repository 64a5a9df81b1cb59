"""Pre-split words → BERT token-classification inputs: ``[CLS] pieces [SEP]``."""

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.token_classifier_preprocessor import TokenClassifierPreprocessor


@kzoo_export("kzoo.models.BertTokenClassifierPreprocessor")
class BertTokenClassifierPreprocessor(TokenClassifierPreprocessor):
    """BERT's word-level labelling input (see TokenClassifierPreprocessor).

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...          "john", "play", "##s", "in", "paris"]
    >>> pre = kzoo.models.BertTokenClassifierPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8)
    >>> x, y, w = pre([["John", "plays", "in", "Paris"]], [[1, 0, 0, 2]])
    >>> ops.convert_to_numpy(x["token_ids"]).tolist()
    [[2, 5, 6, 7, 8, 9, 3, 0]]
    >>> ops.convert_to_numpy(y).tolist()
    [[0, 1, 0, 0, 0, 2, 0, 0]]
    >>> ops.convert_to_numpy(w).tolist()
    [[0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0]]
    >>> ops.convert_to_numpy(pre.word_ids([["John", "plays", "in", "Paris"]])).tolist()
    [[-1, 0, 1, 1, 2, 3, -1, -1]]
    """

    backbone_cls = BertBackbone
    tokenizer_cls = BertTokenizer
    start_token = "[CLS]"
    end_token = "[SEP]"
