"""A causal Transformer block's step over its key/value cache, as one op.

``cached_decoder_block`` is a whole GPT block (layer norms, the fused
query/key/value projection, the cache write and the causal attention over
the cache, the output projection, the feed-forward network, both residual
sums) on a generation step's new positions: one call per block and step
where the same computation is a dozen ``kzoo.ops`` calls, each with its own
argument handling.

``cached_decoder_block_reference`` writes it with the ``keras.ops``
references of ``kzoo.ops.transformer`` (what the tests hold every backend
to). On PyTorch (``decoder_block_torch``) a one-token step at inference
calls the ATen kernels directly, the same kernels ``kzoo.ops``' own
PyTorch kernels call, in the same order, so its output is theirs; every
other case (autograd, several positions, mixed dtypes, other backends) is
the block composed of the ``kzoo.ops`` primitives (``composed``), each the
backend's fused kernel where it has one.
"""

import collections
import importlib

import keras

from kzoo.ops import transformer

#: a block's weights, each a tensor or variable (None where the layer has
#: none): the attention's layer norm, the fused query/key/value projection
#: ``[hidden, 3 * hidden]`` (queries, keys, values along the output, each
#: ``[heads, head_dim]`` flattened), the attention's output projection
#: ``[hidden, hidden]``, the feed-forward layer norm, the feed-forward
#: projections ``[hidden, intermediate]`` and ``[intermediate, hidden]``
DecoderBlockWeights = collections.namedtuple("DecoderBlockWeights", (
    "attention_norm_gamma", "attention_norm_beta",
    "query_key_value_kernel", "query_key_value_bias",
    "attention_output_kernel", "attention_output_bias",
    "feedforward_norm_gamma", "feedforward_norm_beta",
    "intermediate_kernel", "intermediate_bias",
    "output_kernel", "output_bias",
))


def check_block(x, cache, weights, activation):
    """An error naming the problem unless ``x``, ``cache`` and ``weights``
    fit one another (shapes only: nothing is computed)."""
    transformer.check_activation(activation)
    if not isinstance(weights, DecoderBlockWeights):
        raise TypeError(
            "`weights` must be a kzoo.ops.DecoderBlockWeights, got "
            f"{type(weights).__name__}.")
    if len(x.shape) != 3:
        raise ValueError(
            f"`x` must be [batch, length, hidden], got shape {tuple(x.shape)}.")
    if len(cache.shape) != 5 or cache.shape[1] != 2:
        raise ValueError(
            "`cache` must be [batch, 2, heads, max_length, head_dim] (keys, "
            f"then values, head-major), got shape {tuple(cache.shape)}.")
    hidden = cache.shape[2] * cache.shape[4]
    intermediate = weights.intermediate_kernel.shape[-1]
    expected = {
        "query_key_value_kernel": (hidden, 3 * hidden),
        "query_key_value_bias": (3 * hidden,),
        "attention_output_kernel": (hidden, hidden),
        "attention_output_bias": (hidden,),
        "intermediate_kernel": (hidden, intermediate),
        "intermediate_bias": (intermediate,),
        "output_kernel": (intermediate, hidden),
        "output_bias": (hidden,),
    }
    for name in ("attention_norm_gamma", "attention_norm_beta",
                 "feedforward_norm_gamma", "feedforward_norm_beta"):
        expected[name] = (hidden,)
    if x.shape[-1] != hidden:
        raise ValueError(
            f"`x`'s last size must be the cache's heads x head_dim = {hidden}, "
            f"got shape {tuple(x.shape)}.")
    for name, shape in expected.items():
        weight = getattr(weights, name)
        if weight is None:
            if name.endswith("kernel"):
                raise ValueError(f"`weights.{name}` is required.")
        elif tuple(weight.shape) != shape:
            raise ValueError(
                f"`weights.{name}` must have shape {shape} for a cache of "
                f"{cache.shape[2]} heads of size {cache.shape[4]}, got "
                f"{tuple(weight.shape)}.")


