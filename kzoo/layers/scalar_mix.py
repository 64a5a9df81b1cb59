"""ScalarMix: ELMo's task-specific weighted sum of layers, scaled by gamma."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export


@kzoo_export("kzoo.layers.ScalarMix")
class ScalarMix(keras.layers.Layer):
    """``gamma * sum_k softmax(w)_k * layer_k``, ELMo's equation (1).

    Takes a list of same-shaped tensors (the layers of a network) and
    returns their weighted sum with softmax-normalised scalar weights ``w``
    (one per layer, learned) times a learned scale ``gamma``.

    With ``layer_norm=True`` each layer is first normalised as bilm-tf's
    ``weight_layers`` and AllenNLP's ``ScalarMix`` do: one mean and one
    variance over all real (unmasked) positions and features of the whole
    batch (not per token), ``(x - mean) / sqrt(var + 1e-12)``. The result
    then depends on the other sentences in the batch, as in the original.

    Args:
        num_layers: int. How many tensors are mixed.
        layer_norm: bool. Normalise each layer first. Defaults to False.
        initial_weights: optional list of ``num_layers`` floats (``w``
            before the softmax). Defaults to zeros (an equal mix).
        initial_gamma: float. Defaults to 1.0.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``trainable``,
            ``dtype``).

    Call arguments:
        inputs: a list of ``num_layers`` float tensors ``[..., dim]``.
        mask: optional bool ``[...]``: the real positions (needed only by
            ``layer_norm``; the mask is passed on).

    Returns:
        A float tensor of the inputs' shape.

    Example:
    >>> mix = kzoo.layers.ScalarMix(num_layers=2, initial_gamma=2.0)
    >>> out = mix([np.zeros((1, 2), "float32"), np.ones((1, 2), "float32")])
    >>> ops.convert_to_numpy(out).tolist()
    [[1.0, 1.0]]

    Reference:
        [Peters et al., 2018](https://arxiv.org/abs/1802.05365), eq. (1).
    """

    def __init__(self, num_layers, layer_norm=False, initial_weights=None,
                 initial_gamma=1.0, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(num_layers, int) or isinstance(num_layers, bool) or num_layers <= 0:
            raise ValueError(f"`num_layers` must be a positive int, got {num_layers!r}.")
        if initial_weights is None:
            initial_weights = [0.0] * num_layers
        initial_weights = [float(w) for w in initial_weights]
        if len(initial_weights) != num_layers:
            raise ValueError(
                f"`initial_weights` has {len(initial_weights)} values but "
                f"`num_layers` is {num_layers}: give one weight per layer."
            )
        self.num_layers = num_layers
        self.layer_norm = bool(layer_norm)
        self.initial_weights = initial_weights
        self.initial_gamma = float(initial_gamma)
        self.supports_masking = True

    def build(self, inputs_shape, mask_shape=None):
        self.scalar_weights = self.add_weight(
            name="scalar_weights", shape=(self.num_layers,),
            initializer=keras.initializers.Constant(self.initial_weights),
        )
        self.gamma = self.add_weight(
            name="gamma", shape=(),
            initializer=keras.initializers.Constant(self.initial_gamma),
        )
        self.built = True

    def _normalise(self, x, mask):
        if mask is None:
            mask = ops.ones(ops.shape(x)[:-1], dtype=x.dtype)
        mask = ops.cast(mask, x.dtype)[..., None]
        count = ops.sum(mask) * ops.cast(ops.shape(x)[-1], x.dtype)
        mean = ops.sum(x * mask) / count
        variance = ops.sum(((x * mask - mean) * mask) ** 2) / count
        return (x - mean) / ops.sqrt(variance + 1e-12)

    def call(self, inputs, mask=None):
        if len(inputs) != self.num_layers:
            raise ValueError(
                f"{type(self).__name__} {self.name!r} mixes {self.num_layers} "
                f"layers but got {len(inputs)} tensors."
            )
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        weights = ops.softmax(ops.cast(self.scalar_weights, self.compute_dtype))
        total = 0.0
        for k, x in enumerate(inputs):
            if self.layer_norm:
                x = self._normalise(x, mask)
            total = total + weights[k] * x
        return ops.cast(self.gamma, self.compute_dtype) * total

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            return mask[0]
        return mask

    def compute_output_shape(self, inputs_shape, mask_shape=None):
        return tuple(inputs_shape[0])

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_layers": self.num_layers,
            "layer_norm": self.layer_norm,
            "initial_weights": self.initial_weights,
            "initial_gamma": self.initial_gamma,
        })
        return config
