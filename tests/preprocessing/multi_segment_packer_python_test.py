"""MultiSegmentPacker's Python implementation against its TensorFlow one."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.preprocessing.engine import engine_scope, tf
from kzoo.preprocessing.multi_segment_packer import (
    MultiSegmentPacker,
    round_robin_allocation,
    waterfall_allocation,
)
from kzoo.preprocessing.preprocessing_layer import PreprocessingLayer, numpy_outputs
from kzoo.testing import to_numpy
from kzoo.testing.without_tensorflow import check_without_tensorflow

SPECIALS = st.one_of(st.none(), st.integers(100, 110),
                     st.lists(st.integers(100, 110), max_size=2))
SEGMENT = st.lists(st.integers(1, 99), max_size=25)


def _outputs(packer, segments):
    out = packer(*segments)
    return {key: to_numpy(value) for key, value in out.items()}


def _assert_same(python, tensorflow):
    assert python.keys() == tensorflow.keys()
    for key in tensorflow:
        assert python[key].dtype == tensorflow[key].dtype, key
        assert python[key].shape == tensorflow[key].shape, key
        np.testing.assert_array_equal(python[key], tensorflow[key], err_msg=key)


@st.composite
def packings(draw):
    num_segments = draw(st.integers(1, 3))
    batch_size = draw(st.integers(0, 5))
    start, sep, end = draw(SPECIALS), draw(SPECIALS), draw(SPECIALS)
    packer = dict(start_value=start, end_value=end,
                  sep_value=draw(st.one_of(st.none(), st.just([]), SPECIALS)),
                  pad_value=draw(st.integers(0, 1)),
                  truncate=draw(st.sampled_from(["round_robin", "waterfall"])),
                  padding_side=draw(st.sampled_from(["right", "left"])))
    unbatched = draw(st.booleans())
    if unbatched:
        segments = tuple(draw(SEGMENT) for _ in range(num_segments))
    else:
        segments = tuple([draw(SEGMENT) for _ in range(batch_size)]
                         for _ in range(num_segments))
    probe = MultiSegmentPacker(1000, **packer)
    needed = probe._num_special_tokens(num_segments)
    packer["sequence_length"] = max(1, needed + draw(st.integers(0, 40)))
    return packer, segments


@settings(max_examples=100)
@given(packings())
def test_python_engine_matches_tensorflow(case):
    kwargs, segments = case
    with engine_scope("tensorflow"):
        expected = _outputs(MultiSegmentPacker(**kwargs), segments)
    with engine_scope("python"):
        actual = _outputs(MultiSegmentPacker(**kwargs), segments)
    _assert_same(actual, expected)


@settings(max_examples=40)
@given(st.lists(st.lists(st.integers(0, 12), min_size=1, max_size=4)
                .map(tuple), min_size=1, max_size=6)
       .filter(lambda rows: len({len(r) for r in rows}) == 1),
       st.integers(0, 30))
def test_allocations_match_tensorflow_text(lengths, budget):
    import tensorflow as tf
    import tensorflow_text as tf_text

    lengths = np.array(lengths)
    segments = [tf.RaggedTensor.from_row_lengths(
        tf.zeros([int(lengths[:, i].sum())], tf.int32), lengths[:, i])
        for i in range(lengths.shape[1])]
    for allocate, trimmer in [(round_robin_allocation, tf_text.RoundRobinTrimmer),
                              (waterfall_allocation, tf_text.WaterfallTrimmer)]:
        trimmed = trimmer(budget).trim(segments)
        expected = np.stack([t.row_lengths().numpy() for t in trimmed], axis=-1)
        np.testing.assert_array_equal(allocate(lengths, budget), expected,
                                      err_msg=trimmer.__name__)


def test_dense_numpy_and_backend_inputs_and_dtypes():
    import keras

    packer = MultiSegmentPacker(9, start_value=101, end_value=102)
    cases = [
        (np.array([[1, 2, 3], [4, 5, 6]], "int64"), np.array([[7], [8]], "int64")),
        (keras.ops.convert_to_tensor(np.array([[1, 2], [3, 4]], "int32")),
         keras.ops.convert_to_tensor(np.array([[5, 6, 7], [8, 9, 9]], "int32"))),
        ([[1, 2], []], [[], [3]]),
        (np.zeros((0, 3), "int32"), np.zeros((0, 2), "int32")),
        ([], []),
        ([[], []],),
    ]
    for segments in cases:
        with engine_scope("tensorflow"):
            expected = _outputs(packer, segments)
        with engine_scope("python"):
            actual = _outputs(packer, segments)
            tupled = _outputs(packer, (tuple(segments),))
        _assert_same(actual, expected)
        _assert_same(tupled, expected)


@pytest.mark.parametrize("segments, error, match", [
    (([1, 2], [[3]]), ValueError, "ranks"),
    ((["[CLS]", "a"],), TypeError, "integer token ids"),
    (([1.5, 2.0],), TypeError, "integer token ids"),
    (([[1], [2]], [[3]]), ValueError, "batch size"),
    (([1], [2], [3], [4], [5]), ValueError, "5 segment"),
    ((), ValueError, "at least one segment"),
])
def test_python_engine_errors_match(segments, error, match):
    packer = MultiSegmentPacker(5, start_value=1, end_value=2)
    for name in ("tensorflow", "python"):
        with engine_scope(name), pytest.raises(error, match=match):
            packer(*segments)


class _Outer(PreprocessingLayer):
    """Calls the packer on int64 ids from inside its own call."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.packer = MultiSegmentPacker(6, start_value=101, end_value=102)

    def call(self, x):
        return self.packer(tf.cast(x, "int64"))["token_ids"]

    def python_call(self, x):
        return self.packer([np.asarray(r, "int64") for r in x])["token_ids"]


def test_nested_call_keeps_the_segments_dtype():
    for name in ("tensorflow", "python"):
        with engine_scope(name):
            out = to_numpy(_Outer()([[1, 2], [3]]))
        np.testing.assert_array_equal(out, [[101, 1, 2, 102, 0, 0],
                                            [101, 3, 102, 0, 0, 0]])
    with engine_scope("python"), numpy_outputs():
        assert _Outer()([[1, 2], [3]]).dtype == np.int64  # as tf.int64 there
    with engine_scope("python"), numpy_outputs():
        out = MultiSegmentPacker(6, 101, 102)([np.array([1, 2], "int64")])
    assert out["token_ids"].dtype == np.int32  # outermost: as TensorFlow's


def test_runs_without_tensorflow():
    out = check_without_tensorflow("""
        from kzoo.preprocessing import MultiSegmentPacker
        from kzoo.testing import to_numpy
        packer = MultiSegmentPacker(8, start_value=101, end_value=102,
                                    truncate="waterfall")
        out = packer([[1, 2, 3, 4, 5, 6], [7]], [[8, 9], [10, 11]])
        print(to_numpy(out["token_ids"]).tolist())
        print(to_numpy(out["segment_ids"]).tolist())
    """)
    assert out.split("\n")[:2] == [
        "[[101, 1, 2, 3, 4, 5, 102, 102], [101, 7, 102, 10, 11, 102, 0, 0]]",
        "[[0, 0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 1, 1, 1, 0, 0]]"]
