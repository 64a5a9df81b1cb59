"""SparseLogitsCrossEntropy equals Keras' sparse cross-entropy on logits."""

import keras
import numpy as np
import pytest

from kzoo.losses import SparseLogitsCrossEntropy
from kzoo.testing.test_case import gradient, to_numpy


def _gradient(loss, y, logits, weights):
    return gradient(lambda z: loss(y, z, sample_weight=weights), logits)


@pytest.mark.parametrize("reduction", ["mean_with_sample_weight", "sum_over_batch_size", None])
def test_value_and_gradient_equal_kerass(reduction):
    rng = np.random.default_rng(0)
    logits = (rng.normal(size=(3, 5, 40)) * 4).astype("float32")  # large: exp overflows naively
    labels = rng.integers(0, 40, (3, 5))
    weights = (rng.random((3, 5)) < 0.7).astype("float32")
    ours = SparseLogitsCrossEntropy(reduction=reduction)
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                            reduction=reduction)
    np.testing.assert_allclose(to_numpy(ours(labels, logits, sample_weight=weights)),
                               to_numpy(keras_loss(labels, logits, sample_weight=weights)),
                               rtol=1e-5, atol=1e-6)
    if reduction is not None:
        np.testing.assert_allclose(to_numpy(_gradient(ours, labels, logits, weights)),
                                   to_numpy(_gradient(keras_loss, labels, logits, weights)),
                                   atol=1e-6)
    # Labels [..., 1], as Keras also takes them.
    np.testing.assert_allclose(to_numpy(ours(labels[..., None], logits)),
                               to_numpy(keras_loss(labels[..., None], logits)), rtol=1e-5)


def test_padding_labels_and_config():
    # A label past the vocabulary (padding, weight 0) stays finite.
    logits = np.zeros((1, 2, 4), "float32")
    value = SparseLogitsCrossEntropy()(np.array([[1, 9]]), logits,
                                       sample_weight=np.array([[1.0, 0.0]]))
    np.testing.assert_allclose(to_numpy(value), np.log(4) / 2, rtol=1e-6)
    loss = SparseLogitsCrossEntropy(reduction="mean_with_sample_weight")
    restored = keras.losses.deserialize(keras.losses.serialize(loss))
    assert type(restored) is SparseLogitsCrossEntropy
    assert restored.reduction == "mean_with_sample_weight"
