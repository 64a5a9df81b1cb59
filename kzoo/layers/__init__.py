"""Backend-agnostic building blocks (keras.ops only)."""

from kzoo.layers.masked_lm_head import MaskedLMHead  # noqa: F401
from kzoo.layers.position_embedding import PositionEmbedding  # noqa: F401
from kzoo.layers.transformer_block import TransformerBlock  # noqa: F401
from kzoo.layers.transformer_encoder import TransformerEncoder  # noqa: F401
from kzoo.layers.character_cnn import CharacterCNN  # noqa: F401
from kzoo.layers.highway import Highway  # noqa: F401
from kzoo.layers.projected_lstm import ProjectedLSTM  # noqa: F401
from kzoo.layers.projected_lstm_cell import ProjectedLSTMCell  # noqa: F401
from kzoo.layers.scalar_mix import ScalarMix  # noqa: F401
from kzoo.layers.tied_embedding_logits import TiedEmbeddingLogits  # noqa: F401
from kzoo.layers.transformer_decoder import TransformerDecoder  # noqa: F401
from kzoo.layers.vocabulary_mask import VocabularyMask  # noqa: F401
from kzoo.layers.dropout import Dropout  # noqa: F401
from kzoo.layers.sequence_pooling import SequencePooling  # noqa: F401
