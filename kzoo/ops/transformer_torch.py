"""PyTorch kernels of ``kzoo.ops.transformer`` (imported on that backend only).

Each takes what the public function takes (tensors or Keras variables) and
calls the ATen kernel directly; where the inputs' dtypes differ it defers to
the ``keras.ops`` reference, whose type promotion it would otherwise have to
repeat.

``update_cache`` with ``in_place``, without autograd and on a contiguous
cache copies the new keys and values into the cache's own rows (two small ``copy_`` into views of
the cache) instead of ``keras.ops.slice_update``'s clone of the whole cache.

``cached_self_attention`` reads only the cache's filled positions (the
position is a Python number in eager PyTorch): a one-token step attends to
all of them, with no mask; a longer one from position 0 is plain causal
attention (``is_causal``); otherwise a boolean mask of the filled
positions' size. A one-token step in bfloat16 (or float16) over at least
``WRITTEN_OUT_MIN_KEYS`` keys (rows x filled positions) runs the two
products and the softmax as separate kernels (``_one_query_attention``):
PyTorch's fused CPU attention takes longer on a single query in reduced
precision, though not in float32, nor on a few keys.

``attention`` in bfloat16 on a CPU, over at most
``BATCHED_PRODUCT_MAX_KEYS`` keys and at least
``BATCHED_PRODUCT_MIN_SCORES`` scores, runs as two batched products and a
softmax (``baddbmm``: the scale and the additive mask applied to the
float32 products before they are rounded to bfloat16; ``softmax``;
``bmm``): there it is faster than ``scaled_dot_product_attention``'s CPU
flash kernel, whose tiles are small for BERT's head sizes, at inference
and yet more in training (the flash kernel's forward and backward take
4x the batched products' time at BERT's shapes). Its scores are rounded to bfloat16
before the softmax (as in Keras' and Hugging Face's eager attention),
where the flash kernel keeps them in float32. Dropout on the
probabilities (training) is ``kzoo.ops.dropout`` between the softmax and
the second product. Longer keys, fewer scores and float32 keep the fused
kernel (and with dropout the reference: the fused kernel's dropout draws
from PyTorch's global generator, not the Keras seed); under
``torch.compile`` inductor compiles the batched products too (faster
there as well), an all-ones mask added rather than checked.

``linear`` on a CPU without autograd (inference), on at least
``ONEDNN_MIN_ROWS`` rows, runs oneDNN's linear with the bias and the
activation (or the residual sum) fused in
(``torch.ops.mkldnn._linear_pointwise``, the kernel ``torch.compile`` emits
for a CPU linear): there it is faster than ``addmm``, which writes the
broadcast bias into the output and then accumulates the product onto it.
On fewer rows (a generation step's one) ``addmm`` is the faster. With
autograd in float32 (training) the product and both its gradients are
oneDNN's linear too (``_OneDNNLinear``): ``addmm``'s float32 BLAS (MKL)
runs at 40% of their speed on AMD CPUs (190 against 470 GFLOP/s at BERT's
shapes on a Zen 5), where bfloat16 ``addmm`` already reaches oneDNN. With
autograd in bfloat16, under ``torch.compile`` (which chooses the kernel
itself), or where PyTorch is built without oneDNN, it is ``F.linear`` and
the activation's kernel.
"""

import math
import weakref

import keras
import torch
import torch.nn.functional as F
from keras import ops

from kzoo.ops import dropout_mask, transformer


def _tensor(x):
    # A tensor as is; a Keras variable's value (cast by the autocast scope),
    # read without `convert_to_tensor`'s device move (a no-op `.to` call per
    # read, paid by every weight of every generation step).
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, keras.Variable):
        return x.value
    return ops.convert_to_tensor(x)


_ONEDNN_LINEAR = (getattr(torch.ops.mkldnn, "_linear_pointwise", None)
                  if torch.backends.mkldnn.is_available() else None)
#: (post-op, algorithm) of oneDNN's linear for each `linear` activation
_ONEDNN_ACTIVATIONS = {None: ("none", ""), "relu": ("relu", ""),
                       "gelu": ("gelu", "none"), "gelu_approximate": ("gelu", "tanh")}
# bfloat16 where oneDNN runs it on this CPU (its linear refuses it elsewhere).
_ONEDNN_DTYPES = (torch.float32,) + (
    (torch.bfloat16,) if _ONEDNN_LINEAR is not None
    and torch.ops.mkldnn._is_mkldnn_bf16_supported() else ())
#: fewest rows (product of the leading dimensions) sent to oneDNN's linear
ONEDNN_MIN_ROWS = 64
#: dtypes whose CPU inference attention runs as batched products
_BATCHED_PRODUCT_DTYPES = (torch.bfloat16,)
#: most keys for which it does (its scores, all heads at once, stay in cache)
BATCHED_PRODUCT_MAX_KEYS = 256
#: fewest scores (batch x heads x queries x keys) for which it does (below,
#: its few more ops cost more than they save)
BATCHED_PRODUCT_MIN_SCORES = 2 ** 15


