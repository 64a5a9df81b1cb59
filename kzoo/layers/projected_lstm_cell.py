"""LSTM cell with a projection of its output and clipping (LSTMP)."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export


def _check_clip(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"`{name}` must be a positive number or None, got {value!r}.")
    return float(value)


@kzoo_export("kzoo.layers.ProjectedLSTMCell")
class ProjectedLSTMCell(keras.layers.Layer):
    """One step of an LSTM whose output is projected to a smaller width.

    With ``z = x W + h U + b`` split into four ``units``-wide gates in the
    order input, forget, candidate, output (Keras' and AllenNLP's order)::

        c' = clip(sigmoid(z_f) * c + sigmoid(z_i) * tanh(z_c), cell_clip)
        h' = clip((sigmoid(z_o) * tanh(c')) P, projection_clip)

    ``P`` (``units x projection_dim``, no bias) is the projection of Sak et
    al. (2014); ``h'`` is both the output and the recurrent state, so ``U``
    is ``projection_dim x 4 units``. This is the cell of bilm-tf and
    AllenNLP's ``LstmCellWithProjection``. The forget gate's +1 (TensorFlow's
    ``forget_bias``) lives in ``b``: ``unit_forget_bias=True`` initialises
    that part of ``b`` to one, and converters add 1.0 to stored TensorFlow
    biases.

    The cell follows the Keras RNN cell API (``state_size``, ``output_size``,
    ``call(inputs, states)``), so ``keras.layers.RNN(cell)`` runs it;
    ``kzoo.layers.ProjectedLSTM`` runs it faster (one matrix product for all
    inputs, then a scan over time) and adds per-length reversal.

    Args:
        units: int. Width of the memory cell ``c``.
        projection_dim: int. Width of the output and recurrent state ``h``.
        cell_clip: float or None. Clip ``c'`` to ``[-cell_clip, cell_clip]``.
        projection_clip: float or None. Clip ``h'`` likewise.
        unit_forget_bias: bool. Initialise the forget gate's bias to one.
        kernel_initializer: initializer of ``W``.
        recurrent_initializer: initializer of ``U``.
        projection_initializer: initializer of ``P``.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).

    Call arguments:
        inputs: a float tensor ``[batch, input_dim]``.
        states: a list ``[h, c]`` of ``[batch, projection_dim]`` and
            ``[batch, units]`` tensors.

    Returns:
        ``(h', [h', c'])``.

    Example:
    >>> cell = kzoo.layers.ProjectedLSTMCell(units=8, projection_dim=3)
    >>> h, (h2, c) = cell(np.ones((2, 5), "float32"),
    ...                   [np.zeros((2, 3), "float32"), np.zeros((2, 8), "float32")])
    >>> tuple(h.shape), tuple(c.shape)
    ((2, 3), (2, 8))

    Reference:
        - [Sak et al., 2014](https://arxiv.org/abs/1402.1128) (LSTMP).
        - [Peters et al., 2018](https://arxiv.org/abs/1802.05365) (ELMo).
    """

    def __init__(
        self,
        units,
        projection_dim,
        cell_clip=None,
        projection_clip=None,
        unit_forget_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        projection_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (("units", units), ("projection_dim", projection_dim)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"`{name}` must be a positive int, got {value!r}.")
        self.units = units
        self.projection_dim = projection_dim
        self.cell_clip = _check_clip("cell_clip", cell_clip)
        self.projection_clip = _check_clip("projection_clip", projection_clip)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.projection_initializer = keras.initializers.get(projection_initializer)
        self.state_size = [projection_dim, units]
        self.output_size = projection_dim

    def build(self, inputs_shape):
        input_dim = inputs_shape[-1]
        units = self.units
        self.kernel = self.add_weight(
            name="kernel", shape=(input_dim, 4 * units),
            initializer=self.kernel_initializer,
        )

        def recurrent_initializer(shape, dtype=None):
            # Drawn in float32, then cast: the orthogonal default's QR has no
            # 16-bit kernel on PyTorch's CPU ("geqrf_cpu" not implemented for
            # 'BFloat16'), so a bfloat16 cell could not be built there.
            value = self.recurrent_initializer(shape, dtype="float32")
            return ops.cast(value, dtype or "float32")

        self.recurrent_kernel = self.add_weight(
            name="recurrent_kernel", shape=(self.projection_dim, 4 * units),
            initializer=recurrent_initializer,
        )

        def bias_initializer(shape, dtype=None):
            bias = ops.zeros(shape, dtype=dtype)
            if self.unit_forget_bias:
                bias = ops.concatenate([
                    ops.zeros((units,), dtype=dtype),
                    ops.ones((units,), dtype=dtype),
                    ops.zeros((2 * units,), dtype=dtype),
                ])
            return bias

        self.bias = self.add_weight(
            name="bias", shape=(4 * units,), initializer=bias_initializer,
        )
        self.projection_kernel = self.add_weight(
            name="projection_kernel", shape=(units, self.projection_dim),
            initializer=self.projection_initializer,
        )
        self.built = True

    def project_inputs(self, inputs):
        """``x W + b`` for any leading shape: the part without recurrence."""
        return ops.matmul(inputs, self.kernel) + self.bias

    def step(self, projected_inputs, h, c, transposed_kernels=None):
        """One step from ``x W + b`` (see ``project_inputs``) and ``h, c``.

        With ``transposed_kernels=(U^T, P^T)`` (computed once, outside a
        loop) the step runs feature-major: ``projected_inputs``, ``h``,
        ``c`` and the results are ``[features, batch]``. Same numbers; the
        products ``U^T h`` and ``P^T m`` are faster than ``h U`` and ``m P``
        for a small batch on some BLAS libraries (PyTorch's MKL, 2 threads).

        Returns:
            ``(h', c')``.
        """
        feature_major = transposed_kernels is not None
        if feature_major:
            recurrent_t, projection_t = transposed_kernels
            z = projected_inputs + ops.matmul(recurrent_t, h)
        else:
            z = projected_inputs + ops.matmul(h, self.recurrent_kernel)
        i, f, g, o = ops.split(z, 4, axis=0 if feature_major else -1)
        c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
        if self.cell_clip is not None:
            c = ops.clip(c, -self.cell_clip, self.cell_clip)
        m = ops.sigmoid(o) * ops.tanh(c)
        if feature_major:
            h = ops.matmul(projection_t, m)
        else:
            h = ops.matmul(m, self.projection_kernel)
        if self.projection_clip is not None:
            h = ops.clip(h, -self.projection_clip, self.projection_clip)
        return h, c

    def call(self, inputs, states, training=None):
        h, c = self.step(self.project_inputs(inputs), states[0], states[1])
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units,
            "projection_dim": self.projection_dim,
            "cell_clip": self.cell_clip,
            "projection_clip": self.projection_clip,
            "unit_forget_bias": self.unit_forget_bias,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": keras.initializers.serialize(
                self.recurrent_initializer),
            "projection_initializer": keras.initializers.serialize(
                self.projection_initializer),
        })
        return config
