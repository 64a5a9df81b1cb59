"""GPT: decoder backbone, tokenizer, causal LM, GPT-1-style fine-tuning, converter."""

from kzoo.models.gpt.fine_tuning_tokens import add_fine_tuning_tokens  # noqa: F401
