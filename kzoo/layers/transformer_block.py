"""What the Transformer encoder and decoder blocks share: arguments, config,
sublayer construction and the residual skeleton around the attention."""

import functools
import math

import keras
from keras import ops

from kzoo import ops as kzoo_ops
from kzoo.api_export import kzoo_export
from kzoo.layers.dropout import Dropout

#: activation names this layer accepts beyond ``keras.activations.get``
_EXTRA_ACTIVATIONS = {
    # tanh approximation of GELU (keras-hub's BERT, GPT-2, HF "gelu_new")
    "gelu_approximate": functools.partial(keras.activations.gelu, approximate=True),
}

#: activations ``kzoo.ops.linear`` applies itself (by its names for them),
#: run by ``_sublayer``'s fast path
_LINEAR_ACTIVATIONS = {
    keras.activations.linear: None,
    keras.activations.relu: "relu",
    keras.activations.gelu: "gelu",
    _EXTRA_ACTIVATIONS["gelu_approximate"]: "gelu_approximate",
}


#: ``MultiHeadAttention``'s ``EinsumDense`` equations on [batch, length, ...]
#: inputs that are one matrix product: how many leading kernel axes contract
#: with the inputs' trailing ones
_PRODUCT_EQUATIONS = {"abc,cde->abde": 1, "abcd,cde->abe": 2}


def _einsum_as_product(layer, x, contracted, residual=None):
    """What ``layer`` (an ``EinsumDense``, equation in ``_PRODUCT_EQUATIONS``)
    computes, as one ``kzoo.ops.linear``: inputs [batch, length, in] against
    the kernel flattened to [in, out] with the bias, the output unflattened
    (plus ``residual``, of the output's shape, when given).
    PyTorch runs the einsum as a batched product on copies of its operands
    and adds the bias in a second pass; JAX and TensorFlow run both forms
    alike. An int8 layer (Keras' default int8) runs as ``_int8_product``
    on the flattened int8 kernel and its scales."""
    int8 = _is_int8(layer)
    # the int8 values Keras' int8 call multiplies, or LoRA's merged kernel
    kernel = layer._kernel if int8 else layer.kernel
    kernel_shape = tuple(kernel.shape)
    width_in = math.prod(kernel_shape[:contracted])
    width_out = math.prod(kernel_shape[contracted:])
    # Explicit widths, not -1: an empty batch has nothing to infer it from.
    lead = tuple(ops.shape(x)[:2])
    flat_out = lead + (width_out,)

    def flat(t, shape):
        # A reshape only where the shape changes, as far as static sizes
        # tell (each costs Keras' argument checks on eager backends).
        if all(type(d) is int for d in shape) and tuple(t.shape) == shape:
            return t
        return ops.reshape(t, shape)

    bias = layer.bias
    if bias is not None:
        bias = flat(bias, (width_out,))
    x = flat(x, lead + (width_in,))
    kernel = flat(kernel, (width_in, width_out))
    if int8:
        y = _int8_product(layer, x, kernel,
                          flat(layer.kernel_scale, (width_out,)), bias)
        if residual is not None:
            y = y + flat(residual, flat_out)
        return flat(y, lead + kernel_shape[contracted:])
    if layer.activation not in (None, keras.activations.linear):
        y = layer.activation(kzoo_ops.linear(x, kernel, bias))
        if residual is not None:
            y = y + flat(residual, flat_out)
    else:
        if residual is not None:
            residual = flat(residual, flat_out)
        y = kzoo_ops.linear(x, kernel, bias, residual=residual)
    return flat(y, lead + kernel_shape[contracted:])


def _dense(layer, x, residual=None):
    """``keras.layers.Dense.call`` (plus ``residual``) as one
    ``kzoo.ops.linear``, with the activation in it where ``linear`` has it."""
    activation = layer.activation
    if activation is None or activation in _LINEAR_ACTIVATIONS:
        return kzoo_ops.linear(x, layer.kernel, layer.bias,  # LoRA merged in `kernel`
                               _LINEAR_ACTIVATIONS.get(activation), residual)
    y = activation(kzoo_ops.linear(x, layer.kernel, layer.bias))
    return y if residual is None else y + residual


