"""(context, endings) → BERT multiple-choice inputs: N × ``[CLS] c [SEP] e [SEP]``."""

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.multiple_choice_preprocessor import MultipleChoicePreprocessor


@kzoo_export("kzoo.models.BertMultipleChoicePreprocessor")
class BertMultipleChoicePreprocessor(MultipleChoicePreprocessor):
    """BERT's SWAG packing (see MultipleChoicePreprocessor).

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...          "she", "sat", "ran", "down", "away"]
    >>> pre = kzoo.models.BertMultipleChoicePreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=6)
    >>> x = pre((["She"], [["sat down", "ran away"]]))
    >>> ops.convert_to_numpy(x["token_ids"]).tolist()
    [[[2, 5, 3, 6, 8, 3], [2, 5, 3, 7, 9, 3]]]
    """

    backbone_cls = BertBackbone
    tokenizer_cls = BertTokenizer
    start_token = "[CLS]"
    sep_token = "[SEP]"
    end_token = "[SEP]"
