"""A loop whose scalar integer state stays on the host where the backend
runs it there.

``while_loop_reference`` is ``keras.ops.while_loop``. On PyTorch (eager;
not under ``torch.compile``) Keras runs that loop in Python anyway, but it
converts every loop variable to a tensor, so a position carried in the loop
(a generation loop's ``index``) is a 0-d tensor: each use of it as a
position (a slice, a cache write) reads it back to the host, and each
``index + 1`` is a kernel call. ``while_loop`` there carries a 0-d integer
tensor of ``loop_vars`` as a Python int between iterations and converts it
back to a tensor at the end, so the body reads positions for free. The
body must accept an int wherever it accepts that scalar (``keras.ops``
functions do); the results are the reference's.
"""

import keras
from keras import ops


def while_loop_reference(cond, body, loop_vars):
    """``while_loop`` as ``keras.ops.while_loop`` (a tuple in, a tuple out)."""
    return tuple(ops.while_loop(cond, body, tuple(loop_vars)))


def _torch_while_loop(cond, body, loop_vars):
    import torch

    from kzoo.ops.transformer_torch import _compiling

    if _compiling():
        return while_loop_reference(cond, body, loop_vars)
    loop_vars = tuple(loop_vars)
    scalars = [isinstance(v, torch.Tensor) and v.dim() == 0
               and not v.dtype.is_floating_point and v.dtype != torch.bool
               for v in loop_vars]
    kinds = [(v.dtype, v.device) if s else None for v, s in zip(loop_vars, scalars)]
    loop_vars = tuple(int(v) if s else v for v, s in zip(loop_vars, scalars))
    while bool(cond(*loop_vars)):
        loop_vars = tuple(body(*loop_vars))
        if len(loop_vars) != len(scalars):
            raise ValueError(
                f"`body` returned {len(loop_vars)} loop variables where the loop "
                f"has {len(scalars)}: return one value per loop variable.")
    return tuple(v if kind is None else torch.tensor(v, dtype=kind[0], device=kind[1])
                 for v, kind in zip(loop_vars, kinds))


def while_loop(cond, body, loop_vars):
    """Runs ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``.

    As ``keras.ops.while_loop`` with a tuple of loop variables; where the
    backend runs the loop on the host (eager PyTorch), a scalar integer
    tensor among ``loop_vars`` is a Python int inside ``cond`` and ``body``
    (see the module's docstring).

    Args:
        cond: ``(*loop_vars) -> bool`` scalar.
        body: ``(*loop_vars) -> tuple`` of new loop variables, one per loop
            variable, of the same shapes.
        loop_vars: a tuple or list of tensors (or nests of them).

    Returns:
        The final loop variables, a tuple.

    Example:
    >>> counted = kzoo.ops.while_loop(lambda i, x: i < 3,
    ...                               lambda i, x: (i + 1, x * 2),
    ...                               (np.int32(0), np.float32(1.0)))
    >>> [float(ops.convert_to_numpy(v)) for v in counted]
    [3.0, 8.0]
    """
    if keras.backend.backend() == "torch":
        return _torch_while_loop(cond, body, loop_vars)
    return while_loop_reference(cond, body, loop_vars)
