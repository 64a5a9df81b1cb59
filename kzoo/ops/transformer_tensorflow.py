"""TensorFlow kernels of ``kzoo.ops.transformer`` (imported on that backend
only): the product's bias as ``tf.nn.bias_add`` (one ``BiasAdd`` op, its
gradient one ``BiasAddGrad``), the GELU as ``tf.nn.gelu``."""

import tensorflow as tf
from keras import ops

from kzoo.ops import transformer


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
