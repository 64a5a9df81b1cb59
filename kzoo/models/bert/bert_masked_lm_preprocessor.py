"""Strings → BERT masked language model inputs, targets and weights."""

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.masked_lm_preprocessor import MaskedLMPreprocessor


@kzoo_export("kzoo.models.BertMaskedLMPreprocessor")
class BertMaskedLMPreprocessor(MaskedLMPreprocessor):
    """BERT's masking of ``[CLS] a [SEP] (b [SEP])`` (see MaskedLMPreprocessor).

    ``[CLS]``, ``[SEP]`` and ``[PAD]`` are never selected; a selected token
    becomes ``[MASK]`` (80%), a random token (10%) or stays (10%).

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
    >>> pre = kzoo.models.BertMaskedLMPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8,
    ...     mask_selection_rate=1.0, mask_token_rate=1.0, random_token_rate=0.0,
    ...     mask_selection_length=4, seed=1)
    >>> x, y, sample_weight = pre(["a good film"])
    >>> ops.convert_to_numpy(x["token_ids"]).tolist()
    [[2, 4, 4, 4, 3, 0, 0, 0]]
    >>> ops.convert_to_numpy(x["mask_positions"]).tolist()
    [[1, 2, 3, 0]]
    >>> ops.convert_to_numpy(y).tolist()
    [[5, 6, 7, 0]]
    >>> ops.convert_to_numpy(sample_weight).tolist()
    [[1.0, 1.0, 1.0, 0.0]]
    """

    backbone_cls = BertBackbone
    tokenizer_cls = BertTokenizer
    start_token = "[CLS]"
    sep_token = "[SEP]"
    end_token = "[SEP]"
    mask_token = "[MASK]"
