"""Strings → GPT language model inputs: ``<|endoftext|> text <|endoftext|>``."""

from kzoo.api_export import kzoo_export
from kzoo.models.causal_lm_preprocessor import CausalLMPreprocessor
from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.models.gpt.gpt_tokenizer import GPTTokenizer


@kzoo_export("kzoo.models.GPTCausalLMPreprocessor")
class GPTCausalLMPreprocessor(CausalLMPreprocessor):
    """GPT-2's framing for language modeling (see CausalLMPreprocessor).

    Example:
    >>> vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
    ...     ["a cat sat"] * 3, vocabulary_size=262)
    >>> pre = kzoo.models.GPTCausalLMPreprocessor(
    ...     kzoo.models.GPTTokenizer(vocabulary, merges), sequence_length=5)
    >>> x, y, weight = pre(["a cat"])
    >>> ops.convert_to_numpy(x["token_ids"]).tolist(), ops.convert_to_numpy(y).tolist()
    ([[0, 98, 260, 0, 0]], [[98, 260, 0, 0, 0]])
    >>> ops.convert_to_numpy(weight).tolist()
    [[1.0, 1.0, 1.0, 0.0, 0.0]]
    """

    backbone_cls = GPTBackbone
    tokenizer_cls = GPTTokenizer
