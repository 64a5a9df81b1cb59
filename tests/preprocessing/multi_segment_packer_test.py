import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kzoo.preprocessing.multi_segment_packer import MultiSegmentPacker
from kzoo.testing.test_case import assert_all_equal
from kzoo.testing.test_case import run_preprocessing_layer_test
from kzoo.testing.test_case import to_numpy

GPT = dict(start_value=1, sep_value=2, end_value=3)  # <start> <delim> <extract>
ROBERTA = dict(start_value=0, sep_value=[2, 2], end_value=2, pad_value=1)


def _random_segments(rng, num_segments, batch_size, max_length):
    return tuple(
        [rng.integers(1, 100, rng.integers(0, max_length + 1)).tolist()
         for _ in range(batch_size)]
        for _ in range(num_segments)
    )


@pytest.mark.parametrize("truncate", ["round_robin", "waterfall"])
@pytest.mark.parametrize("num_segments", [1, 2, 3])
def test_matches_keras_hub_bert_layout(truncate, num_segments):
    rng = np.random.default_rng(num_segments)
    segments = _random_segments(rng, num_segments, 16, 9)
    kwargs = dict(sequence_length=12, start_value=101, end_value=102,
                  truncate=truncate)
    ours = MultiSegmentPacker(**kwargs)(*segments)
    reference = keras_hub.layers.MultiSegmentPacker(pad_value=0, **kwargs)
    eager_ids, eager_segment_ids = reference(segments)  # keras-hub's Python path
    graph_ids, graph_segment_ids = tf.function(reference)(
        tuple(tf.ragged.constant(s, dtype=tf.int32) for s in segments))  # tf-text
    for ids, segment_ids in [(eager_ids, eager_segment_ids),
                             (graph_ids, graph_segment_ids)]:
        ids = to_numpy(ids)
        assert_all_equal(ours["token_ids"], ids)
        assert_all_equal(ours["segment_ids"], to_numpy(segment_ids))
        assert_all_equal(ours["padding_mask"], ids != 0)  # inputs are >= 1


def test_layer_basics_eager_tf_data_and_serialization():
    run_preprocessing_layer_test(
        MultiSegmentPacker,
        dict(sequence_length=7, **GPT),
        ([[10, 11, 12], [13]], [[20, 21], []]),
        expected_output={
            "token_ids": [[1, 10, 11, 2, 20, 21, 3], [1, 13, 2, 3, 0, 0, 0]],
            "segment_ids": [[0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 0, 0, 0]],
            "padding_mask": [[True] * 7, [True] * 4 + [False] * 3],
        },
    )


@pytest.mark.parametrize(
    "truncate, token_ids, segment_ids",
    [("round_robin", [1, 10, 11, 12, 2, 20, 21, 3], [0, 0, 0, 0, 0, 1, 1, 1]),
     ("waterfall", [1, 10, 11, 12, 13, 14, 2, 3], [0, 0, 0, 0, 0, 0, 0, 1])],
)
def test_gpt_layout_truncation(truncate, token_ids, segment_ids):
    packer = MultiSegmentPacker(8, truncate=truncate, **GPT)
    out = packer([10, 11, 12, 13, 14], [20, 21])
    assert_all_equal(out["token_ids"], token_ids)
    assert_all_equal(out["segment_ids"], segment_ids)
    assert_all_equal(out["padding_mask"], [True] * 8)


def test_last_real_position_is_the_extract_token():
    out = MultiSegmentPacker(9, **GPT)([[10, 11], [12], []], [[20], [], []])
    token_ids, mask = to_numpy(out["token_ids"]), to_numpy(out["padding_mask"])
    last = mask.sum(axis=1) - 1
    assert_all_equal(last, [5, 3, 2])
    assert_all_equal(token_ids[np.arange(3), last], [3, 3, 3])


