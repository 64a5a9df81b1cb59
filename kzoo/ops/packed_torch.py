"""PyTorch side of ``kzoo.ops.packed`` (imported on that backend only):
oneDNN's packed copies of weight matrices and the product that reads them.

A weight is packed (``torch.ops.mkldnn._reorder_linear_weight``, what
``torch.compile``'s CPU freezing emits) only where the copy can be reused:
a ``torch.nn.Parameter`` (a Keras variable's value, not a cast or other
temporary made anew at every step), on the CPU, in float32 or bfloat16,
2-D, outside autograd. The copy is held in a table keyed weakly by the
parameter (it goes when the parameter goes) beside the parameter's version
counter, which every in-place write bumps (``copy_`` of ``assign``, the
optimizers' ``_foreach`` updates): a parameter written since it was packed
is packed again.
"""

import torch
from torch.utils.weak import WeakIdKeyDictionary

from kzoo.ops import packed, transformer_torch


def _reorder():
    if transformer_torch._ONEDNN_LINEAR is None:
        return None
    try:
        return torch.ops.mkldnn._reorder_linear_weight
    except (AttributeError, RuntimeError):
        return None


_REORDER = _reorder()
# oneDNN's linear and the dtypes it runs on this CPU, as `kzoo.ops.linear`'s.
_LINEAR = transformer_torch._ONEDNN_LINEAR
_DTYPES = transformer_torch._ONEDNN_DTYPES
#: the rows the packed layout is chosen for (a generation step's; any
#: number of rows reads it, and 1 to 64 rows read it alike fast)
PACKED_FOR_ROWS = 8

_packed = WeakIdKeyDictionary()


def release():
    count = len(_packed)
    _packed.clear()
    return count


def _packable(x, weight):
    return (_REORDER is not None and _LINEAR is not None
            and isinstance(weight, torch.nn.Parameter)
            and not weight.is_inference()
            and weight.device.type == "cpu" and weight.dim() == 2
            and weight.dtype in _DTYPES and x.dtype == weight.dtype
            and x.device.type == "cpu"
            and not (torch.is_grad_enabled()
                     and (weight.requires_grad or x.requires_grad)))


def packed_weight(x, weight, transposed):
    """The packed copy of ``weight`` (``[in, out]`` where ``transposed``,
    else ``[out, in]``) for ``x``, or None where none is used: outside
    ``kzoo.ops.packed_weights()`` or where ``_packable`` says no."""
    if not packed.packing() or not _packable(x, weight):
        return None
    version = weight._version
    hit = _packed.get(weight)
    if hit is not None and hit[0] == version:
        return hit[1]
    with torch.no_grad():
        copy = _REORDER(weight.t() if transposed else weight, PACKED_FOR_ROWS)
    _packed[weight] = (version, copy)
    return copy


def product(x, weight, bias=None, transposed=True):
    """``x @ weight + bias`` (``x @ weight.T`` where not ``transposed``)
    on 2-D ``x`` from the packed copy, or None where there is none."""
    copy = packed_weight(x, weight, transposed)
    if copy is None:
        return None
    return _LINEAR(x, copy, bias, "none", [], "")
