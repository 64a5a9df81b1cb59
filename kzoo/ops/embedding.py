"""A GPT step's ends as single ops: the token plus position embeddings of
its few positions, and the logits through the tied token table.

``token_position_embedding`` is the input of a GPT step: the token
embedding table's rows of the new tokens plus the position table's rows of
their positions. ``token_position_embedding_reference`` writes it with
``keras.ops`` (``take``, ``slice``, an add); on PyTorch it is
``F.embedding`` and one add of the position rows' view, where the two
Keras layers cost two layer calls, a ``convert_to_tensor`` of each table
and a ``slice`` whose start is converted to a tensor. The values are the
same.

``embedding_logits`` scores hidden states against an embedding table
(``hidden @ table^T`` in float32, the tied output projection) in the form
that is fast for the shape and dtype; ``embedding_logits_reference`` is
``keras.ops.matmul`` and a cast.
"""

import keras
from keras import ops


def _check(token_ids, token_table, position_table, start_index):
    if len(token_ids.shape) != 2:
        raise ValueError(
            "`token_ids` must be [batch, length], got shape "
            f"{tuple(token_ids.shape)}.")
    if (len(token_table.shape) != 2 or len(position_table.shape) != 2
            or token_table.shape[1] != position_table.shape[1]):
        raise ValueError(
            "`token_table` and `position_table` must be [vocabulary, dim] and "
            f"[positions, dim] of one dim, got shapes {tuple(token_table.shape)} "
            f"and {tuple(position_table.shape)}.")
    length, positions = token_ids.shape[1], position_table.shape[0]
    if (isinstance(start_index, int) and isinstance(length, int)
            and not 0 <= start_index <= positions - length):
        raise ValueError(
            f"Positions {start_index} .. {start_index + length - 1} are outside "
            f"the position table's {positions} rows: generate at most "
            f"{positions} positions (the model's max_sequence_length).")


def token_position_embedding_reference(token_ids, token_table, position_table,
                                       start_index=0):
    """``token_position_embedding`` with ``keras.ops``."""
    _check(token_ids, token_table, position_table, start_index)
    token_table = ops.convert_to_tensor(token_table)
    position_table = ops.convert_to_tensor(position_table)
    tokens = ops.take(token_table, ops.cast(token_ids, "int32"), axis=0)
    length, dim = ops.shape(token_ids)[1], ops.shape(position_table)[1]
    positions = ops.slice(position_table, (start_index, 0), (length, dim))
    return tokens + ops.cast(positions, tokens.dtype)[None]


def _torch_token_position_embedding(token_ids, token_table, position_table,
                                    start_index=0):
    import torch
    import torch.nn.functional as F

    from kzoo.ops.transformer_torch import _tensor

    token_ids, token_table = _tensor(token_ids), _tensor(token_table)
    position_table = _tensor(position_table)
    if isinstance(start_index, torch.Tensor):
        start_index = int(start_index)
    _check(token_ids, token_table, position_table, start_index)
    if token_table.dtype != position_table.dtype or token_ids.dtype not in (
            torch.int32, torch.int64):
        return token_position_embedding_reference(
            token_ids, token_table, position_table, start_index)
    length = token_ids.shape[1]
    return (F.embedding(token_ids, token_table)
            + position_table[start_index:start_index + length])


def token_position_embedding(token_ids, token_table, position_table,
                             start_index=0):
    """``token_table[token_ids] + position_table[start_index + i]`` for the
    ``i``-th position of each row.

    Args:
        token_ids: int tensor ``[batch, length]``.
        token_table: float tensor or variable ``[vocabulary, dim]``.
        position_table: float tensor or variable ``[positions, dim]``.
        start_index: int or scalar int tensor, the position of the first
            column; ``start_index + length`` at most ``positions``.

    Returns:
        ``[batch, length, dim]`` in the token table's dtype.

    Example:
    >>> tokens = np.arange(6, dtype="float32").reshape(3, 2)
    >>> positions = np.array([[0, 0], [10, 10], [20, 20]], "float32")
    >>> ops.convert_to_numpy(kzoo.ops.token_position_embedding(
    ...     np.array([[2, 0]]), tokens, positions, 1)).tolist()
    [[[14.0, 15.0], [20.0, 21.0]]]
    """
    if keras.backend.backend() == "torch":
        return _torch_token_position_embedding(token_ids, token_table,
                                               position_table, start_index)
    return token_position_embedding_reference(token_ids, token_table,
                                              position_table, start_index)


#: up to this many rows (a generation step), float32 logits take the
#: ``(table @ hidden^T)^T`` form (and int8 tied logits one product a row)
FEW_ROWS = 64


def embedding_logits_reference(x, table):
    """``embedding_logits`` with ``keras.ops``: ``x @ table^T`` in float32."""
    table = ops.convert_to_tensor(table)
    return ops.cast(ops.matmul(x, ops.transpose(table)), "float32")


def static_rows(shape):
    """The number of rows of ``[..., dim]``, or None if not static."""
    rows = 1
    for dim in shape[:-1]:
        if not isinstance(dim, int):
            return None
        rows *= dim
    return rows


def embedding_logits(x, table):
    """Scores of hidden states against every row of an embedding table.

    A few float32 rows (a generation step) take ``(table @ x^T)^T``, the
    table read row by row as it lies: PyTorch's float32 CPU product with a
    transposed right-hand side reads it slower (batch 8 x GPT-2's 50257 x
    512; level on XLA). In bfloat16 it is the other way round: oneDNN's
    bfloat16 ``x @ table^T`` (Hugging Face's ``lm_head``) is the faster
    one, and its float32 cast reads the logits as they lie. On PyTorch the
    products are called directly (no Keras op's argument handling); the
    values are the same in both forms.

    Args:
        x: float tensor ``[..., dim]``.
        table: float tensor or variable ``[vocabulary, dim]`` in ``x``'s
            dtype.

    Returns:
        float32 ``[..., vocabulary]``.
    """
    if keras.backend.backend() == "torch":
        from kzoo.ops.transformer_torch import _tensor

        x, table = _tensor(x), _tensor(table)
        if x.dtype != table.dtype:
            return embedding_logits_reference(x, table)
        rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
        if rows <= FEW_ROWS:
            from kzoo.ops import packed_torch

            flat = x.reshape(rows, x.shape[-1])
            logits = (packed_torch.product(flat, table, transposed=False)
                      if rows else None)
            if logits is not None:
                return logits.float().reshape(*x.shape[:-1], table.shape[0])
            if str(x.dtype) == "torch.float32":
                return table.mm(flat.t()).t().reshape(*x.shape[:-1], table.shape[0])
        return x.matmul(table.t()).float()
    table = ops.convert_to_tensor(table)
    rows = static_rows(x.shape)
    float32 = keras.backend.standardize_dtype(x.dtype) == "float32"
    if rows is not None and rows <= FEW_ROWS and float32:
        flat = ops.reshape(x, (rows, x.shape[-1]))
        logits = ops.transpose(ops.matmul(table, ops.transpose(flat)))
        return ops.reshape(logits, tuple(x.shape[:-1]) + (-1,))
    return embedding_logits_reference(x, table)
