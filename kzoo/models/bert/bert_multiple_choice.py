"""BERT with a multiple-choice head (SWAG)."""

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_multiple_choice_preprocessor import (
    BertMultipleChoicePreprocessor,
)
from kzoo.models.multiple_choice import MultipleChoice


@kzoo_export("kzoo.models.BertMultipleChoice")
class BertMultipleChoice(MultipleChoice):
    """SWAG-style multiple choice with BERT (fine-tuning).

    Each (context, candidate ending) pair goes through BERT; the pooled
    ``[CLS]`` output is scored by one dense unit, and the scores of an
    example's candidates are softmaxed. ``fit`` takes ``(contexts,
    endings)`` (``endings``: a list of N strings per example) and the index
    of the right ending.

    Args: see ``kzoo.models.MultipleChoice``.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...          "she", "sat", "ran", "down", "away"]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=len(vocab), num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=6)
    >>> preprocessor = kzoo.models.BertMultipleChoicePreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=6)
    >>> model = kzoo.models.BertMultipleChoice(backbone, preprocessor=preprocessor)
    >>> logits = model.predict_on_batch(preprocessor(
    ...     (["She", "She"], [["sat down", "ran away", "sat"]] * 2)))
    >>> tuple(logits.shape)
    (2, 3)

    Reference:
        Devlin et al., 2019, "BERT: Pre-training of Deep Bidirectional
        Transformers for Language Understanding", section 4.4 (SWAG).
    """

    backbone_cls = BertBackbone
    preprocessor_cls = BertMultipleChoicePreprocessor
