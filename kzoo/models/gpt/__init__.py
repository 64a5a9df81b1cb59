"""GPT: decoder backbone, tokenizer, causal LM, GPT-1-style fine-tuning, converter."""

from kzoo.models.gpt.fine_tuning_tokens import add_fine_tuning_tokens  # noqa: F401
from kzoo.models.gpt.gpt_converter import HuggingFaceGPT2Source, HuggingFaceOpenAIGPTSource
from kzoo.presets.preset_source import register_converter

# Foreign checkpoint formats that from_preset reads.
register_converter(HuggingFaceGPT2Source)
register_converter(HuggingFaceOpenAIGPTSource)
