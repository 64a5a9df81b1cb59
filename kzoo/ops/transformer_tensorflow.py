"""TensorFlow kernels of ``kzoo.ops.transformer`` (imported on that backend
only): the product's bias as ``tf.nn.bias_add`` (one ``BiasAdd`` op, its
gradient one ``BiasAddGrad``), the GELU as ``tf.nn.gelu``, and attention
with dropout (training) with its softmax in the inputs' dtype."""

import tensorflow as tf
from keras import ops

from kzoo.ops import dropout_mask, transformer


def linear(x, kernel, bias=None, activation=None, residual=None):
    transformer.check_activation(activation)
    y = ops.matmul(x, kernel)
    if bias is not None:
        bias = ops.convert_to_tensor(bias)
        y = ops.add(y, bias) if bias.dtype != y.dtype else tf.nn.bias_add(y, bias)
    y = transformer.activate(y, activation)
    return y if residual is None else ops.add(y, residual)


def gelu(x, approximate=False):
    return tf.nn.gelu(ops.convert_to_tensor(x), approximate=approximate)


def attention(query, key, value, mask=None, scale=None, key_layout="bkhd",
              dropout=0.0, seed=None):
    # Training (dropout on the probabilities): the softmax in the inputs'
    # dtype, as Keras' MultiHeadAttention trains, the scale on the queries
    # and the mask as an added bias of its own small shape (an addition's
    # gradient passes through): a mixed-bfloat16 fine-tuning step of a
    # small BERT runs about a tenth faster than with the reference's float32
    # softmax.
    if not dropout:
        return transformer.attention_reference(
            query, key, value, mask, scale, key_layout)
    tensors = transformer.attention_tensors(query, key, value, key_layout, dropout)
    if tensors is None:
        return transformer.attention_reference(
            query, key, value, mask, scale, key_layout, dropout, seed)
    query, key, value = tensors
    if scale is None:
        scale = 1.0 / float(query.shape[-1]) ** 0.5
    scores = ops.einsum(f"bqhd,{key_layout}->bhqk",
                        query * ops.cast(scale, query.dtype), key)
    if mask is not None:
        scores = scores + ops.where(ops.cast(mask, "bool"),
                                    ops.cast(0, scores.dtype),
                                    ops.cast(transformer.MASKED_SCORE, scores.dtype))
    probabilities = dropout_mask.dropout(ops.softmax(scores, axis=-1), dropout, seed)
    return ops.einsum(f"bhqk,{key_layout}->bqhd", probabilities, value)
