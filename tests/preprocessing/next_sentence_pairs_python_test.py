"""NextSentencePairs' Python implementation: its deterministic rules equal
to the TensorFlow path's, the random ones by their statistics."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.next_sentence_pairs import NextSentencePairs
from kzoo.preprocessing.preprocessing_layer import numpy_outputs
from kzoo.testing import to_numpy
from kzoo.testing.without_tensorflow import check_without_tensorflow

SIZES = st.lists(st.integers(0, 6), max_size=6)


def _documents(sizes):
    """Documents of unique sentences named `d<doc>s<sentence>`."""
    return [[f"d{d}s{s}" for s in range(size)] for d, size in enumerate(sizes)]


def _doc_of(sentence):
    return int(sentence[1:sentence.index("s")])


def _run(engine, layer, docs):
    with engine_scope(engine), numpy_outputs():
        out = layer(docs)
    return dict(out, next_sentence_label=to_numpy(out["next_sentence_label"]))


@settings(max_examples=80)
@given(SIZES, st.sampled_from([0.0, 1.0]), st.integers(0, 100))
def test_rules_match_tensorflow(sizes, rate, seed):
    """Rate 0: the same pairs; rate 1: the same segment_a and labels (random
    exactly where another document has a sentence), segment_b from another
    document."""
    docs = _documents(sizes)
    expected = _run("tensorflow", NextSentencePairs(rate, seed=seed), docs)
    actual = _run("python", NextSentencePairs(rate, seed=seed), docs)
    assert actual["segment_a"] == expected["segment_a"]
    labels = actual["next_sentence_label"]
    assert labels.dtype == expected["next_sentence_label"].dtype == np.int32
    np.testing.assert_array_equal(labels, expected["next_sentence_label"])
    if rate == 0.0:
        assert actual["segment_b"] == expected["segment_b"]
    for a, b, label in zip(actual["segment_a"], actual["segment_b"], labels):
        d, s = _doc_of(a), int(a.split("s")[1])
        if label == 0:
            assert b == f"d{d}s{s + 1}"
        else:
            assert _doc_of(b) != d and int(b.split("s")[1]) < sizes[_doc_of(b)]


def test_random_sentences_are_uniform_over_the_other_documents():
    docs = _documents([2000, 100, 300])
    out = _run("python", NextSentencePairs(random_next_rate=1.0, seed=0), docs)
    np.testing.assert_array_equal(out["next_sentence_label"], np.ones(2397))
    a_docs = np.array([_doc_of(s) for s in out["segment_a"]])
    b_docs = np.array([_doc_of(s) for s in out["segment_b"]])
    assert not np.any(a_docs == b_docs)
    # From doc 0 (1999 pairs): uniform over 400 sentences, doc 1 a quarter.
    from_first = b_docs[a_docs == 0]
    assert abs(np.mean(from_first == 1) - 0.25) < 4 * np.sqrt(0.25 * 0.75 / 1999)
    # Every sentence of the other documents can be drawn, none favoured.
    counts = np.bincount([int(b.split("s")[1]) for b, d in
                          zip(out["segment_b"], b_docs) if d == 2],
                         minlength=300)
    assert counts.size == 300 and counts.sum() > 1000
    assert counts.max() < counts.mean() + 6 * np.sqrt(counts.mean())


def test_label_rate():
    docs = _documents([60] * 100)  # 5900 pairs
    for rate in (0.5, 0.2):
        labels = _run("python", NextSentencePairs(rate, seed=1),
                      docs)["next_sentence_label"]
        assert labels.size == 5900
        assert abs(labels.mean() - rate) < 4 * np.sqrt(rate * (1 - rate) / 5900)


def test_seeded_stream():
    docs = _documents([5, 7, 3, 9])
    a = _run("python", NextSentencePairs(seed=5), docs)
    b = _run("python", NextSentencePairs(seed=5), docs)
    assert a["segment_b"] == b["segment_b"]
    assert a["segment_b"] != _run("python", NextSentencePairs(seed=6),
                                  docs)["segment_b"]
    layer = NextSentencePairs(seed=5)
    first, second = _run("python", layer, docs), _run("python", layer, docs)
    assert first["segment_b"] == a["segment_b"] != second["segment_b"]


def test_edge_inputs_match_tensorflow():
    for docs in ([], [[], []], [["only"], ["one"]], [[b"ok", b"bad \xff"]],
                 [["x0", "x1", "x2"], []]):
        layer = NextSentencePairs(random_next_rate=1.0, seed=0)
        expected = _run("tensorflow", layer, docs)
        actual = _run("python", layer, docs)
        assert actual["segment_a"] == expected["segment_a"]
        assert actual["segment_b"] == expected["segment_b"]
        np.testing.assert_array_equal(actual["next_sentence_label"],
                                      expected["next_sentence_label"])
        assert actual["next_sentence_label"].shape == expected[
            "next_sentence_label"].shape


@pytest.mark.parametrize("docs, error, match", [
    (["one document", "given flat"], ValueError, "rank 1"),
    ("one sentence", ValueError, "rank 0"),
    ([[["too"], ["deep"]]], ValueError, "rank 3"),
    ([[1, 2], [3, 4]], TypeError, "must be strings"),
])
def test_errors_match(docs, error, match):
    for name in ("tensorflow", "python"):
        with engine_scope(name), pytest.raises(error, match=match):
            NextSentencePairs()(docs)


def test_runs_without_tensorflow():
    out = check_without_tensorflow("""
        from kzoo.preprocessing import NextSentencePairs
        nsp = NextSentencePairs(random_next_rate=0.0)
        out = nsp([["a1", "a2", "a3"], ["b1", "b2"]])
        print(out["segment_a"], out["segment_b"])
        out = NextSentencePairs(random_next_rate=1.0, seed=2)([["a", "b"], ["c"]])
        print(out["segment_b"], out["next_sentence_label"].tolist())
    """)
    assert out.split("\n")[:2] == ["['a1', 'a2', 'b1'] ['a2', 'a3', 'b2']",
                                   "['c'] [1]"]
