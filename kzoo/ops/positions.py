"""Reading a sequence at given positions, in ``keras.ops``.

Each gather here takes rows of the sequence flattened to ``[batch *
length, ...]`` (an embedding lookup on torch) rather than calling
``take_along_axis``: torch's ONNX exporter fixes the batch size and length
of a graph that broadcasts indices against the sequence, and keeps both
free in this form. The values are the same.
"""

from keras import ops


def gather_positions(sequence, positions):
    """``sequence`` at ``positions`` of each row.

    Args:
        sequence: ``[batch, length, ...]``.
        positions: int ``[batch, width]``, each in ``[0, length)``.

    Returns:
        ``[batch, width, ...]``: ``out[b, i] = sequence[b, positions[b, i]]``.
    """
    shape = ops.shape(sequence)
    offsets = ops.expand_dims(ops.arange(shape[0], dtype="int32") * shape[1], 1)
    return _rows(sequence, ops.cast(positions, "int32") + offsets)


def last_real_position(sequence, padding_mask):
    """``sequence[:, t]`` at each row's last real position ``t`` of the
    right-padded ``padding_mask`` (position 0 for an all-padding row):
    ``[batch, length, ...]`` → ``[batch, ...]``.

    It reads no dimension of ``sequence`` but its last ones, so it also
    runs on the symbolic tensors of a functional model being built (a
    GPT classifier's extract state)."""
    real = ops.cast(padding_mask, "int32")
    last = ops.maximum(ops.sum(real, axis=1) - 1, 0)
    ones = ops.ones_like(real)
    length = ops.sum(ones, axis=1)  # [batch], each the length
    row = ops.cumsum(ones[:, 0]) - 1  # [batch]: 0, 1, ...
    return _rows(sequence, row * length + last)


def _rows(sequence, rows):
    """``sequence`` flattened to ``[batch * length, ...]``, at ``rows``."""
    flat = ops.reshape(sequence, (-1,) + tuple(ops.shape(sequence)[2:]))
    return ops.take(flat, rows, axis=0)


def token_positions(token_ids, token_id, width):
    """Where ``token_id`` occurs in each row, in order, in ``width`` slots.

    Args:
        token_ids: int ``[batch, length]``.
        token_id: int. The token to find (a masked LM's mask token).
        width: int. Slots per row.

    Returns:
        ``(positions, weights)``: int32 ``positions [batch, width]``, the
        positions of the row's first ``width`` occurrences and 0 in the
        slots past them, and float32 ``weights [batch, width]``, 1.0 in the
        slots that hold an occurrence. Occurrences past ``width`` are left
        out.
    """
    found = ops.cast(ops.equal(token_ids, token_id), "int32")  # [batch, length]
    # The slot of each occurrence: how many come before it.
    slot = ops.cumsum(found, axis=1) - 1
    slots = ops.arange(width, dtype="int32")
    one_hot = ops.expand_dims(found, 2) * ops.cast(
        ops.equal(ops.expand_dims(slot, 2), slots), "int32")  # [batch, length, width]
    length = ops.shape(token_ids)[1]
    index = ops.expand_dims(ops.arange(length, dtype="int32"), 1)  # [length, 1]
    positions = ops.cast(ops.sum(one_hot * index, axis=1), "int32")
    weights = ops.cast(ops.sum(one_hot, axis=1), "float32")
    return positions, weights
