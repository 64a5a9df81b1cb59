"""`kzoo.ops.while_loop` equals `keras.ops.while_loop` (`while_loop_reference`)
and a loop written in plain Python: the values and dtypes of every loop
variable, a position read by slicing and indexing in the body, a loop that
never runs, and a nest (a tuple of tensors) carried through."""

import keras
import numpy as np
import pytest
from keras import ops

from kzoo.ops import while_loop, while_loop_reference
from kzoo.testing import to_numpy

pytestmark = pytest.mark.without_tensorflow


def _fill_loop(buffer, start, end):
    """Fills ``buffer[:, i]`` with ``2 * buffer[:, i - 1] + i`` for ``i`` in
    ``start .. end - 1`` (the body reads and writes at the loop's position,
    as a generation step does), and sums the columns read into a float."""
    length = buffer.shape[1]

    def cond(buffer, nest, index, total):
        return ops.logical_and(index < end, index < length)

    def body(buffer, nest, index, total):
        previous = buffer[:, index - 1]
        new = 2 * previous + ops.cast(index, previous.dtype)
        buffer = ops.slice_update(buffer, (0, index), new[:, None])
        total = total + ops.cast(ops.sum(previous), total.dtype)
        nest = (nest[0] + 1, nest[1] * 2.0)
        return buffer, nest, index + 1, total

    return cond, body, (buffer, (ops.zeros((2,), "int32"), ops.ones((3,))),
                        ops.convert_to_tensor(start, "int32"),
                        ops.convert_to_tensor(0.0, "float32"))


def _numpy_fill(buffer, start, end):
    buffer = buffer.copy()
    total, steps = 0.0, 0
    for i in range(start, min(end, buffer.shape[1])):
        total += float(buffer[:, i - 1].sum())
        buffer[:, i] = 2 * buffer[:, i - 1] + i
        steps += 1
    return buffer, steps, total


@pytest.mark.parametrize("start,end", ((1, 6), (3, 4), (5, 5), (2, 99)))
@pytest.mark.parametrize("fn", (while_loop, while_loop_reference))
def test_while_loop_matches_python(fn, start, end):
    buffer = np.arange(14, dtype="int32").reshape(2, 7)
    cond, body, loop_vars = _fill_loop(ops.convert_to_tensor(buffer), start, end)
    got_buffer, (counts, doubled), index, total = fn(cond, body, loop_vars)
    want_buffer, steps, want_total = _numpy_fill(buffer, start, end)
    np.testing.assert_array_equal(to_numpy(got_buffer), want_buffer)
    np.testing.assert_array_equal(to_numpy(counts), [steps, steps])
    np.testing.assert_allclose(to_numpy(doubled), [2.0 ** steps] * 3)
    assert int(to_numpy(index)) == start + steps
    assert float(to_numpy(total)) == want_total


@pytest.mark.parametrize("dtype", ("int32", "int64"))
def test_while_loop_returns_the_references_types(dtype):
    def cond(i, flag, x):
        return i < 4

    def body(i, flag, x):
        return i + 1, ops.logical_not(flag), x * 0.5

    loop_vars = (ops.convert_to_tensor(1, dtype), ops.convert_to_tensor(True),
                 ops.convert_to_tensor(8.0, "float32"))
    got = while_loop(cond, body, loop_vars)
    want = while_loop_reference(cond, body, loop_vars)
    assert isinstance(got, tuple) and len(got) == 3
    for g, w in zip(got, want):
        assert keras.backend.standardize_dtype(g.dtype) == \
            keras.backend.standardize_dtype(w.dtype)
        assert tuple(g.shape) == tuple(w.shape) == ()
        assert to_numpy(g).item() == to_numpy(w).item()
    assert [to_numpy(v).item() for v in got] == [4, False, 1.0]
