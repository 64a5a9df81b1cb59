"""The product of int8 tensors with int32 sums: what Keras' int8 ``Dense``
and kzoo's int8 tied output embedding compute between quantizing their
inputs and dividing the scales out.

``int8_matmul_reference`` is ``keras.ops.matmul``. ``int8_matmul`` runs
PyTorch's ``torch._int_mm`` on a CPU (oneDNN's int8 product: Keras'
PyTorch ``matmul`` multiplies int8 tensors as int32 ones there, with no
fast kernel, 10-50x slower) and the reference elsewhere (XLA and
TensorFlow have int8 products of their own). The results are the same
integers.
"""

import keras
from keras import ops


def int8_matmul(x, y):
    """``x @ y`` of int8 tensors, with int32 sums.

    Args:
        x: int8 tensor ``[..., depth]``.
        y: int8 tensor ``[depth, n]`` (a transposed view is read as it
            lies on PyTorch).

    Returns:
        int32 tensor ``[..., n]``.

    Example:
    >>> x = np.array([[127, -127, 3]], "int8")
    >>> y = np.array([[1, 2], [3, 4], [5, 6]], "int8")
    >>> ops.convert_to_numpy(kzoo.ops.int8_matmul(x, y)).tolist()
    [[-239, -236]]
    """
    x, y = ops.convert_to_tensor(x), ops.convert_to_tensor(y)
    _check(x, y)
    if keras.backend.backend() == "torch":
        return _torch_int8_matmul(x, y)
    return int8_matmul_reference(x, y)


def int8_matmul_reference(x, y):
    """``int8_matmul`` as ``keras.ops.matmul`` (int32 sums)."""
    x, y = ops.convert_to_tensor(x), ops.convert_to_tensor(y)
    _check(x, y)
    if len(x.shape) == 1:
        # as one row: TensorFlow's vector-matrix int8 product keeps int8 sums
        return ops.cast(ops.matmul(x[None], y), "int32")[0]
    return ops.cast(ops.matmul(x, y), "int32")


def _check(x, y):
    dtypes = (keras.backend.standardize_dtype(x.dtype),
              keras.backend.standardize_dtype(y.dtype))
    if dtypes != ("int8", "int8"):
        raise ValueError(
            f"`int8_matmul` multiplies int8 tensors, got {dtypes[0]} and "
            f"{dtypes[1]}: quantize the inputs first (e.g. "
            "`keras.quantizers.abs_max_quantize`).")
    if len(y.shape) != 2 or len(x.shape) < 1 or x.shape[-1] != y.shape[0]:
        raise ValueError(
            "`int8_matmul` needs x [..., depth] and y [depth, n], got shapes "
            f"{tuple(x.shape)} and {tuple(y.shape)}.")


def _torch_int8_matmul(x, y):
    import torch

    # CUDA's kernel takes only some shapes (more than 16 rows, sizes in
    # multiples of 8); the CPU one any.
    if x.device.type != "cpu" or y.device.type != "cpu":
        return int8_matmul_reference(x, y)
    rows = x.reshape(-1, x.shape[-1])
    return torch._int_mm(rows, y).reshape(*x.shape[:-1], y.shape[1])