def _cast(x, dtype):
    return x if x.dtype == dtype else x.to(dtype)


def _compiling():
    # Under torch.compile, inductor picks (and fuses) the CPU linear kernel
    # itself; it cannot lower a direct call of oneDNN's.
    compiler = getattr(torch, "compiler", None)
    return bool(compiler and compiler.is_compiling())


def _needs_grad(*tensors):
    return torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in tensors)


def linear(x, kernel, bias=None, activation=None, residual=None):
    transformer.check_activation(activation)
    x, kernel = _tensor(x), _tensor(kernel)
    if bias is not None:
        bias = _tensor(bias)
    if residual is not None:
        residual = _tensor(residual)
    if any(t is not None and t.dtype != x.dtype for t in (kernel, bias, residual)):
        return transformer.linear_reference(x, kernel, bias, activation, residual)
    # Both kernels want [out, in]: the transposed view, no copy.
    if (_ONEDNN_LINEAR is not None and x.dtype in _ONEDNN_DTYPES
            and x.device.type == "cpu" and not _compiling()
            and x.numel() >= ONEDNN_MIN_ROWS * x.shape[-1]
            and not _needs_grad(x, kernel, bias, residual)):
        if residual is None:
            post_op, algorithm = _ONEDNN_ACTIVATIONS[activation]
            return _ONEDNN_LINEAR(x, kernel.t(), bias, post_op, [], algorithm)
        if activation is None and residual.shape == x.shape[:-1] + kernel.shape[1:]:
            return _ONEDNN_LINEAR.binary(x, residual, kernel.t(), bias, "add")
    if (_ONEDNN_LINEAR is not None and x.dtype == torch.float32
            and x.device.type == "cpu" and not _compiling()
            and x.numel() >= ONEDNN_MIN_ROWS * x.shape[-1]):
        # float32 with autograd: oneDNN's products forward and backward
        # (addmm's float32 BLAS runs at 40% of their speed on AMD CPUs).
        y = _OneDNNLinear.apply(x, kernel, bias)
    else:
        y = F.linear(x, kernel.t(), bias)
    y = transformer.activate(y, activation)
    return y if residual is None else y + residual


class _OneDNNLinear(torch.autograd.Function):
    """``x @ kernel + bias`` in float32 on a CPU, each of the three products
    (forward, the input's and the kernel's gradients) oneDNN's linear."""

    @staticmethod
    def forward(ctx, x, kernel, bias):
        ctx.save_for_backward(x, kernel)
        ctx.with_bias = bias is not None
        return _ONEDNN_LINEAR(x, kernel.t(), bias, "none", [], "")

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        x, kernel = ctx.saved_tensors
        grad = grad.contiguous()
        rows = grad.reshape(-1, grad.shape[-1])
        grad_x = grad_kernel = grad_bias = None
        if ctx.needs_input_grad[0]:  # grad @ kernel^T
            grad_x = _ONEDNN_LINEAR(grad, kernel, None, "none", [], "")
        if ctx.needs_input_grad[1]:  # x^T @ grad, as [in, rows] by [out, rows]
            grad_kernel = _ONEDNN_LINEAR(x.reshape(-1, x.shape[-1]).t(), rows.t(),
                                         None, "none", [], "")
        if ctx.with_bias and ctx.needs_input_grad[2]:
            grad_bias = rows.sum(0)
        return grad_x, grad_kernel, grad_bias


#: ``linears``' concatenated kernels and biases: {ids of the parts: (weak
#: references to the parts, their versions and storage, kernel, bias)}
_CONCATENATED = {}


def _part_state(parts):
    # What an in-place change or a new storage alters; None where a part
    # keeps no version counter (a tensor made under torch.inference_mode).
    try:
        return tuple((t._version, t.data_ptr()) for t in parts)
    except RuntimeError:
        return None


def _concatenated(kernels, biases):
    """``[in, sum of out]`` kernel and its bias (None where no kernel has
    one, zeros for those without), kept for the same unchanged parts."""
    parts = tuple(kernels) + tuple(b for b in biases if b is not None)
    key = tuple(map(id, parts)) + (len(kernels),)
    state = _part_state(parts)
    entry = _CONCATENATED.get(key)
    if (entry is not None and state is not None and entry[1] == state
            and all(ref() is t for ref, t in zip(entry[0], parts))):
        return entry[2], entry[3]
    with torch.no_grad():
        kernel = torch.cat([k.reshape(k.shape[0], -1) for k in kernels], dim=1)
        bias = None
        if any(b is not None for b in biases):
            bias = torch.cat([
                b.reshape(-1) if b is not None
                else kernel.new_zeros(math.prod(k.shape[1:]))
                for k, b in zip(kernels, biases)])
    # Entries whose parts are gone (a LoRA-merged kernel lives one call).
    for dead in [k for k, e in _CONCATENATED.items()
                 if any(ref() is None for ref in e[0])]:
        del _CONCATENATED[dead]
    if state is not None:
        _CONCATENATED[key] = (tuple(weakref.ref(t) for t in parts), state,
                              kernel, bias)
    return kernel, bias


