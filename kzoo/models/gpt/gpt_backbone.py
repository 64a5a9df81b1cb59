"""GPT decoder network (GPT-1 post-norm or GPT-2 pre-norm)."""

import keras
from keras import ops

from kzoo import ops as kzoo_ops
from kzoo.api_export import kzoo_export
from kzoo.layers.position_embedding import PositionEmbedding
from kzoo.layers.transformer_decoder import TransformerDecoder
from kzoo.models.backbone import Backbone, check_heads, check_positive_ints
from kzoo.layers.dropout import Dropout


def _reads_as_stored(layer):
    """Whether ``layer``'s weights are used as stored: not quantized, and
    its variables in its compute dtype (no autocast)."""
    return (getattr(layer, "quantization_mode", None) is None
            and layer.compute_dtype == layer.variable_dtype)


def _gpt_initializer():
    # GPT's initializer_range: weights ~ N(0, 0.02).
    return keras.initializers.RandomNormal(stddev=0.02)


@kzoo_export("kzoo.models.GPTBackbone")
class GPTBackbone(Backbone):
    """GPT: token + learned position embeddings and causal decoder blocks.

    Two arrangements, as a config choice:

    * GPT-2 (``normalize_first=True``, the default): pre-norm
      ``TransformerDecoder`` blocks and a final layer norm, numerically
      Hugging Face's ``GPT2Model``;
    * GPT-1 (``normalize_first=False``): post-norm blocks and no final layer
      norm, as ``OpenAIGPTModel``.

    Embeddings are summed and dropped out; each block attends from a position
    to itself and the positions before it, and never to padded keys. The
    token embedding (``token_embedding``) doubles as the output projection of
    the language model head (tied weights, see ``GPTCausalLM``).

    ``call_with_cache`` runs the same network on a few positions with a
    key/value cache, for generation.

    Args:
        vocabulary_size: int. Number of token ids.
        num_layers: int. Number of decoder blocks.
        num_heads: int. Attention heads per block; divides ``hidden_dim``.
        hidden_dim: int. Width of the embeddings and hidden states.
        intermediate_dim: int. Width of each block's feed-forward network.
        dropout: float. Dropout of embeddings, attention probabilities and
            residual branches. Defaults to 0.1.
        max_sequence_length: int. Rows of the position table (the context).
            Defaults to 1024.
        layer_norm_epsilon: float. Defaults to 1e-5.
        activation: feed-forward activation. Defaults to
            ``"gelu_approximate"`` (GPT's tanh GELU, HF ``"gelu_new"``).
        normalize_first: bool. GPT-2 pre-norm + final layer norm (True) or
            GPT-1 post-norm (False).
        dtype: dtype policy of the layers. Defaults to the global policy.
        **kwargs: ``keras.Model`` arguments (``name``, ``trainable``).

    Call arguments:
        inputs: a dict with ``token_ids`` (int ``[batch, length]``) and
            ``padding_mask`` (bool or int ``[batch, length]``, true for real
            tokens).

    Returns:
        A dict with ``sequence_output``, ``[batch, length, hidden_dim]``.

    Example:
    >>> backbone = kzoo.models.GPTBackbone(
    ...     vocabulary_size=10, num_layers=2, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=6)
    >>> outputs = backbone({"token_ids": np.array([[1, 5, 7, 0]]),
    ...                     "padding_mask": np.array([[1, 1, 1, 0]])})
    >>> tuple(outputs["sequence_output"].shape)
    (1, 4, 4)

    Reference:
        Radford et al., 2018, "Improving Language Understanding by Generative
        Pre-Training"; Radford et al., 2019, "Language Models are
        Unsupervised Multitask Learners".
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        max_sequence_length=1024,
        layer_norm_epsilon=1e-5,
        activation="gelu_approximate",
        normalize_first=True,
        dtype=None,
        **kwargs,
    ):
        check_positive_ints(
            "GPTBackbone",
            vocabulary_size=vocabulary_size, num_layers=num_layers, num_heads=num_heads,
            hidden_dim=hidden_dim, intermediate_dim=intermediate_dim,
            max_sequence_length=max_sequence_length,
        )
        check_heads("GPTBackbone", hidden_dim, num_heads)

        # === Layers ===
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_dim, embeddings_initializer=_gpt_initializer(),
            dtype=dtype, name="token_embedding",
        )
        self.position_embedding = PositionEmbedding(
            max_sequence_length, initializer=_gpt_initializer(),
            dtype=dtype, name="position_embedding",
        )
        self.embeddings_add = keras.layers.Add(dtype=dtype, name="embeddings_add")
        self.embeddings_dropout = Dropout(
            dropout, dtype=dtype, name="embeddings_dropout")
        self.transformer_layers = [
            TransformerDecoder(
                intermediate_dim=intermediate_dim,
                num_heads=num_heads,
                dropout=dropout,
                activation=activation,
                layer_norm_epsilon=layer_norm_epsilon,
                kernel_initializer=_gpt_initializer(),
                normalize_first=normalize_first,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        self.layer_norm = None
        if normalize_first:
            self.layer_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, dtype=dtype, name="layer_norm")

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
        tokens = self.token_embedding(token_ids)
        x = self.embeddings_add([tokens, self.position_embedding(tokens)])
        x = self.embeddings_dropout(x)
        for layer in self.transformer_layers:
            x = layer(x, padding_mask=padding_mask)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        super().__init__(
            inputs={"token_ids": token_ids, "padding_mask": padding_mask},
            outputs={"sequence_output": x},
            dtype=dtype,
            **kwargs,
        )

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.layer_norm_epsilon = layer_norm_epsilon
        self.activation = activation
        self.normalize_first = normalize_first

    @classmethod
    def layout_rules(cls):
        """Megatron-style splits of the decoder (see ``get_layout_map``).

        Embedding tables (the token table is also the tied output layer)
        are split along the hidden width (50257 divides by almost nothing);
        the fused query/key/value kernel and the first feed-forward kernel
        by columns, the attention output and second feed-forward kernel by
        rows. Biases and layer norms are replicated.
        """
        block = r"transformer_layer_\d+/"
        return {
            r"(token|position)_embedding/embeddings": (None, "model"),
            block + r"query_key_value_dense/kernel": (None, "model"),
            block + r"attention_output_dense/kernel": ("model", None),
            block + r"feedforward_intermediate_dense/kernel": (None, "model"),
            block + r"feedforward_output_dense/kernel": ("model", None),
        }

    def build_cache(self, batch_size, max_length):
        """An empty key/value cache: a tuple of ``num_layers`` zero tensors
        ``[batch_size, 2, num_heads, max_length, hidden_dim // num_heads]``
        (head-major, see ``kzoo.layers.TransformerDecoder``)."""
        shape = (batch_size, 2, self.num_heads, max_length,
                 self.hidden_dim // self.num_heads)
        return tuple(ops.zeros(shape, dtype=self.compute_dtype)
                     for _ in self.transformer_layers)

    def call_with_cache(self, token_ids, cache, cache_update_index,
                        cache_in_place=False):
        """The network on ``length`` new positions, reading and writing a cache.

        Args:
            token_ids: int ``[batch, length]``, the tokens at positions
                ``cache_update_index .. cache_update_index + length - 1``.
            cache: the tuple ``build_cache`` made (or this method returned).
            cache_update_index: int or scalar int tensor.
            cache_in_place: bool. The caller owns ``cache`` and never reads
                its old value again (a generation loop): each layer may then
                write into its cache tensor itself (``kzoo.ops.update_cache``).
                Defaults to False (``cache`` is left unchanged).

        Returns:
            ``(sequence_output, cache)``: ``[batch, length, hidden_dim]``
            (after the final layer norm, as the ``sequence_output`` of a full
            call) and the updated cache.
        """
        if _reads_as_stored(self.token_embedding) and _reads_as_stored(
                self.position_embedding):
            # Both tables as they are: one op, without the layers' calls.
            x = kzoo_ops.token_position_embedding(
                token_ids, self.token_embedding.embeddings,
                self.position_embedding.embeddings, cache_update_index)
        else:
            tokens = self.token_embedding(token_ids)
            x = tokens + self.position_embedding(
                tokens, start_index=cache_update_index)
        new_cache = []
        for layer, layer_cache in zip(self.transformer_layers, cache):
            # A block whose variables are in its compute dtype needs nothing
            # from Keras' per-call work (input casts, autocast and name
            # scopes; `x` is in that dtype already): called directly, which
            # spares eager PyTorch a dispatch costing about as much as the
            # block's own kernels' at batch 1. A mixed policy (float32
            # variables, bfloat16 compute) goes through `__call__` for its
            # autocast.
            call = (layer.call if layer.compute_dtype == layer.variable_dtype
                    else layer)
            x, layer_cache = call(x, cache=layer_cache,
                                  cache_update_index=cache_update_index,
                                  cache_in_place=cache_in_place)
            new_cache.append(layer_cache)
        if self.layer_norm is not None:
            # The fused kernel, as the blocks' own norms in a cached call:
            # without the Keras layer's per-call casts.
            norm = self.layer_norm
            x = kzoo_ops.layer_norm(x, norm.gamma, norm.beta, norm.epsilon)
        return x, tuple(new_cache)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "num_layers": self.num_layers,
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "max_sequence_length": self.max_sequence_length,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "activation": self.activation,
                "normalize_first": self.normalize_first,
            }
        )
        return config
