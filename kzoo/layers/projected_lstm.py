"""An LSTMP layer: a ProjectedLSTMCell scanned over time, either direction."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.layers.projected_lstm_cell import ProjectedLSTMCell


def reverse_within_length(x, lengths):
    """Reverses each row of ``x [batch, time, ...]`` within its own length.

    Row ``b`` becomes ``x[b, lengths[b]-1], ..., x[b, 0]`` followed by its
    padding, unmoved. Applying it twice gives ``x`` back.
    """
    time = ops.arange(ops.shape(x)[1], dtype="int32")[None, :]
    lengths = ops.cast(lengths, "int32")[:, None]
    index = ops.where(time < lengths, lengths - 1 - time, time)
    index = ops.reshape(index, tuple(ops.shape(index)) + (1,) * (len(x.shape) - 2))
    return ops.take_along_axis(x, ops.broadcast_to(index, ops.shape(x)), axis=1)


def _state_at_length(states, lengths, initial):
    """Row ``b`` of feature-major ``states [time, dim, batch]`` at step
    ``lengths[b] - 1`` as ``[batch, dim]``; ``initial[b]`` where
    ``lengths[b]`` is 0."""
    index = ops.maximum(lengths - 1, 0)[None, None, :]
    last = ops.take_along_axis(
        states, ops.broadcast_to(index, (1,) + tuple(ops.shape(states)[1:])), axis=0
    )[0]
    return ops.where(ops.expand_dims(lengths > 0, -1), ops.transpose(last), initial)


def _row_major(x):
    """``x`` with its elements laid out in its own row-major order.

    PyTorch's transpose is a strided view, and its CPU product reads such a
    transposed left operand several times slower than a row-major copy
    (ELMo's ``U^T h``, ``[16384, 512] x [512, 32]``). Flattening makes
    the copy; elsewhere it is a layout the compiler picks anyway. Made once
    per call, outside the time loop.
    """
    return ops.reshape(ops.reshape(x, (-1,)), ops.shape(x))


@kzoo_export("kzoo.layers.ProjectedLSTM")
class ProjectedLSTM(keras.layers.Layer):
    """Runs a ``ProjectedLSTMCell`` over a padded batch of sequences.

    The input part of the gates (``x W + b``) is one matrix product for all
    time steps; only the recurrence runs in a ``keras.ops.scan`` loop (a
    ``tf.while_loop``, ``jax.lax.scan`` or Python loop on the three
    backends). Sequences are padded at the end: a mask, or else all steps
    count. Padded steps output zeros and leave the state unchanged, so the
    final state is the one after each sequence's own last token.

    With ``backward=True`` each sequence is read from its last real token to
    its first (reversed within its own length, not from the padded end, as
    bilm-tf and AllenNLP do); the outputs are returned in input order, so
    output ``t`` has seen tokens ``t`` to the end.

    Args:
        units: int. Width of the memory cell.
        projection_dim: int. Width of the outputs and recurrent state.
        cell_clip: float or None. Memory cell clipping.
        projection_clip: float or None. Output clipping.
        backward: bool. Read each sequence from its end.
        return_state: bool. Also return the final ``[h, c]``.
        unit_forget_bias, kernel_initializer, recurrent_initializer, projection_initializer:
            as ``ProjectedLSTMCell``.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).

    Call arguments:
        inputs: a float tensor ``[batch, time, input_dim]``.
        mask: optional bool ``[batch, time]``, True on real steps, a prefix
            of each row.
        initial_state: optional ``[h, c]`` (``[batch, projection_dim]``,
            ``[batch, units]``); zeros by default.

    Returns:
        ``[batch, time, projection_dim]`` outputs (zeros at padding), and
        with ``return_state`` also the final ``[h, c]``.

    Example:
    >>> layer = kzoo.layers.ProjectedLSTM(units=8, projection_dim=3)
    >>> x = np.ones((2, 4, 5), "float32")
    >>> out = layer(x, mask=np.array([[1, 1, 1, 1], [1, 1, 0, 0]], bool))
    >>> tuple(out.shape), ops.convert_to_numpy(out)[1, 2:].tolist()
    ((2, 4, 3), [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    """

    def __init__(
        self,
        units,
        projection_dim,
        cell_clip=None,
        projection_clip=None,
        backward=False,
        return_state=False,
        unit_forget_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        projection_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.cell = ProjectedLSTMCell(
            units, projection_dim,
            cell_clip=cell_clip, projection_clip=projection_clip,
            unit_forget_bias=unit_forget_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            projection_initializer=projection_initializer,
            dtype=self.dtype_policy, name="cell",
        )
        self.units = units
        self.projection_dim = projection_dim
        self.backward = bool(backward)
        self.return_state = bool(return_state)
        self.supports_masking = True

    def build(self, inputs_shape, mask_shape=None, initial_state_shape=None):
        self.cell.build(tuple(inputs_shape[:1]) + tuple(inputs_shape[2:]))
        self.built = True

    def call(self, inputs, mask=None, initial_state=None):
        shape = ops.shape(inputs)
        batch = shape[0]
        if mask is None:
            mask = ops.ones(shape[:2], dtype="bool")
        mask = ops.cast(mask, "bool")
        if initial_state is None:
            h = ops.zeros((batch, self.projection_dim), dtype=self.compute_dtype)
            c = ops.zeros((batch, self.units), dtype=self.compute_dtype)
        else:
            h, c = (ops.cast(s, self.compute_dtype) for s in initial_state)
        if isinstance(shape[1], int) and shape[1] == 0:
            # No steps (empty sentences): ops.scan cannot stack zero outputs
            # on every backend.
            outputs = ops.zeros((batch, 0, self.projection_dim), self.compute_dtype)
            return (outputs, [h, c]) if self.return_state else outputs
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
        if self.backward:
            # Reverse the inputs, not their 4x-wider projections: less to move.
            inputs = reverse_within_length(inputs, lengths)
        # Feature-major steps [time, 4 units, batch] (see ProjectedLSTMCell.
        # step): one product for all inputs, then one transpose. (W^T x^T
        # straight into that layout is faster on PyTorch but slower on JAX;
        # model code has no backend switches.)
        cell = self.cell
        steps = ops.transpose(
            cell.project_inputs(ops.transpose(inputs, (1, 0, 2))), (0, 2, 1)
        )
        kernels = (_row_major(ops.transpose(cell.recurrent_kernel)),
                   _row_major(ops.transpose(cell.projection_kernel)))

        # Real tokens are a prefix of each row (also once reversed), so the
        # loop runs unmasked: padded steps come after a row's last token and
        # cannot change its outputs. They are zeroed below, and the final
        # state is read at each row's last token.
        def step(carry, projected_t):
            new_h, new_c = cell.step(projected_t, *carry, transposed_kernels=kernels)
            # ops.scan's TensorFlow version wants outputs shaped like the carry.
            return (new_h, new_c), (new_h, new_c)

        _, (all_h, all_c) = ops.scan(
            step, (ops.transpose(h), ops.transpose(c)), steps
        )
        outputs = ops.where(
            ops.expand_dims(mask, -1), ops.transpose(all_h, (2, 0, 1)), 0.0
        )
        if self.backward:
            outputs = reverse_within_length(outputs, lengths)
        if not self.return_state:
            return outputs
        return outputs, [
            _state_at_length(all_h, lengths, h), _state_at_length(all_c, lengths, c)
        ]

    def compute_mask(self, inputs, mask=None, initial_state=None):
        if self.return_state:
            return [mask, None, None]
        return mask

    def compute_output_shape(self, inputs_shape, mask_shape=None,
                             initial_state_shape=None):
        outputs = tuple(inputs_shape[:2]) + (self.projection_dim,)
        if self.return_state:
            return outputs, [(inputs_shape[0], self.projection_dim),
                             (inputs_shape[0], self.units)]
        return outputs

    def get_config(self):
        config = super().get_config()
        cell = self.cell.get_config()
        config.update({
            key: cell[key] for key in (
                "units", "projection_dim", "cell_clip", "projection_clip",
                "unit_forget_bias", "kernel_initializer",
                "recurrent_initializer", "projection_initializer")
        })
        config.update({"backward": self.backward, "return_state": self.return_state})
        return config