def linears(x, kernels, biases=None):
    x = _tensor(x)
    kernels = [_tensor(k) for k in kernels]
    biases = transformer._check_linears(x, kernels, biases)
    biases = [None if b is None else _tensor(b) for b in biases]
    parts = kernels + [b for b in biases if b is not None]
    if (_ONEDNN_LINEAR is None or x.dtype not in _ONEDNN_DTYPES
            or any(t.dtype != x.dtype for t in parts)
            or x.device.type != "cpu" or _compiling()
            or x.numel() < ONEDNN_MIN_ROWS * x.shape[-1]
            or _needs_grad(x, *parts)):
        return [y.unflatten(-1, k.shape[1:]) for k, y in zip(kernels, (
            linear(x, k.reshape(k.shape[0], -1),
                   None if b is None else b.reshape(-1))
            for k, b in zip(kernels, biases)))]
    kernel, bias = _concatenated(kernels, biases)
    y = _ONEDNN_LINEAR(x, kernel.t(), bias, "none", [], "")
    widths = [math.prod(k.shape[1:]) for k in kernels]
    return [part.unflatten(-1, k.shape[1:])
            for k, part in zip(kernels, y.split(widths, dim=-1))]


def layer_norm(x, gamma=None, beta=None, epsilon=1e-5):
    x = _tensor(x)
    if gamma is not None:
        gamma = _cast(_tensor(gamma), x.dtype)
    if beta is not None:
        beta = _cast(_tensor(beta), x.dtype)
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, epsilon)


def gelu(x, approximate=False):
    return F.gelu(_tensor(x), approximate="tanh" if approximate else "none")


def _uses_batched_products(query, key, value):
    # The written-out attention of short sequences on a CPU, in bfloat16
    # ([batch, heads, length, head_dim] inputs); in training too, where
    # the fused CPU kernel's forward and backward take 4x as long.
    return (query.dtype in _BATCHED_PRODUCT_DTYPES
            and query.device.type == "cpu"
            and key.shape[2] <= BATCHED_PRODUCT_MAX_KEYS
            and math.prod(query.shape[:3]) * key.shape[2]
            >= BATCHED_PRODUCT_MIN_SCORES)


def _batched(query, key, value):
    """``[batch * heads, length, head_dim]`` copies of the three
    ``[batch, heads, length, head_dim]`` views: one copy where they are
    the adjacent thirds of one ``[batch, length, 3 * heads * head_dim]``
    product (``linears``' query, key and value), else one each."""
    batch, heads, length, head_dim = query.shape
    width = heads * head_dim
    strides = (length * 3 * width, head_dim, 3 * width, 1)
    if (query.shape == key.shape == value.shape
            and query.stride() == key.stride() == value.stride() == strides
            and query.untyped_storage().data_ptr()
            == key.untyped_storage().data_ptr()
            == value.untyped_storage().data_ptr()
            and key.storage_offset() - query.storage_offset() == width
            and value.storage_offset() - key.storage_offset() == width):
        joined = query.as_strided((3,) + tuple(query.shape), (width,) + strides,
                                  query.storage_offset()).contiguous()
        return [t.view(batch * heads, length, head_dim) for t in joined]
    return [t.reshape(batch * heads, t.shape[2], head_dim)
            for t in (query, key, value)]


def _attention_by_batched_products(query, key, value, mask, scale, dropout, seed):
    # softmax(alpha q k^T + mask) v on [batch, heads, length, head_dim]
    # inputs: baddbmm scales the float32 products before rounding them to
    # the inputs' dtype and adds the additive mask in the same kernel.
    batch, heads, queries, head_dim = query.shape
    keys = key.shape[2]
    if scale is None:
        scale = head_dim ** -0.5
    if mask is not None:
        mask = _tensor(mask).to(torch.bool)  # as the reference reads it
        if not _compiling() and bool(mask.all()):
            mask = None  # every key allowed (no padding): no bias to add
    if mask is None:
        bias, beta = torch.zeros((1, 1, 1), dtype=query.dtype), 0
    else:
        mask = torch.zeros(mask.shape, dtype=query.dtype).masked_fill_(
            ~mask, transformer.MASKED_SCORE)
        while mask.dim() < 4:
            mask = mask.unsqueeze(0)
        # [batch * heads, 1 or queries, keys], copied only where broadcast
        bias = mask.expand(batch, heads, mask.shape[2], keys).reshape(
            batch * heads, mask.shape[2], keys)
        beta = 1
    query, key, value = _batched(query, key, value)
    scores = torch.baddbmm(bias, query, key.transpose(1, 2),
                           beta=beta, alpha=scale)
    probabilities = torch.softmax(scores, dim=-1)
    if dropout:
        probabilities = dropout_mask.dropout(probabilities, dropout, seed)
    return torch.bmm(probabilities, value).view(batch, heads, queries, head_dim)


