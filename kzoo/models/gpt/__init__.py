"""GPT: decoder backbone, tokenizer, causal LM, GPT-1-style fine-tuning, converter."""
