"""JAX kernels of ``kzoo.ops.transformer`` (imported on that backend only):
``jax.nn``'s GELU, and the product and attention's two products each as
one ``lax.dot_general``."""

import jax
import jax.numpy as jnp
from keras import ops

from kzoo.ops import dropout_mask, transformer


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


def attention(query, key, value, mask=None, scale=None, key_layout="bkhd",
              dropout=0.0, seed=None):
    # The reference's steps with each product as one `lax.dot_general`
    # whose batch axes (batch, heads) lead its output: XLA:CPU runs that as
    # a batched matrix product, where `jax.nn.dot_product_attention` and
    # `jnp.einsum` alone run 3-5x slower at BERT's shapes.
    tensors = transformer.attention_tensors(query, key, value, key_layout, dropout)
    if tensors is None:
        return transformer.attention_reference(
            query, key, value, mask, scale, key_layout, dropout, seed)
    query, key, value = tensors
    if scale is None:
        scale = 1.0 / float(query.shape[-1]) ** 0.5
    heads_axis, keys_axis = (2, 1) if key_layout == "bkhd" else (1, 2)
    batch_axes = ((0, 2), (0, heads_axis))
    # Training (dropout): the scores and softmax in the inputs' dtype, as
    # Keras' MultiHeadAttention trains (a mixed-bfloat16 fine-tuning step
    # of a small BERT 6% faster than with float32 scores); else float32.
    scores_dtype = query.dtype if dropout else jnp.float32
    scores = jax.lax.dot_general(  # [batch, heads, queries, keys]
        query, key, (((3,), (3,)), batch_axes),
        preferred_element_type=scores_dtype) * jnp.asarray(scale, scores_dtype)
    if mask is not None:
        # an additive bias of the mask's own (small) shape, as the reference
        mask = ops.convert_to_tensor(mask, "bool")
        scores = scores + jnp.where(mask, 0.0, transformer.MASKED_SCORE).astype(
            scores_dtype)
    probabilities = jax.nn.softmax(scores, axis=-1).astype(query.dtype)
    if dropout:
        probabilities = dropout_mask.dropout(probabilities, dropout, seed)
    attended = jax.lax.dot_general(  # [batch, heads, queries, head_dim]
        probabilities, value, (((3,), (keys_axis,)), ((0, 1), (0, heads_axis))))
    return jnp.transpose(attended, (0, 2, 1, 3))