def attention(query, key, value, mask=None, scale=None, key_layout="bkhd",
              dropout=0.0, seed=None):
    transformer._check_key_layout(key_layout)
    transformer._check_dropout(dropout)
    query, key, value = _tensor(query), _tensor(key), _tensor(value)
    if not query.dtype == key.dtype == value.dtype:
        return transformer.attention_reference(
            query, key, value, mask, scale, key_layout, dropout, seed)
    # [batch, heads, length, head_dim] views; the kernel reads strides.
    query = query.transpose(1, 2)
    if key_layout == "bkhd":
        key, value = key.transpose(1, 2), value.transpose(1, 2)
    if _uses_batched_products(query, key, value):
        return _attention_by_batched_products(
            query, key, value, mask, scale, dropout, seed).transpose(1, 2)
    if dropout:
        # (the fused kernel's dropout draws from PyTorch's global generator,
        # not from the Keras seed)
        return transformer.attention_reference(
            query.transpose(1, 2), key, value, mask, scale, "bhkd", dropout, seed)
    if mask is not None:
        # An additive mask of the mask's own (small) shape: a finite score
        # for masked keys, as the reference.
        mask = _tensor(mask)
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=query.dtype).masked_fill_(
                ~mask, transformer.MASKED_SCORE)
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=mask,
                                         scale=scale)
    return out.transpose(1, 2)


def update_cache(cache, key, value, index, in_place=False):
    cache, key, value = _tensor(cache), _tensor(key), _tensor(value)
    # A non-contiguous cache may be a broadcast view (a beam search's
    # repeated rows share memory): written through the reference's copy.
    if (not in_place or _needs_grad(cache, key, value)
            or not cache.dtype == key.dtype == value.dtype
            or not cache.is_contiguous()):
        return transformer.update_cache_reference(cache, key, value, index)
    transformer._check_cache_update(cache, key, value)
    length = key.shape[1]
    index = int(index)  # a Python or 0-d tensor position
    with torch.no_grad():
        # [batch, heads, length, head_dim] views of the cache's rows.
        cache[:, 0, :, index:index + length].copy_(key.transpose(1, 2))
        cache[:, 1, :, index:index + length].copy_(value.transpose(1, 2))
    return cache


#: fewest keys (rows x filled positions) from which a reduced-precision
#: one-token step takes `_one_query_attention`
WRITTEN_OUT_MIN_KEYS = 128


def _one_query_attention(query, keys, values):
    """One query per row and head over all its keys, as the reference
    computes it: two products in the input dtype, the softmax in float32.
    ``[batch, heads, 1, head_dim]`` out."""
    scores = torch.matmul(query, keys.transpose(-1, -2)).float()
    scores = scores * (1.0 / float(query.shape[-1]) ** 0.5)
    return torch.matmul(torch.softmax(scores, dim=-1).to(query.dtype), values)


def cached_self_attention(qkv, cache, index, in_place=False):
    qkv, cache = _tensor(qkv), _tensor(cache)
    if qkv.dtype != cache.dtype:
        return transformer.cached_self_attention_reference(qkv, cache, index)
    batch, length, heads, head_dim = transformer._check_cached_self_attention(
        qkv, cache)
    index = int(index)  # a Python or 0-d tensor position
    # [batch, length, heads, head_dim] views of the queries, keys and values.
    query, key, value = qkv.unflatten(-1, (3, heads, head_dim)).unbind(2)
    cache = update_cache(cache, key, value, index, in_place)
    end = index + length
    keys, values = cache[:, 0, :, :end], cache[:, 1, :, :end]
    if (length == 1 and qkv.dtype != torch.float32
            and batch * end >= WRITTEN_OUT_MIN_KEYS):
        attended = _one_query_attention(query.transpose(1, 2), keys, values)
        return attended.reshape(batch, 1, heads * head_dim), cache
    mask, causal = None, False
    if length > 1 and index == 0:
        causal = True
    elif length > 1:  # query i sees keys 0 .. index + i
        mask = torch.ones(length, end, dtype=torch.bool,
                          device=qkv.device).tril_(index)
    attended = F.scaled_dot_product_attention(
        query.transpose(1, 2), keys, values, attn_mask=mask, is_causal=causal)
    return attended.transpose(1, 2).reshape(batch, length, heads * head_dim), cache