def _is_int8(layer):
    """Whether ``layer`` (a ``Dense`` or ``EinsumDense``) is quantized to
    int8 with its inputs quantized on the fly by absmax (Keras' default
    int8 config), without LoRA: ``_int8_product``'s case."""
    return (layer.quantization_mode == "int8"
            and not layer.lora_enabled
            and isinstance(getattr(layer, "inputs_quantizer", None),
                           keras.quantizers.AbsMaxQuantizer))


def _int8_product(layer, x, kernel, kernel_scale, bias):
    """Keras' int8 ``Dense`` / ``EinsumDense`` at inference on inputs
    ``[..., in]`` and the int8 kernel ``[in, out]``, step by step as its
    quantized call: each row of inputs quantized (absmax over the
    contracted values), the int8 x int8 product with int32 sums, both
    scales divided out, the bias and the activation; the product as
    ``kzoo.ops.int8_matmul`` (a fast int8 kernel where Keras has none, e.g.
    PyTorch on a CPU)."""
    quantized, inputs_scale = layer.inputs_quantizer(x, axis=-1)
    y = ops.cast(kzoo_ops.int8_matmul(quantized, kernel), layer.compute_dtype)
    y = ops.divide(y, ops.multiply(inputs_scale, kernel_scale))
    if bias is not None:
        y = ops.add(y, bias)
    if layer.activation is not None:
        y = layer.activation(y)
    return y


def _normalizes_last_axis(layer, rank):
    """Whether a ``LayerNormalization`` is the plain one ``kzoo.ops.layer_norm``
    computes: over the last axis, without RMS scaling."""
    return (not layer.rms_scaling
            and list(layer.axis) in ([-1], [rank - 1]))


def get_activation(activation):
    if isinstance(activation, str) and activation in _EXTRA_ACTIVATIONS:
        return _EXTRA_ACTIVATIONS[activation]
    try:
        return keras.activations.get(activation)
    except ValueError as exc:
        raise ValueError(
            f"`activation` must be a Keras activation name, "
            f"{sorted(_EXTRA_ACTIVATIONS)} or a callable, got {activation!r}."
        ) from exc


