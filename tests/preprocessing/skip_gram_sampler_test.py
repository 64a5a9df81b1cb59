import numpy as np
import pytest
import tensorflow as tf

from kzoo.preprocessing.skip_gram_sampler import SkipGramSampler
from kzoo.testing.test_case import assert_all_equal
from kzoo.testing.test_case import run_preprocessing_layer_test
from kzoo.testing.test_case import to_numpy

COUNTS = [0, 7, 50, 3, 1, 20, 9, 0, 4, 12]
SENTENCES = [[2, 5, 1, 7, 2, 9, 3], [4, 0, 6], [], [8, 8, 2, 1, 5, 6, 9, 9, 3, 2]]


def reference_pairs(sentences, counts, window, skip_ids=()):
    """All (center, context) pairs, enumerated by hand with numpy."""
    pairs = []
    for sentence in sentences:
        tokens = np.asarray([t for t in sentence
                             if counts[t] > 0 and t not in skip_ids], int)
        for i in range(len(tokens)):
            for j in range(max(0, i - window), min(len(tokens), i + window + 1)):
                if j != i:
                    pairs.append((int(tokens[i]), int(tokens[j])))
    return pairs


@pytest.mark.parametrize("window, skip_ids", [(1, ()), (2, (5,)), (4, (2, 9))])
def test_exact_pairs_without_randomness(window, skip_ids):
    sampler = SkipGramSampler(COUNTS, window=window, negative=3, sample=0.0,
                              shrink_window=False, skip_ids=skip_ids, seed=0)
    out = to_numpy(sampler(SENTENCES))
    assert list(zip(out["center"].tolist(), out["context"].tolist())) == (
        reference_pairs(SENTENCES, COUNTS, window, skip_ids))
    assert out["negatives"].shape == (len(out["center"]), 3)
    assert out["negatives"].dtype == np.int32
    never = [i for i, c in enumerate(COUNTS) if c == 0] + list(skip_ids)
    assert not np.isin(out["negatives"], never).any()


def test_shrunk_window_distance_distribution():
    window, length, sentences = 4, 500, 200  # 100k tokens
    # Distinct ids along each sentence: |center - context| is the distance.
    counts = np.ones(length, int)
    ids = np.tile(np.arange(length, dtype="int32"), (sentences, 1))
    sampler = SkipGramSampler(counts, window=window, negative=0, sample=0.0,
                              seed=3)
    out = to_numpy(sampler(ids))
    distance = np.abs(out["center"] - out["context"])
    observed = np.bincount(distance, minlength=window + 1)[1:] / len(distance)
    # P(pair at distance d kept) = P(r >= d) = (window - d + 1) / window.
    d = np.arange(1, window + 1)
    expected = 2 * (length - d) * (window - d + 1) / window
    expected /= expected.sum()
    assert 0.5 * np.abs(observed - expected).sum() < 0.01


def test_subsampling_keep_rate_follows_word2vec_formula():
    sample, n = 1e-2, 25_000
    counts = np.array([0, 1, 40_000, 10_000, 3_000, 1_000, 0])
    words = [2, 3, 4, 5]
    # Sentences [word, 1]: id 1 is rare (always kept), so the pair
    # (word, 1) exists exactly when the word was kept.
    ids = np.stack([np.repeat(words, n), np.ones(4 * n, int)], axis=1)
    sampler = SkipGramSampler(counts, window=1, negative=0, sample=sample,
                              shrink_window=False, seed=11)
    center = to_numpy(sampler(ids.astype("int32"))["center"])
    total = counts.sum()
    for w in words:
        f = counts[w]
        keep = min(1.0, (np.sqrt(f / (sample * total)) + 1) * sample * total / f)
        assert abs(np.sum(center == w) / n - keep) < 0.015, w
    assert 0.05 < min(np.sum(center == w) / n for w in words)


def test_negatives_follow_unigram_to_the_power_0_75():
    counts = np.array([0, 100, 40, 7, 1, 0, 300, 25, 60, 2])
    sampler = SkipGramSampler(counts, window=1, negative=100, sample=0.0,
                              shrink_window=False, skip_ids=(8,), seed=5)
    out = to_numpy(sampler(np.ones((1, 1001), "int32")))
    negatives = out["negatives"].ravel()
    assert negatives.size == 200_000
    weights = counts.astype(float) ** 0.75
    weights[8] = 0.0
    expected = weights / weights.sum()
    observed = np.bincount(negatives, minlength=len(counts)) / negatives.size
    assert 0.5 * np.abs(observed - expected).sum() < 0.01
    assert observed[[0, 5, 8]].sum() == 0


def test_same_seed_same_output_and_eager_equals_tf_data():
    kwargs = {"counts": COUNTS, "window": 3, "negative": 2, "sample": 0.05,
              "seed": 42}
    first = run_preprocessing_layer_test(
        SkipGramSampler, kwargs, SENTENCES, random=True)
    assert_all_equal(SkipGramSampler(**kwargs)(SENTENCES), first)
    other = SkipGramSampler(**{**kwargs, "seed": 43})(SENTENCES)
    assert to_numpy(other["negatives"]).tolist() != to_numpy(first["negatives"]).tolist()


