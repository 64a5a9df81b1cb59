"""BERT with a span-extraction head (SQuAD question answering)."""

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_question_answerer_preprocessor import (
    BertQuestionAnswererPreprocessor,
)
from kzoo.models.question_answerer import QuestionAnswerer


@kzoo_export("kzoo.models.BertQuestionAnswerer")
class BertQuestionAnswerer(QuestionAnswerer):
    """SQuAD-style extractive question answering with BERT (fine-tuning).

    ``BertQuestionAnswerer.from_preset("minilm_l6_en_uncased")`` loads the
    pretrained backbone and tokenizer and puts a fresh start/end head on it;
    ``fit`` takes ``(questions, contexts)`` and SQuAD answers
    (``{"answer_start": [...], "text": [...]}``), and ``answer`` returns
    the predicted spans as text with character offsets into the contexts.

    Args: see ``kzoo.models.QuestionAnswerer``.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...          "where", "?", "in", "paris", "cafe", "."]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=len(vocab), num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=10)
    >>> preprocessor = kzoo.models.BertQuestionAnswererPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=10)
    >>> model = kzoo.models.BertQuestionAnswerer(backbone, preprocessor=preprocessor)
    >>> found = model.answer(["Where?"], ["Café in Paris."])[0]
    >>> context = "Café in Paris."
    >>> context[found["start"]:found["end"]] == found["text"] != ""
    True

    Reference:
        Devlin et al., 2019, "BERT: Pre-training of Deep Bidirectional
        Transformers for Language Understanding", section 4.2 (SQuAD v1.1).
    """

    backbone_cls = BertBackbone
    preprocessor_cls = BertQuestionAnswererPreprocessor
