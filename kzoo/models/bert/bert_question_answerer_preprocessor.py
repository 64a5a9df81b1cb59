"""(question, context) → BERT span-extraction inputs: ``[CLS] q [SEP] c [SEP]``."""

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.question_answerer_preprocessor import QuestionAnswererPreprocessor


@kzoo_export("kzoo.models.BertQuestionAnswererPreprocessor")
class BertQuestionAnswererPreprocessor(QuestionAnswererPreprocessor):
    """BERT's SQuAD packing (see QuestionAnswererPreprocessor).

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...          "where", "?", "in", "paris", "cafe", "."]
    >>> pre = kzoo.models.BertQuestionAnswererPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=10)
    >>> x, y = pre((["Where?"], ["Café in Paris."]),
    ...            {"answer_start": [8], "text": ["Paris"]})
    >>> ops.convert_to_numpy(x["token_ids"]).tolist()
    [[2, 5, 6, 3, 9, 7, 8, 10, 3, 0]]
    >>> ops.convert_to_numpy(x["segment_ids"]).tolist()
    [[0, 0, 0, 0, 1, 1, 1, 1, 1, 0]]
    >>> int(y["start_logits"][0]), int(y["end_logits"][0])
    (6, 6)
    >>> offsets = pre.context_offsets((["Where?"], ["Café in Paris."]))
    >>> ops.convert_to_numpy(offsets["start_offsets"]).tolist()  # characters
    [[-1, -1, -1, -1, 0, 5, 8, 13, -1, -1]]
    """

    backbone_cls = BertBackbone
    tokenizer_cls = BertTokenizer
    start_token = "[CLS]"
    sep_token = "[SEP]"
    end_token = "[SEP]"
