"""BERT with its masked language model head."""

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_masked_lm_preprocessor import BertMaskedLMPreprocessor
from kzoo.models.masked_lm import MaskedLM


@kzoo_export("kzoo.models.BertMaskedLM")
class BertMaskedLM(MaskedLM):
    """BERT's masked language model: predict the masked tokens of a text.

    ``BertMaskedLM.from_preset(folder)`` on a Hugging Face
    ``BertForPreTraining`` or ``BertForMaskedLM`` folder loads the backbone
    and the pretrained ``cls.predictions`` head (transform dense, layer norm
    and output bias; the output projection is the word embedding matrix,
    tied). A checkpoint without that head (a plain ``BertModel``, e.g.
    ``"minilm_l6_en_uncased"``) gets a freshly initialized head, with a
    warning. ``fit`` on raw strings continues masked-LM pretraining.

    Args: see ``kzoo.models.MaskedLM``.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
    >>> pre = kzoo.models.BertMaskedLMPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8, seed=1)
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> model = kzoo.models.BertMaskedLM(backbone, preprocessor=pre)
    >>> x, y, w = pre(["a good film", "good"])
    >>> tuple(model(x).shape)
    (2, 2, 8)
    """

    backbone_cls = BertBackbone
    preprocessor_cls = BertMaskedLMPreprocessor
