"""Sampled softmax vs TensorFlow's tf.nn.sampled_softmax_loss and sampler."""

import numpy as np
import tensorflow as tf
from keras import ops

from kzoo.losses import (
    log_uniform_candidates,
    log_uniform_probability,
    sampled_softmax_logits,
)
from kzoo.testing import assert_allclose, to_numpy
from kzoo.testing.test_case import gradient


def test_probabilities_match_tensorflows_sampler_expected_counts():
    ids = np.array([0, 1, 2, 10, 999, 123_456, 799_999])
    sampled, true_count, sampled_count = tf.random.log_uniform_candidate_sampler(
        true_classes=ids[:, None].astype("int64"), num_true=1, num_sampled=64,
        unique=False, range_max=800_000, seed=0)
    ours = 64 * to_numpy(log_uniform_probability(ids, 800_000))
    assert_allclose(ours, true_count.numpy()[:, 0], rtol=1e-5)
    assert_allclose(64 * to_numpy(log_uniform_probability(sampled.numpy(), 800_000)),
                    sampled_count.numpy(), rtol=1e-5)
    assert abs(to_numpy(log_uniform_probability(np.arange(1000), 1000)).sum() - 1) < 1e-5


def test_candidates_follow_the_log_uniform_distribution():
    draws = to_numpy(log_uniform_candidates(200_000, 50, seed=1))
    assert draws.dtype == np.int32 and draws.min() >= 0 and draws.max() < 50
    observed = np.bincount(draws, minlength=50) / draws.size
    expected = to_numpy(log_uniform_probability(np.arange(50), 50))
    # Binomial standard error of each frequency: sqrt(p (1 - p) / n) < 1.2e-3.
    np.testing.assert_allclose(observed, expected, atol=5e-3)
    assert not np.array_equal(to_numpy(log_uniform_candidates(8, 50, seed=2)),
                              to_numpy(log_uniform_candidates(8, 50, seed=3)))


def test_loss_matches_tf_nn_sampled_softmax_loss_with_the_same_sample():
    rng = np.random.default_rng(0)
    vocabulary, dim, num_sampled = 40, 6, 12
    inputs = rng.normal(size=(3, 5, dim)).astype("float32")
    labels = rng.integers(0, vocabulary, size=(3, 5))
    kernel = rng.normal(size=(dim, vocabulary)).astype("float32")
    bias = rng.normal(size=(vocabulary,)).astype("float32")
    # Distinct samples: TensorFlow removes only one copy of a repeated
    # accidental hit (ours removes every copy, checked below).
    sampled = rng.choice(vocabulary, num_sampled, replace=False).astype("int32")
    labels[0, 0] = sampled[0]  # an accidental hit to remove
    logits = to_numpy(sampled_softmax_logits(inputs, labels, kernel, bias, sampled))
    assert logits.shape == (3, 5, 1 + num_sampled)
    ours = -tf.nn.log_softmax(logits.astype("float64"))[..., 0].numpy()

    probability = lambda k: np.log1p(1 / (k + 1.0)) / np.log(vocabulary + 1.0)  # noqa: E731
    reference = tf.nn.sampled_softmax_loss(
        weights=kernel.T, biases=bias, labels=labels.reshape(-1, 1).astype("int64"),
        inputs=inputs.reshape(-1, dim), num_sampled=num_sampled, num_classes=vocabulary,
        sampled_values=(sampled.astype("int64"),
                        (num_sampled * probability(labels.reshape(-1, 1))).astype("float32"),
                        (num_sampled * probability(sampled)).astype("float32")),
        remove_accidental_hits=True).numpy()
    assert_allclose(ours.reshape(-1), reference, rtol=1e-4, atol=1e-4)
    # Without removing hits, exactly the hit columns differ.
    kept = to_numpy(sampled_softmax_logits(inputs, labels, kernel, bias, sampled,
                                           remove_accidental_hits=False))
    hits = labels[..., None] == sampled
    assert hits[0, 0, 0] and (logits[..., 1:][hits] == -1e30).all()
    assert_allclose(kept[..., 1:][~hits], logits[..., 1:][~hits])
    assert_allclose(kept[..., 0], logits[..., 0])
    twice = np.array([5, 7, 5], "int32")
    hit = to_numpy(sampled_softmax_logits(inputs[:1, :1], [[5]], kernel, bias, twice))
    assert hit[0, 0, 1] == hit[0, 0, 3] == -1e30 and hit[0, 0, 2] > -1e3


def test_gradients_reach_only_the_true_and_sampled_rows():
    import keras

    vocabulary, dim = 30, 4
    dense = keras.layers.Dense(vocabulary)
    dense.build((None, dim))
    x = np.ones((2, 3, dim), "float32")
    labels = np.array([[1, 2, 3], [1, 2, 3]])
    sampled = np.array([7, 9, 7], "int32")

    def loss_fn(kernel):
        logits = sampled_softmax_logits(x, labels, kernel, dense.bias, sampled)
        return -ops.mean(ops.log_softmax(logits, axis=-1)[..., 0])

    grad = gradient(loss_fn, to_numpy(dense.kernel))
    touched = np.flatnonzero(np.abs(grad).sum(0) > 0)
    assert touched.tolist() == [1, 2, 3, 7, 9]