def _block(x, cache, index, weights, normalize_first, activation, epsilon,
           in_place, linear, layer_norm, cached_self_attention):
    """The block written with the given primitives."""
    w = weights
    residual = x
    if normalize_first:
        x = layer_norm(x, w.attention_norm_gamma, w.attention_norm_beta, epsilon)
    qkv = linear(x, w.query_key_value_kernel, w.query_key_value_bias)
    attended, cache = cached_self_attention(qkv, cache, index, in_place=in_place)
    x = linear(attended, w.attention_output_kernel, w.attention_output_bias,
               residual=residual)
    if not normalize_first:
        x = layer_norm(x, w.attention_norm_gamma, w.attention_norm_beta, epsilon)
    residual = x
    if normalize_first:
        x = layer_norm(x, w.feedforward_norm_gamma, w.feedforward_norm_beta,
                       epsilon)
    x = linear(x, w.intermediate_kernel, w.intermediate_bias, activation)
    x = linear(x, w.output_kernel, w.output_bias, residual=residual)
    if not normalize_first:
        x = layer_norm(x, w.feedforward_norm_gamma, w.feedforward_norm_beta,
                       epsilon)
    return x, cache


def cached_decoder_block_reference(x, cache, index, weights, normalize_first=True,
                                   activation="gelu_approximate", epsilon=1e-5,
                                   in_place=False):
    """``cached_decoder_block`` with the ``keras.ops`` references of
    ``linear``, ``layer_norm`` and ``cached_self_attention`` (the
    ``in_place`` hint is ignored)."""
    check_block(x, cache, weights, activation)
    return _block(x, cache, index, weights, normalize_first, activation, epsilon,
                  False, transformer.linear_reference,
                  transformer.layer_norm_reference,
                  transformer.cached_self_attention_reference)


def composed(x, cache, index, weights, normalize_first=True,
             activation="gelu_approximate", epsilon=1e-5, in_place=False):
    """``cached_decoder_block`` as the ``kzoo.ops`` primitives' calls."""
    return _block(x, cache, index, weights, normalize_first, activation, epsilon,
                  in_place, transformer.linear, transformer.layer_norm,
                  transformer.cached_self_attention)


def _kernel():
    backend = keras.backend.backend()
    if backend != "torch":
        return None
    return importlib.import_module(
        "kzoo.ops.decoder_block_torch").cached_decoder_block


def _composed_checked(x, cache, index, weights, normalize_first=True,
                      activation="gelu_approximate", epsilon=1e-5,
                      in_place=False):
    check_block(x, cache, weights, activation)
    return composed(x, cache, index, weights, normalize_first, activation,
                    epsilon, in_place)


_cached_decoder_block = _kernel() or _composed_checked


def cached_decoder_block(x, cache, index, weights, normalize_first=True,
                         activation="gelu_approximate", epsilon=1e-5,
                         in_place=False):
    """A causal Transformer block on ``length`` new positions over its
    key/value cache (a generation step)::

        h = x + attention(norm1(x)) @ Wo + bo      # normalize_first (GPT-2)
        y = h + act(norm2(h) @ W1 + b1) @ W2 + b2

        h = norm1(x + attention(x) @ Wo + bo)      # post-norm (GPT-1)
        y = norm2(h + act(h @ W1 + b1) @ W2 + b2)

    where ``attention`` projects to queries, keys and values with
    ``query_key_value_kernel``, writes the keys and values into ``cache``
    at ``index`` and lets position ``index + i`` attend to cache positions
    ``0 .. index + i`` (``kzoo.ops.cached_self_attention``). Inference
    only where it matters: no dropout.

    Args:
        x: float tensor ``[batch, length, hidden]``.
        cache: float tensor ``[batch, 2, heads, max_length, head_dim]``
            (keys, then values, head-major) with ``heads * head_dim ==
            hidden``.
        index: int or scalar int tensor, the position of ``x``'s first row.
        weights: a ``DecoderBlockWeights`` of tensors or variables in
            ``x``'s dtype (biases, gammas and betas may be None).
        normalize_first: bool. Pre-norm (GPT-2, default) or post-norm
            (GPT-1).
        activation: the feed-forward activation, one of ``kzoo.ops.linear``'s
            (``"gelu_approximate"`` by default, GPT's).
        epsilon: float, the layer norms' epsilon.
        in_place: bool. The caller owns ``cache`` and never reads its old
            value again: the backend may write into it
            (``kzoo.ops.update_cache``'s ``in_place``).

    Returns:
        ``(y, cache)``: ``[batch, length, hidden]`` in ``x``'s dtype and
        the updated cache.
    """
    return _cached_decoder_block(x, cache, index, weights, normalize_first,
                                 activation, epsilon, in_place)
