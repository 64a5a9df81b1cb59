"""GPT as a language model: next-token logits, training on text, generation."""

from kzoo.api_export import kzoo_export
from kzoo.models.causal_lm import CausalLM
from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.models.gpt.gpt_causal_lm_preprocessor import GPTCausalLMPreprocessor


@kzoo_export("kzoo.models.GPTCausalLM")
class GPTCausalLM(CausalLM):
    """GPT with its tied language model head, ``fit`` on text and ``generate``.

    ``GPTCausalLM.from_preset(folder)`` reads a kzoo preset or a Hugging Face
    GPT-2 folder (``GPT2LMHeadModel`` logits, ``generate(do_sample=False)``
    token for token). ``fit`` takes raw strings; ``generate`` takes prompts
    and a sampler (see ``kzoo.models.CausalLM``).

    Example:
    >>> vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
    ...     ["a cat sat on a mat"] * 3, vocabulary_size=270)
    >>> backbone = kzoo.models.GPTBackbone(
    ...     vocabulary_size=len(vocabulary), num_layers=1, num_heads=2, hidden_dim=8,
    ...     intermediate_dim=16, max_sequence_length=16)
    >>> lm = kzoo.models.GPTCausalLM(backbone, kzoo.models.GPTCausalLMPreprocessor(
    ...     kzoo.models.GPTTokenizer(vocabulary, merges), sequence_length=8))
    >>> isinstance(lm.generate("a cat", max_length=6), str)
    True
    """

    backbone_cls = GPTBackbone
    preprocessor_cls = GPTCausalLMPreprocessor
