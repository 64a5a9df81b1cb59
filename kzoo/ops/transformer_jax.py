"""JAX kernels of ``kzoo.ops.transformer`` (imported on that backend only):
``jax.nn``'s GELU and fused dot-product attention, and the product as one
``lax.dot_general`` over the last axis."""

import jax
from keras import ops

from kzoo.ops import transformer


def linear(x, kernel, bias=None, activation=None, residual=None):
    transformer.check_activation(activation)
    x, kernel = ops.convert_to_tensor(x), ops.convert_to_tensor(kernel)
    if kernel.dtype != x.dtype:
        return transformer.linear_reference(x, kernel, bias, activation, residual)
    y = jax.lax.dot_general(x, kernel, (((x.ndim - 1,), (0,)), ((), ())))
    if bias is not None:
        y = y + ops.convert_to_tensor(bias)
    y = transformer.activate(y, activation)
    return y if residual is None else y + ops.convert_to_tensor(residual)


def gelu(x, approximate=False):
    return jax.nn.gelu(ops.convert_to_tensor(x), approximate=approximate)


def attention(query, key, value, mask=None, scale=None, key_layout="bkhd"):
    transformer._check_key_layout(key_layout)
    if key_layout == "bhkd":
        # jax.nn's layout is position-major: a head-major cache would be
        # copied into it every step; the written-out form reads it in place.
        return transformer.attention_reference(
            query, key, value, mask, scale, key_layout)
    query, key, value = (ops.convert_to_tensor(t) for t in (query, key, value))
    if mask is not None:
        mask = ops.convert_to_tensor(mask, "bool")
    return jax.nn.dot_product_attention(query, key, value, mask=mask,
                                        scale=scale)