def test_list_separators_and_left_padding():
    out = MultiSegmentPacker(10, **ROBERTA)([5, 6], [7])
    assert_all_equal(out["token_ids"], [0, 5, 6, 2, 2, 7, 2, 1, 1, 1])
    assert_all_equal(out["segment_ids"], [0, 0, 0, 0, 0, 1, 1, 0, 0, 0])
    assert_all_equal(out["padding_mask"], [True] * 7 + [False] * 3)
    out = MultiSegmentPacker(10, padding_side="left", **ROBERTA)(
        [[5, 6], [8]], [[7], [9, 9]])
    assert_all_equal(out["token_ids"], [[1, 1, 1, 0, 5, 6, 2, 2, 7, 2],
                                        [1, 1, 1, 0, 8, 2, 2, 9, 9, 2]])
    assert_all_equal(out["segment_ids"], [[0, 0, 0, 0, 0, 0, 0, 0, 1, 1],
                                          [0, 0, 0, 0, 0, 0, 0, 1, 1, 1]])
    assert_all_equal(out["padding_mask"], [[False] * 3 + [True] * 7] * 2)


def test_no_start_or_end_and_three_segments():
    out = MultiSegmentPacker(6, start_value=None, end_value=None)(
        [1], [2, 3], [4])
    assert_all_equal(out["token_ids"], [1, 2, 3, 4, 0, 0])
    assert_all_equal(out["segment_ids"], [0, 1, 1, 2, 0, 0])
    out = MultiSegmentPacker(8, start_value=None, sep_value=[], end_value=9)(
        ([1], [2, 3], [4]))
    assert_all_equal(out["token_ids"], [1, 2, 3, 4, 9, 0, 0, 0])
    assert_all_equal(out["segment_ids"], [0, 1, 1, 2, 2, 0, 0, 0])


def test_call_forms_agree():
    packer = MultiSegmentPacker(8, start_value=101, end_value=102)
    a = tf.ragged.constant([[1, 2], [3]])
    b = tf.ragged.constant([[4], [5, 6, 7]])
    expected = packer(a, b)
    assert_all_equal(packer((a, b)), expected)
    assert_all_equal(packer([a, b]), expected)
    assert_all_equal(packer([[1, 2], [3]], [[4], [5, 6, 7]]), expected)
    dense = packer(np.array([[1, 2], [3, 4]]), np.array([[5], [6]]))
    assert_all_equal(dense["token_ids"], [[101, 1, 2, 102, 5, 102, 0, 0],
                                          [101, 3, 4, 102, 6, 102, 0, 0]])


def test_empty_segments_and_empty_batch():
    packer = MultiSegmentPacker(5, start_value=101, end_value=102)
    out = packer([], [])
    assert_all_equal(out["token_ids"], [101, 102, 102, 0, 0])
    assert_all_equal(out["segment_ids"], [0, 0, 1, 0, 0])
    out = packer(np.zeros((0, 3), "int32"), np.zeros((0, 2), "int32"))
    for key in ("token_ids", "segment_ids", "padding_mask"):
        assert to_numpy(out[key]).shape == (0, 5)
    ds = tf.data.Dataset.from_tensors(
        (tf.zeros((0, 3), tf.int32), tf.zeros((0, 2), tf.int32))).map(packer)
    out = next(iter(ds))
    assert_all_equal(out["token_ids"], np.zeros((0, 5), "int32"))


def test_bad_arguments():
    with pytest.raises(ValueError, match="sequence_length=2"):
        MultiSegmentPacker(2, start_value=[1, 2], end_value=3)
    with pytest.raises(ValueError, match="3 segment"):
        MultiSegmentPacker(3, start_value=1, end_value=2)([1], [2], [3])
    with pytest.raises(ValueError, match="truncate"):
        MultiSegmentPacker(4, 1, 2, truncate="longest_first")
    with pytest.raises(ValueError, match="padding_side"):
        MultiSegmentPacker(4, 1, 2, padding_side="middle")
    with pytest.raises(TypeError, match="start_value"):
        MultiSegmentPacker(4, "[CLS]", 2)
    with pytest.raises(ValueError, match="ranks"):
        MultiSegmentPacker(8, 1, 2)([1, 2], [[3]])
    with pytest.raises(TypeError, match="integer token ids"):
        MultiSegmentPacker(8, 1, 2)(["[CLS]", "a"])
    with pytest.raises(ValueError, match="batch size"):
        MultiSegmentPacker(8, 1, 2)([[1], [2]], [[3]])
