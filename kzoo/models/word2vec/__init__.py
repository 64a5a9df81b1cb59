"""word2vec: skip-gram and CBOW with negative sampling, and `WordVectors`."""

from kzoo.models.word2vec.word2vec_converter import WordVectorsSource
from kzoo.presets.preset_source import register_converter

# Foreign checkpoint formats that from_preset reads.
register_converter(WordVectorsSource)
