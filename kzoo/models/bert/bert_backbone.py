"""BERT encoder network."""

import keras

from kzoo.api_export import kzoo_export
from kzoo.layers.position_embedding import PositionEmbedding
from kzoo.layers.transformer_encoder import TransformerEncoder
from kzoo.models.backbone import Backbone, check_heads, check_positive_ints
from kzoo.layers.dropout import Dropout

# Registers the reader of Hugging Face BERT folders, so that
# BertBackbone.from_preset(<a transformers checkpoint folder>) works.


def _bert_initializer():
    # BERT's initializer_range: weights ~ N(0, 0.02), truncated.
    return keras.initializers.TruncatedNormal(stddev=0.02)


@kzoo_export("kzoo.models.BertBackbone")
class BertBackbone(Backbone):
    """BERT: a stack of bidirectional post-norm Transformer encoder blocks.

    The network of Hugging Face's ``BertModel``, numerically: token, learned
    position and segment embeddings are summed, layer-normalized and dropped
    out, then go through ``num_layers`` ``TransformerEncoder`` blocks
    (self-attention over the real tokens, dropout, residual, layer norm,
    feed-forward, dropout, residual, layer norm). ``pooled_output`` is a dense
    layer with tanh on the first token (``[CLS]``), as BERT's pooler.

    No head, no tokenizer: the inputs are the dict a BERT preprocessor gives,
    which also truncates texts to at most ``max_sequence_length`` tokens. A
    longer input raises a ValueError naming both lengths when the length is
    known while tracing (eager calls, JAX, torch); inside a TensorFlow graph
    with an unknown length the error comes from the slice at run time.

    Every layer's hidden states (the embedding output and each block's output,
    ``num_layers + 1`` tensors like Hugging Face's ``hidden_states``, for the
    BERT paper's feature-based approach) are available through
    ``hidden_states_model()``, a model that shares this backbone's weights;
    the backbone's own outputs stay small.

    Args:
        vocabulary_size: int. Number of token ids.
        num_layers: int. Number of encoder blocks.
        num_heads: int. Attention heads per block; divides ``hidden_dim``.
        hidden_dim: int. Width of the embeddings and hidden states.
        intermediate_dim: int. Width of each block's feed-forward network.
        dropout: float. Dropout rate (embeddings, attention probabilities,
            residual branches). Defaults to 0.1.
        max_sequence_length: int. Rows of the position embedding table.
            Defaults to 512.
        num_segments: int. Number of segment ids (2 for sentence pairs).
            Defaults to 2.
        layer_norm_epsilon: float. Defaults to 1e-12, as BERT.
        activation: feed-forward activation. ``"gelu"`` (default) is the exact
            erf GELU of Hugging Face BERT; ``"gelu_approximate"`` is the tanh
            form of keras-hub's BERT; any Keras activation name also works.
        dtype: dtype policy of the layers (``"float32"``, ``"bfloat16"``,
            ``"mixed_bfloat16"``, ...). Defaults to the global policy.
        **kwargs: ``keras.Model`` arguments (``name``, ``trainable``).

    Call arguments:
        inputs: a dict with ``token_ids`` (int ``[batch, length]``),
            ``segment_ids`` (int ``[batch, length]``) and ``padding_mask``
            (bool or int ``[batch, length]``, true for real tokens).

    Returns:
        A dict with ``sequence_output`` (``[batch, length, hidden_dim]``, the
        last block's output) and ``pooled_output`` (``[batch, hidden_dim]``).

    Example:
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=10, num_layers=2, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=6)
    >>> outputs = backbone({
    ...     "token_ids": np.array([[2, 5, 7, 3, 0]]),
    ...     "segment_ids": np.array([[0, 0, 0, 0, 0]]),
    ...     "padding_mask": np.array([[1, 1, 1, 1, 0]])})
    >>> tuple(outputs["sequence_output"].shape), tuple(outputs["pooled_output"].shape)
    ((1, 5, 4), (1, 4))

    Reference:
        Devlin et al., 2019, "BERT: Pre-training of Deep Bidirectional
        Transformers for Language Understanding" (arXiv:1810.04805).
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        max_sequence_length=512,
        num_segments=2,
        layer_norm_epsilon=1e-12,
        activation="gelu",
        dtype=None,
        **kwargs,
    ):
        check_positive_ints(
            "BertBackbone",
            vocabulary_size=vocabulary_size, num_layers=num_layers, num_heads=num_heads,
            hidden_dim=hidden_dim, intermediate_dim=intermediate_dim,
            max_sequence_length=max_sequence_length, num_segments=num_segments,
        )
        check_heads("BertBackbone", hidden_dim, num_heads)

        # === Layers ===
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_dim,
            embeddings_initializer=_bert_initializer(),
            dtype=dtype, name="token_embedding",
        )
        self.position_embedding = PositionEmbedding(
            max_sequence_length, initializer=_bert_initializer(),
            dtype=dtype, name="position_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments, hidden_dim,
            embeddings_initializer=_bert_initializer(),
            dtype=dtype, name="segment_embedding",
        )
        self.embeddings_add = keras.layers.Add(dtype=dtype, name="embeddings_add")
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=dtype, name="embeddings_layer_norm"
        )
        self.embeddings_dropout = Dropout(
            dropout, dtype=dtype, name="embeddings_dropout"
        )
        self.transformer_layers = []
        for i in range(num_layers):
            self.transformer_layers.append(
                TransformerEncoder(
                    intermediate_dim=intermediate_dim,
                    num_heads=num_heads,
                    dropout=dropout,
                    activation=activation,
                    layer_norm_epsilon=layer_norm_epsilon,
                    kernel_initializer=_bert_initializer(),
                    dtype=dtype,
                    name=f"transformer_layer_{i}",
                )
            )
        self.pooled_dense = keras.layers.Dense(
            hidden_dim, activation="tanh",
            kernel_initializer=_bert_initializer(),
            dtype=dtype, name="pooled_dense",
        )

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
        tokens = self.token_embedding(token_ids)
        x = self.embeddings_add(
            [tokens, self.position_embedding(tokens),
             self.segment_embedding(segment_ids)]
        )
        x = self.embeddings_layer_norm(x)
        x = self.embeddings_dropout(x)
        for layer in self.transformer_layers:
            x = layer(x, padding_mask=padding_mask)
        pooled = self.pooled_dense(x[:, 0, :])
        super().__init__(
            inputs={
                "token_ids": token_ids,
                "segment_ids": segment_ids,
                "padding_mask": padding_mask,
            },
            outputs={"sequence_output": x, "pooled_output": pooled},
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
        self.num_segments = num_segments
        self.layer_norm_epsilon = layer_norm_epsilon
        self.activation = activation

    @classmethod
    def layout_rules(cls):
        """Megatron-style splits of the encoder (see ``get_layout_map``).

        Embedding tables are split along the hidden width (vocabularies
        such as 30522 divide by almost nothing); attention is split by heads
        (query/key/value on their heads axis, the output projection on its
        heads axis); the feed-forward network column-then-row; the pooler
        and the masked-LM transform by columns. The segment table is small
        and replicated. Biases and layer norms are replicated.
        """
        block = r"transformer_layer_\d+/"
        return {
            r"(token|position)_embedding/embeddings": (None, "model"),
            r"segment_embedding/embeddings": (None, None),
            block + r"self_attention_layer/(query|key|value)/kernel": (None, "model", None),
            block + r"self_attention_layer/attention_output/kernel": ("model", None, None),
            block + r"feedforward_intermediate_dense/kernel": (None, "model"),
            block + r"feedforward_output_dense/kernel": ("model", None),
            r"pooled_dense/kernel": (None, "model"),
            r"masked_lm_head/transform_dense/kernel": (None, "model"),
        }

    def hidden_states_model(self):
        """A model giving every layer's hidden states, sharing these weights.

        Returns:
            A ``keras.Model`` that takes the backbone's input dict and returns
            its two outputs plus ``hidden_states``: a list of
            ``num_layers + 1`` tensors ``[batch, length, hidden_dim]``, the
            embedding output and then each encoder block's output (the last
            equals ``sequence_output``), as Hugging Face's ``hidden_states``.
            It builds no new layers: training the backbone changes it too.

        Example:
        >>> backbone = kzoo.models.BertBackbone(
        ...     vocabulary_size=10, num_layers=2, num_heads=2, hidden_dim=4,
        ...     intermediate_dim=8)
        >>> features = backbone.hidden_states_model()({
        ...     "token_ids": np.array([[2, 5, 3]]),
        ...     "segment_ids": np.array([[0, 0, 0]]),
        ...     "padding_mask": np.array([[1, 1, 1]])})
        >>> [tuple(h.shape) for h in features["hidden_states"]]
        [(1, 3, 4), (1, 3, 4), (1, 3, 4)]
        """
        hidden_states = [self.embeddings_dropout.output] + [
            layer.output for layer in self.transformer_layers
        ]
        outputs = {
            "sequence_output": hidden_states[-1],
            "pooled_output": self.pooled_dense.output,
            "hidden_states": hidden_states,
        }
        return keras.Model(
            inputs=self.input, outputs=outputs, name=f"{self.name}_hidden_states"
        )

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
                "num_segments": self.num_segments,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "activation": self.activation,
            }
        )
        return config
