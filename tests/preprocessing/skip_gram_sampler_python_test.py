"""SkipGramSampler's Python implementation: equal to TensorFlow's where
nothing is drawn, and the same rules and distributions where something is."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.skip_gram_sampler import SkipGramSampler
from kzoo.testing import to_numpy


def _run(engine, kwargs, inputs):
    with engine_scope(engine):
        return to_numpy(SkipGramSampler(**kwargs)(inputs))


@st.composite
def fixed_cases(draw):
    """Samplers without randomness in what is sampled (negatives aside),
    with sentences as a ragged list, a dense array or one sentence."""
    size = draw(st.integers(2, 12))
    counts = draw(st.lists(st.integers(0, 30), min_size=size, max_size=size))
    skip_ids = tuple(draw(st.sets(st.integers(0, size - 1), max_size=2)))
    if len(skip_ids) == size:
        skip_ids = skip_ids[:1]
    if not any(c > 0 for i, c in enumerate(counts) if i not in skip_ids):
        counts[next(i for i in range(size) if i not in skip_ids)] = 3
    form = draw(st.sampled_from(["ragged", "dense", "one"]))
    token = st.integers(0, size - 1)
    if form == "ragged":
        inputs = draw(st.lists(st.lists(token, max_size=12), max_size=6))
    elif form == "dense":
        rows, length = draw(st.integers(1, 4)), draw(st.integers(0, 9))
        inputs = np.asarray(draw(st.lists(
            st.lists(token, min_size=length, max_size=length),
            min_size=rows, max_size=rows)), np.int32).reshape(rows, length)
    else:
        inputs = draw(st.lists(token, min_size=1, max_size=15))
    kwargs = dict(counts=counts, window=draw(st.integers(1, 4)),
                  negative=draw(st.integers(0, 3)), sample=0.0,
                  shrink_window=False, skip_ids=skip_ids,
                  output_mode=draw(st.sampled_from(["pairs", "windows"])),
                  seed=draw(st.integers(0, 100)))
    return kwargs, inputs


@settings(max_examples=100)
@given(fixed_cases())
def test_python_engine_matches_tensorflow_without_draws(case):
    kwargs, inputs = case
    python = _run("python", kwargs, inputs)
    tensorflow = _run("tensorflow", kwargs, inputs)
    assert python.keys() == tensorflow.keys()
    for key in tensorflow:
        assert python[key].dtype == tensorflow[key].dtype, key
        assert python[key].shape == tensorflow[key].shape, key
        if key != "negatives":
            np.testing.assert_array_equal(python[key], tensorflow[key], err_msg=key)
    never = [i for i, c in enumerate(kwargs["counts"]) if c == 0]
    assert not np.isin(python["negatives"], never + list(kwargs["skip_ids"])).any()


def _positions(sentences):
    """Sentences of distinct ids: id -> (sentence, position)."""
    return {t: (s, p) for s, row in enumerate(sentences) for p, t in enumerate(row)}


@pytest.mark.without_tensorflow
@settings(max_examples=60)
@given(st.lists(st.integers(0, 14), min_size=1, max_size=8),
       st.integers(1, 5), st.sampled_from([0.0, 0.001, 0.01]), st.integers(0, 50))
def test_pairs_lie_in_shrunk_windows_of_the_kept_words(lengths, window, sample,
                                                       seed):
    # Distinct ids, each of count 1: every id's sentence and position are
    # known, and the subsampling drops some (up to 3/4 with 0.001).
    ids = np.arange(1, 1 + sum(lengths))
    sentences = np.split(ids, np.cumsum(lengths)[:-1])
    counts = np.r_[0, np.ones(ids.size, int), 1]
    kwargs = dict(counts=counts, window=window, negative=2, sample=sample,
                  seed=seed)
    out = _run("python", kwargs, [s.tolist() for s in sentences])
    where = _positions([s.tolist() for s in sentences])
    pairs = list(zip(out["center"].tolist(), out["context"].tolist()))
    # Words of a sentence with two or more kept words all appear in a pair.
    kept = {}
    for center, context in pairs:
        assert where[center][0] == where[context][0]  # never across sentences
        for t in (center, context):
            kept.setdefault(where[t][0], set()).add(where[t][1])
    rank = {s: {p: i for i, p in enumerate(sorted(ps))} for s, ps in kept.items()}
    by_center = {}
    for center, context in pairs:
        (s, p), (_, q) = where[center], where[context]
        by_center.setdefault(center, []).append(rank[s][q] - rank[s][p])
    centers = list(dict.fromkeys(out["center"].tolist()))
    assert [where[c] for c in centers] == sorted(where[c] for c in centers)
    for center, offsets in by_center.items():
        s, p = where[center]
        n, i = len(rank[s]), rank[s][p]
        # Contexts in order, each offset once, a whole window radius r <= window
        # (clipped at the sentence's ends).
        assert offsets == sorted(set(offsets)) and 0 not in offsets
        radius = max(abs(o) for o in offsets)
        assert radius <= window
        inside = [o for o in range(-radius, radius + 1)
                  if o and 0 <= i + o < n]
        if offsets != inside:  # a radius reaching past one end only
            assert any(offsets == [o for o in range(-r, r + 1) if o and 0 <= i + o < n]
                       for r in range(radius, window + 1)), (offsets, i, n)
    assert out["negatives"].shape == (len(pairs), 2)
    assert not np.isin(out["negatives"], [0]).any()


@pytest.mark.without_tensorflow
def test_windows_hold_the_pairs_of_the_same_stream():
    # Same seed: the same subsampling and radii in both modes, so each
    # CBOW window holds exactly the skip-gram pairs of its center.
    rng = np.random.default_rng(0)
    sentences = [rng.integers(0, 30, rng.integers(0, 25)).tolist() for _ in range(40)]
    counts = np.r_[0, rng.integers(1, 100, 29)]
    kwargs = dict(counts=counts, window=4, negative=3, sample=0.01, seed=9)
    pairs = _run("python", kwargs, sentences)
    windows = _run("python", dict(kwargs, output_mode="windows"), sentences)
    rebuilt = [(c, x) for c, row, m in zip(windows["center"], windows["context"],
                                           windows["context_mask"])
               for x, keep in zip(row, m) if keep]
    assert rebuilt == list(zip(pairs["center"].tolist(), pairs["context"].tolist()))
    assert (windows["context"][~windows["context_mask"]] == 0).all()
    assert windows["context_mask"].any(axis=1).all()
    assert windows["negatives"].shape == (len(windows["center"]), 3)


@pytest.mark.without_tensorflow
def test_same_seed_same_outputs_other_seed_other_outputs():
    kwargs = dict(counts=[0, 7, 50, 3, 1, 20, 9, 0, 4, 12], window=3, negative=2,
                  sample=0.05, seed=42)
    sentences = [[2, 5, 1, 7, 2, 9, 3], [4, 0, 6], [], [8, 8, 2, 1, 5, 6, 9, 9, 3, 2]] * 5
    first = _run("python", kwargs, sentences)
    again = _run("python", kwargs, sentences)
    other = _run("python", dict(kwargs, seed=43), sentences)
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    assert first["negatives"].tolist() != other["negatives"].tolist()
    # A layer's stream moves on from call to call.
    with engine_scope("python"):
        sampler = SkipGramSampler(**kwargs)
        a, b = to_numpy(sampler(sentences)), to_numpy(sampler(sentences))
    assert a["negatives"].tolist() != b["negatives"].tolist()


@pytest.mark.without_tensorflow
def test_subsampling_keep_rate_follows_word2vec_formula():
    sample, n = 1e-2, 25_000
    counts = np.array([0, 1, 40_000, 10_000, 3_000, 1_000, 0])
    words = [2, 3, 4, 5]
    # Sentences [word, 1]: id 1 is rare (always kept), so the pair
    # (word, 1) exists exactly when the word was kept.
    ids = np.stack([np.repeat(words, n), np.ones(4 * n, int)], axis=1)
    out = _run("python", dict(counts=counts, window=1, negative=0, sample=sample,
                              shrink_window=False, seed=11), ids.astype("int32"))
    total = counts.sum()
    for w in words:
        f = counts[w]
        keep = min(1.0, (np.sqrt(f / (sample * total)) + 1) * sample * total / f)
        # 5 standard deviations of a rate over n draws: ~0.015.
        assert abs(np.sum(out["center"] == w) / n - keep) < 0.015, w
    assert 0.05 < min(np.sum(out["center"] == w) / n for w in words)


@pytest.mark.without_tensorflow
def test_shrunk_radii_are_uniform_and_distances_follow():
    window, length, sentences = 4, 500, 200  # 100k tokens
    counts = np.ones(length, int)
    ids = np.tile(np.arange(length, dtype="int32"), (sentences, 1))
    out = _run("python", dict(counts=counts, window=window, negative=0,
                              sample=0.0, seed=3), ids)
    distance = np.abs(out["center"] - out["context"])
    observed = np.bincount(distance, minlength=window + 1)[1:] / len(distance)
    # P(pair at distance d kept) = P(r >= d) = (window - d + 1) / window.
    d = np.arange(1, window + 1)
    expected = 2 * (length - d) * (window - d + 1) / window
    expected /= expected.sum()
    assert 0.5 * np.abs(observed - expected).sum() < 0.01
    # Centers away from the ends: their radius is their farthest context.
    inner = (out["center"] >= window) & (out["center"] < length - window)
    starts = np.r_[True, np.diff(out["center"]) != 0]  # one center's run begins
    runs = np.split(distance, np.flatnonzero(starts)[1:])
    centers = out["center"][starts]
    radii = np.array([r.max() for r in runs])[inner[starts]]
    share = np.bincount(radii, minlength=window + 1)[1:] / radii.size
    assert np.abs(share - 1 / window).max() < 0.01, share
    assert (centers[inner[starts]] >= window).all()


@pytest.mark.without_tensorflow
def test_negatives_follow_unigram_to_the_power_0_75():
    counts = np.array([0, 100, 40, 7, 1, 0, 300, 25, 60, 2])
    out = _run("python", dict(counts=counts, window=1, negative=100, sample=0.0,
                              shrink_window=False, skip_ids=(8,), seed=5),
               np.ones((1, 1001), "int32"))
    negatives = out["negatives"].ravel()
    assert negatives.size == 200_000 and out["negatives"].dtype == np.int32
    weights = counts.astype(float) ** 0.75
    weights[8] = 0.0
    expected = weights / weights.sum()
    observed = np.bincount(negatives, minlength=len(counts)) / negatives.size
    assert 0.5 * np.abs(observed - expected).sum() < 0.005
    assert observed[[0, 5, 8]].sum() == 0


@pytest.mark.without_tensorflow
def test_empty_inputs_and_errors_on_the_python_engine():
    with engine_scope("python"):
        sampler = SkipGramSampler([0, 7, 50, 3], negative=2, skip_ids=(2,), seed=0)
        for inputs in ([], [[]], [[2, 0, 3]], [3], np.zeros((0, 4), "int32")):
            out = to_numpy(sampler(inputs))
            assert out["center"].shape == (0,) and out["negatives"].shape == (0, 2)
            assert out["center"].dtype == np.int32
        with pytest.raises(TypeError, match="`inputs` must be integer"):
            sampler([["a"]])
        with pytest.raises(TypeError, match="`inputs` must be integer"):
            sampler(np.array([[1.5, 2.0]]))
        with pytest.raises(ValueError, match="len\\(counts\\) = 4"):
            sampler([[0, 5]])
        with pytest.raises(ValueError, match="negative token ids"):
            sampler([[1, -1]])
        with pytest.raises(ValueError, match="rank"):
            sampler(np.ones((2, 2, 2), "int32"))
