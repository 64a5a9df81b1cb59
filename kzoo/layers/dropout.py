"""Dropout whose mask costs half the random draws of Keras' own."""

import math

import keras
from keras import ops

from kzoo.api_export import kzoo_export

#: a mask element is a 16-bit field: the rate is kept to 1 / 65536
_FIELD = 1 << 16


@kzoo_export("kzoo.layers.Dropout")
class Dropout(keras.layers.Dropout):
    """``keras.layers.Dropout`` with a mask made from 16-bit random fields.

    Keras draws one random number per element. On CPU the draw is most of a
    dropout's cost (PyTorch's generator is serial), and a fine-tuning step of a small BERT runs about twenty dropouts. This
    layer draws one 32-bit integer per *two* elements, reads it as two
    16-bit fields (``ops.view``) and compares each with
    ``round(rate * 65536)``: the same element-wise independent Bernoulli
    mask, cheaper where drawing dominates. The kept elements' scale is one
    mask in the input's dtype and the output one product, so the gradient
    is one product too. On CPU it is faster than Keras' ``Dropout`` on
    every backend, forward and backward.

    The drop probability is ``round(rate * 65536) / 65536`` (off from
    ``rate`` by less than 1 / 131072), and kept elements are scaled by the
    inverse of the *realized* keep probability, so the layer leaves the
    expected value of its input unchanged, exactly. ``noise_shape`` falls
    back to Keras' implementation. Seeding is Keras' (``seed`` or
    ``keras.utils.set_random_seed``), the same on every backend.

    Args:
        rate: float in [0, 1), the fraction of elements to drop.
        noise_shape: optional, as ``keras.layers.Dropout``.
        seed: optional int, as ``keras.layers.Dropout``.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).

    Example:
    >>> layer = kzoo.layers.Dropout(0.5, seed=1)
    >>> y = keras.ops.convert_to_numpy(layer(np.ones((1000,), "float32"), training=True))
    >>> sorted(set(y.tolist()))
    [0.0, 2.0]
    >>> bool(400 < (y == 0).sum() < 600)
    True
    """

    def call(self, inputs, training=False):
        if not training or self.rate == 0 or self.noise_shape is not None:
            return super().call(inputs, training=training)
        threshold = int(round(self.rate * _FIELD))
        if threshold >= _FIELD:
            return ops.zeros_like(inputs)
        shape = ops.shape(inputs)  # static, or with tensors for None dims
        size = math.prod(shape)
        bits = keras.random.randint(
            ((size + 1) // 2,), -(1 << 31), (1 << 31) - 1, dtype="int32",
            seed=self.seed_generator)
        # Each 32-bit draw read as two signed 16-bit fields, each uniform in
        # [-32768, 32767]: a field >= t - 32768 with probability 1 - t / 65536.
        # (Viewed as [n, 1]: Keras' TensorFlow `view` needs a static last
        # dimension, which a batch of unknown size in `fit` lacks.)
        fields = ops.reshape(ops.view(ops.expand_dims(bits, -1), "int16"), (-1,))
        keep = ops.greater_equal(fields, threshold - (_FIELD >> 1))
        if not isinstance(size, int) or size % 2:
            keep = keep[:size]
        keep = ops.reshape(keep, shape)
        # The kept elements' scale as one mask in the input's dtype, then one
        # product: its gradient is one product too, where `where(keep,
        # inputs * scale, 0)` costs a pass more each way.
        scale = ops.where(
            keep, ops.cast(_FIELD / (_FIELD - threshold), inputs.dtype),
            ops.cast(0, inputs.dtype))
        return inputs * scale