@kzoo_export("kzoo.layers.TransformerBlock")
class TransformerBlock(keras.layers.Layer):
    """Base of ``TransformerEncoder`` and ``TransformerDecoder``.

    Holds the arguments both take (validated), the activation lookup
    (``"gelu_approximate"`` beside Keras' names), fresh initializer copies per
    sublayer, the config, and the block's skeleton (``_residual_block``): the
    attention and the feed-forward network, each in a residual branch with
    its layer norm and dropout. Subclasses build their attention and the
    shared sublayers (``_layer_norm``, ``_dense``, ``_dropout``,
    ``_build_feedforward``) under the names ``_residual_block`` reads, and
    set ``default_activation`` / ``default_normalize_first``, the values
    that ``activation=None`` / ``normalize_first=None`` stand for.
    """

    default_activation = "relu"
    default_normalize_first = False

    def __init__(
        self,
        intermediate_dim,
        num_heads,
        dropout=0.0,
        activation=None,
        layer_norm_epsilon=1e-5,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        normalize_first=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if activation is None:
            activation = self.default_activation
        if normalize_first is None:
            normalize_first = self.default_normalize_first
        for name, value in (("intermediate_dim", intermediate_dim),
                            ("num_heads", num_heads)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"`{name}` must be a positive int, got {value!r}.")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"`dropout` must be in [0, 1), got {dropout!r}.")
        self.intermediate_dim = intermediate_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.normalize_first = normalize_first
        self._activation_fn = get_activation(activation)

    def _initializers(self):
        # A fresh copy per sublayer, so seeded initializers don't repeat.
        return {
            "kernel_initializer": self.kernel_initializer.__class__.from_config(
                self.kernel_initializer.get_config()),
            "bias_initializer": self.bias_initializer.__class__.from_config(
                self.bias_initializer.get_config()),
        }

    def _head_dim(self, hidden_dim):
        """``hidden_dim // num_heads``; an error unless ``num_heads`` divides it."""
        if hidden_dim % self.num_heads:
            raise ValueError(
                f"The input's hidden size {hidden_dim} must be divisible by "
                f"`num_heads`={self.num_heads}."
            )
        return hidden_dim // self.num_heads

    def _layer_norm(self, name, inputs_shape):
        layer = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name=name, dtype=self.dtype_policy)
        layer.build(inputs_shape)
        return layer

    def _dense(self, units, name, inputs_shape, activation=None):
        layer = keras.layers.Dense(
            units, activation=activation, name=name, **self._initializers(),
            dtype=self.dtype_policy)
        layer.build(inputs_shape)
        return layer

    def _dropout(self, name):
        return Dropout(self.dropout, name=name, dtype=self.dtype_policy)

    def _build_feedforward(self, inputs_shape):
        """Builds the feed-forward network's two dense layers:
        ``feedforward_intermediate_dense`` (with the activation) and
        ``feedforward_output_dense`` (back to the input width)."""
        self.feedforward_intermediate_dense = self._dense(
            self.intermediate_dim, "feedforward_intermediate_dense", inputs_shape,
            activation=self._activation_fn)
        self.feedforward_output_dense = self._dense(
            inputs_shape[-1], "feedforward_output_dense",
            tuple(inputs_shape[:-1]) + (self.intermediate_dim,))

    def _residual_block(self, inputs, attention, fast, training):
        """The block around its attention, pre-norm or post-norm::

            x = inputs + dropout(attention(norm1(inputs)))      # pre-norm
            x = norm1(inputs + dropout(attention(inputs)))      # post-norm

        then the feed-forward network the same way with ``norm2``. The
        norms are ``self_attention_layer_norm`` / ``feedforward_layer_norm``,
        the dropouts ``self_attention_dropout`` / ``feedforward_dropout``
        (applied only when training); the norms and the feed-forward layers
        run through ``_sublayer(layer, x, fast)``.

        Args:
            inputs: float tensor ``[batch, length, hidden_dim]``.
            attention: callable ``(x, residual)`` from the (normalized)
                inputs to ``(attended, extra)``, ``attended`` plus
                ``residual`` when that is not None (its output projection
                adds it: at inference, in the same kernel); ``extra`` (a
                cache, or None) is returned beside the output.
            fast: bool. ``_sublayer``'s ``fast``.
            training: bool. Whether dropout is active.

        Returns:
            ``(output, extra)``.
        """
        norm1, norm2 = self.self_attention_layer_norm, self.feedforward_layer_norm
        x = residual = inputs
        if self.normalize_first:
            x = self._sublayer(norm1, x, fast)
        if training:
            x, extra = attention(x, None)
            x = self.self_attention_dropout(x, training=training) + residual
        else:  # the residual sum in the output projection
            x, extra = attention(x, residual)
        if not self.normalize_first:
            x = self._sublayer(norm1, x, fast)

        residual = x
        if self.normalize_first:
            x = self._sublayer(norm2, x, fast)
        x = self._sublayer(self.feedforward_intermediate_dense, x, fast)
        if training:
            x = self._sublayer(self.feedforward_output_dense, x, fast)
            x = self.feedforward_dropout(x, training=training) + residual
        else:
            x = self._sublayer(self.feedforward_output_dense, x, fast, residual)
        if not self.normalize_first:
            x = self._sublayer(norm2, x, fast)
        return x, extra

    def _fast_sublayers(self, training):
        """``_sublayer``'s ``fast`` for a call: always at inference, and in
        training too (the ``kzoo.ops`` kernels have their gradients; fewer
        graph ops make TensorFlow's mixed-precision fine-tuning steps a few
        percent faster, ``bench/bert.py``) unless a sublayer is quantized:
        Keras' quantized calls carry their own gradients."""
        if not training:
            return True
        return not any(getattr(layer, "quantization_mode", None)
                       for layer in self._flatten_layers(include_self=False))

    def _sublayer(self, layer, x, fast, residual=None):
        """``layer(x)`` (plus ``residual`` when given), or with ``fast`` its
        computation without Keras' per-call bookkeeping (input casts, masks,
        name scopes), which costs more than a small matmul on eager backends
        (torch), once the block's own ``__call__`` has cast the inputs and
        set the dtype scope (``_fast_sublayers`` says when). A ``Dense``,
        an ``EinsumDense`` whose equation is a flattened matrix product (the
        attention projections), either as it is or quantized to Keras'
        default int8, and a last-axis ``LayerNormalization`` run as
        ``kzoo.ops`` kernels (``_dense``, ``_einsum_as_product``,
        ``_int8_product``, ``kzoo.ops.layer_norm``), the float products with the residual sum
        in them; another quantized layer runs its quantized computation."""
        product_einsum = (isinstance(layer, keras.layers.EinsumDense)
                          and layer.equation in _PRODUCT_EQUATIONS)
        if not fast:
            y = layer(x)
        elif type(layer) is keras.layers.Dense and _is_int8(layer):
            # `_kernel`: the int8 values Keras' own int8 call multiplies
            y = _int8_product(layer, x, layer._kernel, layer.kernel_scale,
                              layer.bias)
        elif product_einsum and (layer.quantization_mode is None or _is_int8(layer)):
            return _einsum_as_product(
                layer, x, _PRODUCT_EQUATIONS[layer.equation], residual)
        elif layer.quantization_mode is not None:
            y = layer.quantized_call(x)
        elif type(layer) is keras.layers.Dense:
            return _dense(layer, x, residual)
        elif (type(layer) is keras.layers.LayerNormalization
              and _normalizes_last_axis(layer, len(x.shape))):
            y = kzoo_ops.layer_norm(x, layer.gamma, layer.beta, layer.epsilon)
        else:
            y = layer.call(x)
        return y if residual is None else y + residual

    def _projections(self, layers, x, fast):
        """``[self._sublayer(layer, x, fast) for layer in layers]``; with
        ``fast``, where every layer is an unquantized ``EinsumDense``
        ``"abc,cde->abde"`` without activation (the attention's query, key
        and value), one ``kzoo.ops.linears`` over their kernels (LoRA's
        merged ones when enabled) and biases."""
        if fast and all(
                isinstance(layer, keras.layers.EinsumDense)
                and layer.equation == "abc,cde->abde"
                and layer.quantization_mode is None
                and layer.activation in (None, keras.activations.linear)
                for layer in layers):
            return kzoo_ops.linears(x, [layer.kernel for layer in layers],
                                    [layer.bias for layer in layers])
        return [self._sublayer(layer, x, fast) for layer in layers]

    def _attention_dropout_arguments(self, training):
        """``kzoo.ops.attention``'s ``dropout`` and ``seed``: the
        ``attention_dropout`` layer's rate and seed generator while
        training, none otherwise."""
        if not (training and self.dropout > 0):
            return {}
        return {"dropout": self.attention_dropout.rate,
                "seed": self.attention_dropout.seed_generator}

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "intermediate_dim": self.intermediate_dim,
                "num_heads": self.num_heads,
                "dropout": self.dropout,
                "activation": (
                    self.activation if isinstance(self.activation, str)
                    else keras.activations.serialize(self.activation)
                ),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer),
                "normalize_first": self.normalize_first,
            }
        )
        return config