def test_tf_data_pipeline_on_every_backend():
    sampler = SkipGramSampler(COUNTS, window=2, negative=4, sample=0.0,
                              shrink_window=False, seed=1)
    ds = tf.data.Dataset.from_tensor_slices(tf.ragged.constant(SENTENCES * 3))
    ds = ds.batch(5).map(sampler).unbatch().batch(8)
    batches = list(ds)
    center = np.concatenate([b["center"].numpy() for b in batches])
    context = np.concatenate([b["context"].numpy() for b in batches])
    assert batches[0]["negatives"].shape == (8, 4)
    pairs = reference_pairs(SENTENCES * 3, COUNTS, 2)
    assert list(zip(center.tolist(), context.tolist())) == pairs


def test_empty_inputs_give_empty_outputs():
    sampler = SkipGramSampler(COUNTS, negative=2, skip_ids=(2,), seed=0)
    for inputs in ([], [[]], [[2, 0, 7]], [3]):
        out = to_numpy(sampler(inputs))
        assert out["center"].shape == (0,) and out["negatives"].shape == (0, 2)


def test_bad_arguments_and_inputs():
    with pytest.raises(ValueError, match="`counts` must be"):
        SkipGramSampler([[1, 2]])
    with pytest.raises(ValueError, match="no positive count"):
        SkipGramSampler([0, 5], skip_ids=(1,))
    with pytest.raises(ValueError, match="`skip_ids` has id 9"):
        SkipGramSampler([1, 2], skip_ids=(9,))
    with pytest.raises(ValueError, match="`window` must be >= 1"):
        SkipGramSampler([1, 2], window=0)
    with pytest.raises(TypeError, match="`shrink_window`"):
        SkipGramSampler([1, 2], shrink_window=None)
    with pytest.raises(TypeError, match="`inputs` must be integer"):
        SkipGramSampler([1, 2])(np.array([["a"]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="len\\(counts\\)"):
        SkipGramSampler([1, 2])([[0, 5]])


def reference_windows(sentences, counts, window, skip_ids=()):
    """(center, [context ids by offset -window..-1, 1..window or 0]) by hand."""
    examples = []
    for sentence in sentences:
        tokens = [t for t in sentence if counts[t] > 0 and t not in skip_ids]
        for i, center in enumerate(tokens):
            row = [tokens[i + o] if 0 <= i + o < len(tokens) else 0
                   for o in list(range(-window, 0)) + list(range(1, window + 1))]
            if len(tokens) > 1:
                examples.append((center, row))
    return examples


@pytest.mark.parametrize("window, skip_ids", [(1, ()), (3, (5,))])
def test_cbow_windows_without_randomness(window, skip_ids):
    sampler = SkipGramSampler(COUNTS, window=window, negative=2, sample=0.0,
                              shrink_window=False, skip_ids=skip_ids,
                              output_mode="windows", seed=0)
    out = to_numpy(sampler(SENTENCES + [[4], [3, 0]]))
    expected = reference_windows(SENTENCES + [[4], [3, 0]], COUNTS, window, skip_ids)
    assert out["center"].tolist() == [c for c, _ in expected]
    assert out["context"].tolist() == [r for _, r in expected]
    offsets = np.r_[np.arange(-window, 0), np.arange(1, window + 1)]
    lengths = [len([t for t in s if COUNTS[t] > 0 and t not in skip_ids])
               for s in SENTENCES + [[4], [3, 0]]]
    positions = [i for n in lengths if n > 1 for i in range(n)]
    sizes = [n for n in lengths if n > 1 for _ in range(n)]
    mask = [[0 <= p + o < n for o in offsets] for p, n in zip(positions, sizes)]
    assert out["context_mask"].tolist() == mask
    assert out["negatives"].shape == (len(expected), 2)


def test_cbow_shrunk_windows_are_the_pairs_of_the_same_stream():
    # Same seed, same draws: the windows hold exactly the skip-gram pairs.
    kwargs = dict(counts=COUNTS, window=3, negative=0, sample=0.05, seed=7)
    pairs = to_numpy(SkipGramSampler(**kwargs)(SENTENCES))
    windows = to_numpy(SkipGramSampler(**kwargs, output_mode="windows")(SENTENCES))
    rebuilt = [(c, x) for c, row, m in zip(windows["center"], windows["context"],
                                           windows["context_mask"])
               for x, keep in zip(row, m) if keep]
    assert rebuilt == list(zip(pairs["center"].tolist(), pairs["context"].tolist()))
    run_preprocessing_layer_test(
        SkipGramSampler, {**kwargs, "output_mode": "windows"}, SENTENCES, random=True)
    with pytest.raises(ValueError, match="`output_mode`"):
        SkipGramSampler(COUNTS, output_mode="cbow")


@pytest.mark.parametrize("weights", [
    [0.0, 5.0, 1.0, 0.0, 2.5, 0.25], np.random.default_rng(0).random(1000) ** 4,
    [0.0, 0.0, 3.0]])
def test_alias_table_gives_the_exact_distribution(weights):
    from kzoo.preprocessing.skip_gram_sampler import _alias_table

    weights = np.asarray(weights, float)
    probability, alias = _alias_table(weights)
    n = len(weights)
    implied = probability.copy()
    np.add.at(implied, alias, 1.0 - probability)
    np.testing.assert_allclose(implied / n, weights / weights.sum(), atol=1e-12)
    zero = weights == 0
    assert (probability[zero] == 0).all() and (weights[alias[zero]] > 0).all()
