"""PyTorch kernels of ``kzoo.ops.transformer`` (imported on that backend only).

Each takes what the public function takes (tensors or Keras variables) and
calls the ATen kernel directly; where the inputs' dtypes differ it defers to
the ``keras.ops`` reference, whose type promotion it would otherwise have to
repeat.
"""

import torch
import torch.nn.functional as F
from keras import ops

from kzoo.ops import transformer


def _tensor(x):
    # A Keras variable's value (cast by the autocast scope), a tensor as is.
    return x if isinstance(x, torch.Tensor) else ops.convert_to_tensor(x)


def linear(x, kernel, bias=None):
    x, kernel = _tensor(x), _tensor(kernel)
    if bias is not None:
        bias = _tensor(bias)
    if kernel.dtype != x.dtype or (bias is not None and bias.dtype != x.dtype):
        return transformer.linear_reference(x, kernel, bias)
    # F.linear wants [out, in]: the transposed view, no copy; with a bias it
    # is one addmm.
    return F.linear(x, kernel.t(), bias)


def layer_norm(x, gamma=None, beta=None, epsilon=1e-5):
    x = _tensor(x)
    if gamma is not None:
        gamma = _tensor(gamma).to(x.dtype)
    if beta is not None:
        beta = _tensor(beta).to(x.dtype)
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, epsilon)


def gelu(x, approximate=False):
    return F.gelu(_tensor(x), approximate="tanh" if approximate else "none")


def attention(query, key, value, mask=None, scale=None, key_layout="bkhd"):
    transformer._check_key_layout(key_layout)
    query, key, value = _tensor(query), _tensor(key), _tensor(value)
    if not query.dtype == key.dtype == value.dtype:
        return transformer.attention_reference(
            query, key, value, mask, scale, key_layout)
    # [batch, heads, length, head_dim] views; the kernel reads strides.
    query = query.transpose(1, 2)
    if key_layout == "bkhd":
        key, value = key.transpose(1, 2), value.transpose(1, 2)
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
