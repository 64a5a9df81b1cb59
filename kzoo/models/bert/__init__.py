"""BERT: encoder backbone, WordPiece tokenizer, tasks, Hugging Face converter."""

from kzoo.models.bert.bert_converter import HuggingFaceBertSource
from kzoo.presets.preset_source import register_converter

# Foreign checkpoint formats that from_preset reads.
register_converter(HuggingFaceBertSource)
