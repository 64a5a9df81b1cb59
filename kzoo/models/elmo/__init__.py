"""ELMo: a character-based bidirectional LSTM language model and its uses."""

from kzoo.models.elmo.elmo_converter import AllenNlpElmoSource
from kzoo.presets.preset_source import register_converter

# Foreign checkpoint formats that from_preset reads.
register_converter(AllenNlpElmoSource)
