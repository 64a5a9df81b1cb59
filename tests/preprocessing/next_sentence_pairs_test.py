import numpy as np
import pytest
import tensorflow as tf

from kzoo.preprocessing.next_sentence_pairs import NextSentencePairs
from kzoo.testing.test_case import assert_all_equal
from kzoo.testing.test_case import run_preprocessing_layer_test
from kzoo.testing.test_case import to_numpy


def _documents(sizes):
    """Documents of unique sentences named `d<doc>s<sentence>`."""
    return [[f"d{d}s{s}" for s in range(size)] for d, size in enumerate(sizes)]


def _doc_of(sentence):
    return int(sentence[1:sentence.index("s")])


def test_layer_basics_eager_tf_data_and_serialization():
    run_preprocessing_layer_test(NextSentencePairs, dict(seed=3),
                                 _documents([3, 1, 0, 4, 2]), random=True)


def test_rate_zero_gives_the_true_pairs_in_order():
    out = NextSentencePairs(random_next_rate=0.0)(_documents([3, 1, 0, 2]))
    assert_all_equal(out["segment_a"], ["d0s0", "d0s1", "d3s0"])
    assert_all_equal(out["segment_b"], ["d0s1", "d0s2", "d3s1"])
    assert_all_equal(out["next_sentence_label"], [0, 0, 0])


def test_rate_one_draws_from_other_documents_in_proportion():
    docs = _documents([2000, 100, 300])
    out = NextSentencePairs(random_next_rate=1.0, seed=0)(docs)
    assert_all_equal(out["next_sentence_label"], np.ones(2397, "int32"))
    a_docs = np.array([_doc_of(s) for s in out["segment_a"]])
    b_docs = np.array([_doc_of(s) for s in out["segment_b"]])
    sentences = {s for doc in docs for s in doc}
    assert set(out["segment_b"]) <= sentences
    assert not np.any(a_docs == b_docs)
    # Uniform over the other documents' 400 sentences: doc 1 holds a quarter.
    assert abs(np.mean(b_docs[a_docs == 0] == 1) - 0.25) < 0.04


def test_half_random_over_many_pairs():
    docs = _documents([60] * 100)  # 5900 pairs
    out = NextSentencePairs(seed=1)(docs)
    labels = to_numpy(out["next_sentence_label"])
    assert labels.dtype == np.int32 and labels.size == 5900
    assert abs(labels.mean() - 0.5) < 0.03
    for a, b, label in zip(out["segment_a"], out["segment_b"], labels):
        d, s = _doc_of(a), int(a.split("s")[1])
        if label == 0:
            assert b == f"d{d}s{s + 1}"
        else:
            assert _doc_of(b) != d


def test_same_seed_same_output_different_seed_differs():
    docs = _documents([5, 7, 3, 9])
    a = NextSentencePairs(seed=5)(docs)
    assert_all_equal(NextSentencePairs(seed=5)(docs), a)
    b = NextSentencePairs(seed=6)(docs)
    assert a["segment_b"] != b["segment_b"]


def test_typical_tf_data_pipeline():
    docs = tf.ragged.constant(_documents([3, 2, 4, 1, 2, 3]))
    nsp = NextSentencePairs(random_next_rate=0.0)
    ds = tf.data.Dataset.from_tensor_slices(docs).batch(3).map(nsp).unbatch()
    pairs = [(x["segment_a"].numpy().decode(), x["segment_b"].numpy().decode(),
              int(x["next_sentence_label"])) for x in ds]
    assert pairs == [("d0s0", "d0s1", 0), ("d0s1", "d0s2", 0),
                     ("d1s0", "d1s1", 0), ("d2s0", "d2s1", 0),
                     ("d2s1", "d2s2", 0), ("d2s2", "d2s3", 0),
                     ("d4s0", "d4s1", 0), ("d5s0", "d5s1", 0),
                     ("d5s1", "d5s2", 0)]


def test_single_document_falls_back_to_true_pairs():
    out = NextSentencePairs(random_next_rate=1.0, seed=0)(
        [["x0", "x1", "x2"], []])
    assert_all_equal(out["segment_b"], ["x1", "x2"])
    assert_all_equal(out["next_sentence_label"], [0, 0])


def test_empty_inputs_and_invalid_utf8():
    for docs in ([], [[], []], [["only"], ["one"]]):
        out = NextSentencePairs(seed=0)(docs)
        assert out["segment_a"] == [] and out["segment_b"] == []
        assert to_numpy(out["next_sentence_label"]).shape == (0,)
    out = NextSentencePairs(random_next_rate=0.0)([[b"ok", b"bad \xff"]])
    assert out["segment_b"] == ["bad \ufffd"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="random_next_rate"):
        NextSentencePairs(random_next_rate=1.5)
    with pytest.raises(TypeError, match="random_next_rate"):
        NextSentencePairs(random_next_rate="half")
    with pytest.raises(ValueError, match="rank 1"):
        NextSentencePairs()(["one document", "given flat"])
