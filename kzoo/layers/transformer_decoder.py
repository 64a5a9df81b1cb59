"""Transformer decoder block: causal self-attention with a key/value cache."""

import keras
from keras import ops

from kzoo import ops as kzoo_ops
from kzoo.api_export import kzoo_export
from kzoo.layers.transformer_block import (
    _LINEAR_ACTIVATIONS,
    TransformerBlock,
    _normalizes_last_axis,
)


@kzoo_export("kzoo.layers.TransformerDecoder")
class TransformerDecoder(TransformerBlock):
    """Decoder-only Transformer block (GPT): causal self-attention and an MLP.

    Pre-norm (``normalize_first=True``, GPT-2 and Hugging Face's
    ``GPT2Block``)::

        x = x + dropout(self_attention(layer_norm(x)))
        x = x + dropout(dense_out(activation(dense_in(layer_norm(x)))))

    Post-norm (``normalize_first=False``, GPT-1 and ``OpenAIGPT``'s
    ``Block``) applies each layer norm after its residual sum instead. Each
    position attends to itself and the positions before it. The query, key
    and value projections are one dense layer of width ``3 * hidden_dim``
    (split in that order, GPT-2's ``c_attn``), with ``num_heads`` heads of
    size ``hidden_dim // num_heads``.

    For generation the layer keeps a key/value cache: called with ``cache``
    (``[batch, 2, num_heads, max_length, head_dim]``, the keys and values of
    every position so far) and ``cache_update_index``, it writes the keys and
    values of its ``length`` input positions at ``cache_update_index`` and
    attends from them to cache positions ``<= cache_update_index + i``, so a
    new token costs one position's work instead of a rerun of the prefix.
    The cache is head-major (each head's keys one contiguous block): the
    attention products then read it in place, where the position-major
    layout (keras-hub's ``[batch, 2, max_length, num_heads, head_dim]``) has
    every step copy the whole cache into that order first (on XLA:CPU a
    large part of a generation step, ``bench/gpt.py``).

    Args:
        intermediate_dim: int. Width of the feed-forward network.
        num_heads: int. Number of attention heads; divides the input width.
        dropout: float. Dropout of the residual branches and the attention
            probabilities. Defaults to 0.
        activation: feed-forward activation: a Keras activation name,
            ``"gelu_approximate"`` (GPT's tanh GELU, the default) or a
            callable.
        layer_norm_epsilon: float. Defaults to 1e-5.
        kernel_initializer: initializer of the dense kernels.
        bias_initializer: initializer of the biases.
        normalize_first: bool. Pre-norm (GPT-2) when True, the default;
            post-norm (GPT-1) when False.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).

    Call arguments:
        inputs: float tensor ``[batch, length, hidden_dim]``.
        padding_mask: optional ``[batch, length]`` bool or int, true for real
            tokens; padded keys are not attended to (each position still
            attends to itself, which keeps padded rows finite). Only without
            ``cache``.
        cache: optional float tensor ``[batch, 2, num_heads, max_length,
            head_dim]``.
        cache_update_index: int or scalar int tensor: the position of the
            first input row (required with ``cache``).
        cache_in_place: bool. The caller owns ``cache`` and never reads its
            old value again (a generation loop): the new keys and values may
            then be written into ``cache`` itself
            (``kzoo.ops.update_cache``'s ``in_place``). Defaults to False
            (``cache`` is left unchanged).
        training: bool. Whether dropout is active.

    Returns:
        The block's output, ``[batch, length, hidden_dim]``; with ``cache``,
        the tuple ``(output, updated_cache)``.

    Example:
    >>> layer = kzoo.layers.TransformerDecoder(intermediate_dim=8, num_heads=2)
    >>> x = np.ones((2, 3, 4), "float32")
    >>> tuple(layer(x).shape)
    (2, 3, 4)
    >>> cache = np.zeros((2, 2, 2, 5, 2), "float32")
    >>> y, cache = layer(x[:, :1], cache=cache, cache_update_index=0)
    >>> tuple(y.shape), tuple(cache.shape)
    ((2, 1, 4), (2, 2, 2, 5, 2))

    Reference:
        Radford et al., 2018, "Improving Language Understanding by Generative
        Pre-Training"; Radford et al., 2019, "Language Models are
        Unsupervised Multitask Learners".
    """

    default_activation = "gelu_approximate"
    default_normalize_first = True

    def build(self, inputs_shape):
        hidden_dim = inputs_shape[-1]
        self.head_dim = self._head_dim(hidden_dim)
        self.hidden_dim = hidden_dim
        self.self_attention_layer_norm = self._layer_norm(
            "self_attention_layer_norm", inputs_shape)
        self.query_key_value_dense = self._dense(
            3 * hidden_dim, "query_key_value_dense", inputs_shape)
        self.attention_output_dense = self._dense(
            hidden_dim, "attention_output_dense", inputs_shape)
        self.attention_dropout = self._dropout("attention_dropout")
        self.self_attention_dropout = self._dropout("self_attention_dropout")
        self.feedforward_layer_norm = self._layer_norm(
            "feedforward_layer_norm", inputs_shape)
        self._build_feedforward(inputs_shape)
        self.feedforward_dropout = self._dropout("feedforward_dropout")
        self.built = True

    def _attention_mask(self, length, padding_mask):
        """``[batch or 1, 1, length, length]`` bool: who sees whom."""
        queries = keys = ops.arange(length, dtype="int32")
        mask = keys[None, :] <= queries[:, None]  # causal (diagonal included)
        if padding_mask is not None:
            valid = ops.cast(padding_mask, "bool")[:, None, :]
            mask = ops.logical_or(
                ops.logical_and(mask[None], valid),
                (keys[None, :] == queries[:, None])[None],  # a padded row sees itself
            )
        else:
            mask = mask[None]
        return mask[:, None]

    def _attend(self, query, key, value, mask, training=None):
        """Scaled dot-product attention (``kzoo.ops.attention``), ``[batch,
        length, heads, head_dim]``, with the attention dropout on its
        probabilities when training."""
        return kzoo_ops.attention(query, key, value, mask=mask,
                                  **self._attention_dropout_arguments(training))

    def _check_cache(self, cache):
        shape = tuple(cache.shape)
        expected = (2, self.num_heads, None, self.head_dim)
        if len(shape) != 5 or any(
                want is not None and got is not None and got != want
                for got, want in zip(shape[1:], expected)):
            raise ValueError(
                f"`cache` must be [batch, 2, num_heads={self.num_heads}, "
                f"max_length, head_dim={self.head_dim}] (head-major; "
                f"`build_cache` makes one), got shape {shape}.")

    def _step_weights(self):
        """``(weights, activation)``, the block's weights as a
        ``kzoo.ops.DecoderBlockWeights`` and its activation by
        ``kzoo.ops.linear``'s name for it, where
        ``kzoo.ops.cached_decoder_block`` computes what its sublayers do
        (plain ``Dense`` layers, unquantized, LoRA's merged kernels where
        enabled; an activation ``linear`` has; plain last-axis layer norms
        of the block's epsilon), else None."""
        norms = (self.self_attention_layer_norm, self.feedforward_layer_norm)
        denses = (self.query_key_value_dense, self.attention_output_dense,
                  self.feedforward_intermediate_dense, self.feedforward_output_dense)
        if not all(type(d) is keras.layers.Dense and d.quantization_mode is None
                   for d in denses):
            return None
        activation = _LINEAR_ACTIVATIONS.get(
            self.feedforward_intermediate_dense.activation, False)
        if activation is False or any(
                d.activation is not keras.activations.linear for d in denses
                if d is not self.feedforward_intermediate_dense):
            return None
        if not all(type(n) is keras.layers.LayerNormalization
                   and _normalizes_last_axis(n, 3)
                   and n.epsilon == self.layer_norm_epsilon for n in norms):
            return None
        return kzoo_ops.DecoderBlockWeights(
            norms[0].gamma, norms[0].beta, denses[0].kernel, denses[0].bias,
            denses[1].kernel, denses[1].bias, norms[1].gamma, norms[1].beta,
            denses[2].kernel, denses[2].bias, denses[3].kernel, denses[3].bias,
        ), activation

    def _self_attention(self, x, padding_mask, cache, cache_update_index,
                        training, residual=None, cache_in_place=False):
        fast = cache is not None
        qkv = self._sublayer(self.query_key_value_dense, x, fast)
        if cache is not None:
            # The cache write, the causal attention over the cache and the
            # heads' merge as one op (one call per step, not a dozen).
            x, cache = kzoo_ops.cached_self_attention(
                qkv, cache, cache_update_index, in_place=cache_in_place)
        else:
            shape = ops.shape(x)
            batch, length = shape[0], shape[1]
            heads = (batch, length, self.num_heads, self.head_dim)
            query, key, value = (ops.reshape(t, heads)
                                 for t in ops.split(qkv, 3, axis=-1))
            mask = self._attention_mask(length, padding_mask)
            x = self._attend(query, key, value, mask, training=training)
            x = ops.reshape(x, (batch, length, self.hidden_dim))
        return self._sublayer(self.attention_output_dense, x, fast,
                              residual), cache

    def call(self, inputs, padding_mask=None, cache=None, cache_update_index=None,
             cache_in_place=False, training=None):
        if cache is not None and cache_update_index is None:
            raise ValueError("`cache_update_index` is required with `cache`.")
        if cache is not None and padding_mask is not None:
            raise ValueError(
                "Pass `padding_mask` or `cache`, not both: with a cache every "
                "position up to `cache_update_index` is attended to.")
        if cache is not None:
            self._check_cache(cache)
            step = None if training else self._step_weights()
            if step is not None:  # one op for the whole block
                weights, activation = step
                return kzoo_ops.cached_decoder_block(
                    inputs, cache, cache_update_index, weights,
                    normalize_first=self.normalize_first, activation=activation,
                    epsilon=self.layer_norm_epsilon, in_place=cache_in_place)
        x, cache = self._residual_block(
            inputs,
            lambda x, residual: self._self_attention(
                x, padding_mask, cache, cache_update_index, training, residual,
                cache_in_place),
            fast=cache is not None,  # generation: without Keras' per-call work
            training=training)
        if cache is not None:
            return x, cache
        return x
