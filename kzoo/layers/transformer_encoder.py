"""Transformer encoder block: self-attention and a feed-forward network."""

import keras
from keras import ops

from kzoo import ops as kzoo_ops
from kzoo.api_export import kzoo_export
from kzoo.layers.transformer_block import TransformerBlock

@kzoo_export("kzoo.layers.TransformerEncoder")
class TransformerEncoder(TransformerBlock):
    """Transformer encoder block, post-norm (BERT) or pre-norm.

    Post-norm (``normalize_first=False``, as BERT and Hugging Face's
    ``BertLayer``)::

        x = layer_norm(x + dropout(self_attention(x)))
        x = layer_norm(x + dropout(dense_out(activation(dense_in(x)))))

    Pre-norm (``normalize_first=True``) puts each layer norm at the start of
    its branch instead: ``x = x + dropout(self_attention(layer_norm(x)))``.
    Attention is ``keras.layers.MultiHeadAttention`` with ``num_heads`` heads
    of size ``hidden_dim // num_heads`` (``hidden_dim`` is the input's last
    dimension), with ``dropout`` on the attention probabilities too.

    Args:
        intermediate_dim: int. Width of the feed-forward network.
        num_heads: int. Number of attention heads; must divide the input's
            hidden size.
        dropout: float. Dropout rate of both residual branches and of the
            attention probabilities. Defaults to 0.
        activation: the feed-forward activation: a Keras activation name
            (``"gelu"`` is the exact erf GELU), ``"gelu_approximate"`` (tanh
            form) or a callable. Defaults to ``"relu"``.
        layer_norm_epsilon: float. Epsilon of the layer norms. Defaults to
            1e-5.
        kernel_initializer: initializer of the dense and attention kernels.
            Defaults to ``"glorot_uniform"``.
        bias_initializer: initializer of the biases. Defaults to ``"zeros"``.
        normalize_first: bool. Pre-norm instead of post-norm. Defaults to
            False.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``, ...).

    Call arguments:
        inputs: float tensor ``[batch, length, hidden_dim]``.
        padding_mask: optional ``[batch, length]`` bool or int tensor, true
            (non-zero) for real tokens. Attention ignores padded keys; a
            sequence with no real token at all attends uniformly to all its
            positions (as Hugging Face BERT), which keeps it finite.
        attention_mask: optional ``[batch, length, length]`` bool or int
            tensor, combined with ``padding_mask`` (both must allow a pair).
        training: bool. Whether dropout is active.

    Returns:
        A tensor of the input's shape.

    Example:
    >>> layer = kzoo.layers.TransformerEncoder(intermediate_dim=8, num_heads=2)
    >>> x = np.ones((2, 3, 4), "float32")
    >>> tuple(layer(x, padding_mask=np.array([[1, 1, 0], [1, 0, 0]])).shape)
    (2, 3, 4)

    Reference:
        Vaswani et al., 2017, "Attention Is All You Need"; Devlin et al.,
        2019, "BERT: Pre-training of Deep Bidirectional Transformers".
    """

    default_activation = "relu"
    default_normalize_first = False

    def __init__(self, intermediate_dim, num_heads, **kwargs):
        super().__init__(intermediate_dim, num_heads, **kwargs)
        self.supports_masking = True

    def build(self, inputs_shape):
        head_dim = self._head_dim(inputs_shape[-1])
        self.self_attention_layer = keras.layers.MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=head_dim,
            dropout=self.dropout,
            name="self_attention_layer",
            **self._initializers(),
            dtype=self.dtype_policy,
        )
        self.self_attention_layer.build(inputs_shape, inputs_shape)
        self.self_attention_layer_norm = self._layer_norm(
            "self_attention_layer_norm", inputs_shape)
        # The attention-probability dropout's rate and seed, applied inside
        # `kzoo.ops.attention`; the MultiHeadAttention layer holds the
        # weights, and its own dropout sublayer is never called.
        self.attention_dropout = self._dropout("attention_dropout")
        self.self_attention_dropout = self._dropout("self_attention_dropout")
        self._build_feedforward(inputs_shape)
        self.feedforward_layer_norm = self._layer_norm(
            "feedforward_layer_norm", inputs_shape)
        self.feedforward_dropout = self._dropout("feedforward_dropout")
        self.built = True

    def _attention_mask(self, padding_mask, attention_mask):
        """The keys each query may attend to, true where allowed.

        ``[batch, 1, length]`` (one row for every query) from a padding mask
        alone, ``[batch, length, length]`` with an ``attention_mask``: a
        padding mask never needs the full square, and building it costs more
        than the attention's masking itself.
        """
        mask = None
        if padding_mask is not None:
            mask = ops.cast(padding_mask, "bool")[:, None, :]  # [B, 1, S]
        if attention_mask is not None:
            attention_mask = ops.cast(attention_mask, "bool")
            mask = attention_mask if mask is None else ops.logical_and(
                mask, attention_mask)
        if mask is None:
            return None
        # A query row with no allowed key attends to every key (finite, and
        # what Hugging Face's additive mask gives) instead of producing NaN.
        any_allowed = ops.any(mask, axis=-1, keepdims=True)
        return ops.logical_or(mask, ops.logical_not(any_allowed))

    def _self_attention(self, x, mask, training, fast, residual=None):
        """Multi-head self-attention on ``self_attention_layer``'s weights:
        the fused ``kzoo.ops.attention`` (faster on PyTorch and JAX than
        einsum / softmax, docs/benchmarks.md), with the attention dropout
        on its probabilities when training; plus ``residual`` when given.
        ``fast``: ``_sublayer``'s."""
        attention = self.self_attention_layer
        # [batch, length, heads, head_dim]
        query, key, value = self._projections(
            (attention._query_dense, attention._key_dense,
             attention._value_dense), x, fast)
        if mask is not None:
            mask = ops.expand_dims(mask, 1)  # [B, 1, 1 or T, S], for every head
        x = kzoo_ops.attention(query, key, value, mask=mask,
                               scale=attention._inverse_sqrt_key_dim,
                               **self._attention_dropout_arguments(training))
        return self._sublayer(attention._output_dense, x, fast, residual)

    def call(self, inputs, padding_mask=None, attention_mask=None, training=None):
        mask = self._attention_mask(padding_mask, attention_mask)
        fast = self._fast_sublayers(training)
        x, _ = self._residual_block(
            inputs,
            lambda x, residual: (
                self._self_attention(x, mask, training, fast, residual), None),
            fast=fast,
            training=training)
        return x
