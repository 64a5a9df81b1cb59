"""Highway layer (Srivastava et al., 2015), with ELMo's gate convention."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export


@kzoo_export("kzoo.layers.Highway")
class Highway(keras.layers.Layer):
    """One highway layer: ``t * f(x W_h + b_h) + (1 - t) * x``.

    The transform gate is ``t = sigmoid(x W_t + b_t)``: where it is open the
    layer outputs ``f(x W_h + b_h)``, where it is closed it carries ``x``
    through. This is the convention of bilm-tf (which names the gate weights
    ``W_carry``/``b_carry``, although the gate multiplies the transform) and
    of the released ELMo weights; AllenNLP stores the same layer with the
    gate's weights negated. The output has the input's width.

    Args:
        activation: ``f``. Defaults to ``"relu"``, as in ELMo.
        gate_bias_initializer: initializer of ``b_t``. Defaults to -2.0
            (a mostly closed gate, so that training starts close to the
            identity, as bilm-tf does).
        kernel_initializer: initializer of ``W_h`` and ``W_t``.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).

    Call arguments:
        inputs: a float tensor ``[..., dim]``.

    Returns:
        A float tensor of the input's shape.

    Example:
    >>> layer = kzoo.layers.Highway(gate_bias_initializer="zeros")
    >>> tuple(layer(np.ones((2, 3, 4), "float32")).shape)
    (2, 3, 4)

    Reference:
        - [Srivastava et al., 2015](https://arxiv.org/abs/1505.00387).
        - [bilm-tf](https://github.com/allenai/bilm-tf), ``bilm/model.py``.
    """

    def __init__(
        self,
        activation="relu",
        gate_bias_initializer=-2.0,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.activation = keras.activations.get(activation)
        if isinstance(gate_bias_initializer, (int, float)):
            gate_bias_initializer = keras.initializers.Constant(
                float(gate_bias_initializer))
        self.gate_bias_initializer = keras.initializers.get(gate_bias_initializer)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.transform_dense = None
        self.gate_dense = None

    def build(self, inputs_shape):
        dim = inputs_shape[-1]
        self.transform_dense = keras.layers.Dense(
            dim, kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy, name="transform_dense",
        )
        self.gate_dense = keras.layers.Dense(
            dim, kernel_initializer=self.kernel_initializer,
            bias_initializer=self.gate_bias_initializer,
            dtype=self.dtype_policy, name="gate_dense",
        )
        self.transform_dense.build(inputs_shape)
        self.gate_dense.build(inputs_shape)
        self.built = True

    def call(self, inputs):
        transformed = self.activation(self.transform_dense(inputs))
        gate = ops.sigmoid(self.gate_dense(inputs))
        return gate * transformed + (1.0 - gate) * inputs

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)

    def get_config(self):
        config = super().get_config()
        config.update({
            "activation": keras.activations.serialize(self.activation),
            "gate_bias_initializer": keras.initializers.serialize(
                self.gate_bias_initializer),
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer),
        })
        return config
