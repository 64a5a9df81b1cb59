"""`kzoo.metrics.Perplexity`: exp of the weighted mean token cross-entropy,
against numpy by hand and against keras-hub's metric (TensorFlow backend)."""

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.metrics import Perplexity
from kzoo.testing.test_case import assert_allclose


def _numpy_perplexity(batches, from_logits, mask_token_id=None):
    """exp(sum w * -log p[target] / sum w) over all the batches, in float64."""
    total = count = 0.0
    for target, pred, weight in batches:
        pred = pred.astype(np.float64)
        if from_logits:
            log_p = pred - pred.max(-1, keepdims=True)
            log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
        else:
            p = pred / pred.sum(-1, keepdims=True)
            log_p = np.log(np.clip(p, 1e-7, 1 - 1e-7))
        nll = -np.take_along_axis(log_p, target[..., None], -1)[..., 0]
        w = np.ones_like(nll) if weight is None else np.broadcast_to(
            weight.reshape(weight.shape + (1,) * (nll.ndim - weight.ndim)), nll.shape)
        if mask_token_id is not None:
            w = w * (target != mask_token_id)
        total += (nll * w).sum()
        count += w.sum()
    return 0.0 if count == 0 else np.exp(total / count)


def _batch(rng, shape, vocabulary, weights):
    target = rng.integers(0, vocabulary, shape)
    logits = rng.normal(size=shape + (vocabulary,)) * 3
    weight = None
    if weights == "tokens":
        weight = (rng.random(shape) < 0.7).astype("float32")
    elif weights == "sequences":
        weight = rng.random(shape[:1]).astype("float32")
    return target, logits.astype("float32"), weight


BATCHES = st.tuples(
    st.integers(0, 2**31), st.integers(1, 3), st.sampled_from([1, 4]),
    st.sampled_from([2, 7]),
    st.sampled_from([None, "tokens", "sequences"]), st.sampled_from([None, 0, 1]),
    st.booleans())


@settings(max_examples=25)
@given(BATCHES)
def test_matches_numpy(case):
    seed, updates, length, vocabulary, weights, mask_token_id, from_logits = case
    rng = np.random.default_rng(seed)
    batches = [_batch(rng, (3, length), vocabulary, weights) for _ in range(updates)]
    if not from_logits:  # probabilities
        batches = [(t, keras.ops.convert_to_numpy(keras.ops.softmax(p)), w)
                   for t, p, w in batches]
    metric = Perplexity(from_logits=from_logits, mask_token_id=mask_token_id)
    for target, pred, weight in batches:
        metric.update_state(target, pred, sample_weight=weight)
    expected = _numpy_perplexity(batches, from_logits, mask_token_id)
    assert_allclose(metric.result(), expected, rtol=2e-5, atol=1e-6)
    metric.reset_state()
    assert float(metric.result()) == 0.0  # nothing counted yet


def test_known_value_config_and_serialization():
    metric = Perplexity(from_logits=True, mask_token_id=0, name="ppl")
    logits = np.log([[[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.1, 0.1, 0.8]]])
    metric.update_state(np.array([[1, 2, 0]]), logits)  # the 0 is masked
    assert_allclose(metric.result(), np.exp((np.log(4) + np.log(4)) / 2), rtol=1e-6)
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(metric))
    assert type(restored) is Perplexity
    assert (restored.from_logits, restored.mask_token_id, restored.name) == (
        True, 0, "ppl")
    with pytest.raises(ValueError, match="floating point"):
        Perplexity(dtype="int32")


@pytest.mark.backends("tensorflow")
@settings(max_examples=25)
@given(BATCHES)
def test_equals_keras_hub(case):
    """The values of keras-hub's `Perplexity` (token weights or none; its
    per-sequence weights count once per sequence, so they are left out)."""
    from keras_hub.metrics import Perplexity as KerasHubPerplexity

    seed, updates, length, vocabulary, weights, mask_token_id, from_logits = case
    weights = None if weights == "sequences" else weights
    rng = np.random.default_rng(seed)
    ours = Perplexity(from_logits=from_logits, mask_token_id=mask_token_id)
    theirs = KerasHubPerplexity(from_logits=from_logits, mask_token_id=mask_token_id)
    for _ in range(updates):
        target, pred, weight = _batch(rng, (3, length), vocabulary, weights)
        if not from_logits:
            pred = keras.ops.convert_to_numpy(keras.ops.softmax(pred))
        ours.update_state(target, pred, sample_weight=weight)
        theirs.update_state(target, pred, sample_weight=weight)
    assert_allclose(ours.result(), theirs.result(), rtol=1e-5, atol=1e-6)
