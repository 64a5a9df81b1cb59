"""TensorFlow kernels of ``kzoo.ops.transformer`` (imported on that backend
only): the product's bias as ``tf.nn.bias_add`` (one ``BiasAdd`` op, its
gradient one ``BiasAddGrad``), the GELU as ``tf.nn.gelu``."""

import tensorflow as tf
from keras import ops


def linear(x, kernel, bias=None):
    y = ops.matmul(x, kernel)
    if bias is None:
        return y
    bias = ops.convert_to_tensor(bias)
    if bias.dtype != y.dtype:
        return ops.add(y, bias)
    return tf.nn.bias_add(y, bias)


def gelu(x, approximate=False):
    return tf.nn.gelu(ops.convert_to_tensor(x), approximate=approximate)
