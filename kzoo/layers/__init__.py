"""Backend-agnostic building blocks (keras.ops only)."""

from kzoo.layers.masked_lm_head import MaskedLMHead  # noqa: F401
from kzoo.layers.position_embedding import PositionEmbedding  # noqa: F401
from kzoo.layers.transformer_encoder import TransformerEncoder  # noqa: F401
