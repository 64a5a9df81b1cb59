"""PyTorch kernel of ``kzoo.ops.cached_decoder_block`` (imported on that
backend only).

A one-token step at inference (no autograd), on fewer than
``transformer_torch.ONEDNN_MIN_ROWS`` rows, with every weight in the
input's dtype and a contiguous cache it may write in place (a generation
loop's) runs as the ATen calls themselves, on ``[batch, hidden]`` rows:
``layer_norm``, ``addmm`` (the product with its bias; ``mm`` without one),
one ``copy_`` of the new keys and values into the cache, the attention of
the one query over the cache's filled positions, the activation's kernel
and the residual sums. These are the kernels ``kzoo.ops``' PyTorch
``layer_norm``, ``linear`` and ``cached_self_attention`` run for such a
step, in the same order, so the output is theirs to the bit; what goes is
their per-call argument handling and the views between them (a step of
GPT-2 small's shape makes about 40% fewer ATen calls). Within
``kzoo.ops.packed_weights()`` (the generation loop's scope) the products
are oneDNN's from the kernels' packed copies (``kzoo.ops.packed``):
about twice as fast on these few rows; the same bits in bfloat16, float32
sums in another order.

Every other case is the block composed of those ``kzoo.ops`` calls
(``decoder_block.composed``).
"""

import torch
import torch.nn.functional as F

from kzoo.ops import decoder_block, packed_torch, transformer_torch

_ACTIVATIONS = {
    None: None,
    "relu": torch.relu,
    "gelu": lambda y: F.gelu(y, approximate="none"),
    "gelu_approximate": lambda y: F.gelu(y, approximate="tanh"),
}


def _product(x, kernel, bias):
    # oneDNN's product from the packed kernel within
    # `kzoo.ops.packed_weights()` (a generation loop's); else what
    # `F.linear(x, kernel.t(), bias)` dispatches to, called directly.
    y = packed_torch.product(x, kernel, bias)
    if y is not None:
        return y
    if bias is None:
        return torch.mm(x, kernel)
    return torch.addmm(bias, x, kernel)


def _norm(x, gamma, beta, epsilon):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, epsilon)


def _runs_directly(x, cache, weights, in_place):
    if not in_place or x.shape[1] != 1 or not cache.is_contiguous():
        return False
    if x.shape[0] >= transformer_torch.ONEDNN_MIN_ROWS:
        return False  # `linear` takes oneDNN's kernel there
    dtype = x.dtype
    if cache.dtype != dtype or any(
            w is not None and w.dtype != dtype for w in weights):
        return False
    if torch.is_grad_enabled() and (x.requires_grad or cache.requires_grad or any(
            w is not None and w.requires_grad for w in weights)):
        return False
    return True


def cached_decoder_block(x, cache, index, weights, normalize_first=True,
                         activation="gelu_approximate", epsilon=1e-5,
                         in_place=False):
    tensor = transformer_torch._tensor
    x, cache = tensor(x), tensor(cache)
    if not isinstance(weights, decoder_block.DecoderBlockWeights):
        decoder_block.check_block(x, cache, weights, activation)  # raises
    weights = decoder_block.DecoderBlockWeights._make(
        None if w is None else tensor(w) for w in weights)
    decoder_block.check_block(x, cache, weights, activation)
    if not _runs_directly(x, cache, weights, in_place):
        return decoder_block.composed(x, cache, index, weights, normalize_first,
                                      activation, epsilon, in_place)
    (gamma1, beta1, qkv_kernel, qkv_bias, out_kernel, out_bias,
     gamma2, beta2, kernel1, bias1, kernel2, bias2) = weights
    batch, _, hidden = x.shape
    heads, head_dim = cache.shape[2], cache.shape[4]
    index = int(index)  # a Python or 0-d tensor position
    end = index + 1
    with torch.no_grad():
        rows = x.reshape(batch, hidden)
        h = _norm(rows, gamma1, beta1, epsilon) if normalize_first else rows
        qkv = _product(h, qkv_kernel, qkv_bias).view(batch, 3, heads, head_dim)
        # The keys and values of the step into the cache, both at once.
        cache[:, :, :, index].copy_(qkv[:, 1:])
        query = qkv[:, 0].unsqueeze(2)  # [batch, heads, 1, head_dim]
        keys, values = cache[:, 0, :, :end], cache[:, 1, :, :end]
        if (x.dtype != torch.float32
                and batch * end >= transformer_torch.WRITTEN_OUT_MIN_KEYS):
            attended = transformer_torch._one_query_attention(query, keys, values)
        else:
            attended = F.scaled_dot_product_attention(query, keys, values)
        h = _product(attended.reshape(batch, hidden), out_kernel, out_bias)
        h += rows
        if not normalize_first:
            h = _norm(h, gamma1, beta1, epsilon)
        y = _norm(h, gamma2, beta2, epsilon) if normalize_first else h
        y = _product(y, kernel1, bias1)
        if _ACTIVATIONS[activation] is not None:
            y = _ACTIVATIONS[activation](y)
        y = _product(y, kernel2, bias2)
        y += h
        if not normalize_first:
            y = _norm(y, gamma2, beta2, epsilon)
    return y.view(batch, 1, hidden), cache
