"""`kzoo.ops.sparse_logits_cross_entropy` and its `keras.ops` reference
against the formula in numpy."""

import numpy as np
import pytest

from kzoo.ops import sparse_logits_cross_entropy, sparse_logits_cross_entropy_reference
from kzoo.testing.test_case import gradient, to_numpy

pytestmark = pytest.mark.without_tensorflow


def _numpy_cross_entropy(labels, logits):
    """`-log softmax(logits)[label]`, in float64, shifted by the row max."""
    logits = logits.astype("float64")
    shifted = logits - logits.max(-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -np.take_along_axis(log_softmax, labels[..., None], -1)[..., 0]


def _numpy_gradient(labels, logits):
    """d sum(loss) / d logits = softmax(logits) - one_hot(labels)."""
    logits = logits.astype("float64")
    softmax = np.exp(logits - logits.max(-1, keepdims=True))
    softmax /= softmax.sum(-1, keepdims=True)
    return softmax - np.eye(logits.shape[-1])[labels]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    logits = (rng.normal(size=(3, 5, 40)) * 20).astype("float32")  # exp overflows naively
    labels = rng.integers(0, 40, (3, 5))
    return labels, logits


@pytest.mark.parametrize("fn", [sparse_logits_cross_entropy,
                                sparse_logits_cross_entropy_reference])
def test_value_and_gradient_equal_the_formula(fn, data):
    labels, logits = data
    np.testing.assert_allclose(to_numpy(fn(labels, logits)),
                               _numpy_cross_entropy(labels, logits), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_numpy(gradient(lambda z: fn(labels, z), logits)),
                               _numpy_gradient(labels, logits), atol=1e-5)


def test_rank_one_logits():
    logits = np.array([1.0, -2.0, 0.5], "float32")
    np.testing.assert_allclose(to_numpy(sparse_logits_cross_entropy(np.array(2), logits)),
                               _numpy_cross_entropy(np.array(2), logits), rtol=1e-6)
