"""VocabularyMask: logits of ids past the tokenizer's vocabulary set to -1e9."""

import keras
import numpy as np
import pytest

from kzoo.layers.vocabulary_mask import VocabularyMask
from kzoo.testing import assert_allclose, to_numpy


def test_ids_past_the_vocabulary_get_no_probability():
    logits = np.random.default_rng(0).normal(size=(2, 3, 6)).astype("float32")
    logits[..., 4:] = 50.0  # the padded ids are the most likely before the mask
    masked = to_numpy(VocabularyMask(4)(logits))
    assert_allclose(masked[..., :4], logits[..., :4], atol=0)
    assert (masked[..., 4:] == -1e9).all()
    probabilities = to_numpy(keras.ops.softmax(masked, axis=-1))
    assert (probabilities[..., 4:] == 0.0).all()
    expected = np.exp(logits[..., :4]) / np.exp(logits[..., :4]).sum(-1, keepdims=True)
    assert_allclose(probabilities[..., :4], expected, atol=1e-6)


def test_dtype_is_kept_and_config_round_trips():
    layer = VocabularyMask(2, dtype="float32")
    bf16 = keras.ops.ones((1, 3), dtype="bfloat16")
    assert keras.backend.standardize_dtype(layer(bf16).dtype) == "bfloat16"
    restored = VocabularyMask.from_config(layer.get_config())
    assert restored.vocabulary_size == 2
    assert to_numpy(restored(np.ones((1, 3), "float32"))).tolist() == [[1.0, 1.0, -1e9]]


def test_errors():
    for bad in (0, 2.0, True, None):
        with pytest.raises(ValueError, match="`vocabulary_size` must be an int >= 1 or a tokenizer"):
            VocabularyMask(bad)


def test_size_read_from_a_tokenizer_at_call_time():
    class Tokenizer:
        size = None

        def vocabulary_size(self):
            return self.size

    tokenizer = Tokenizer()
    layer = VocabularyMask(tokenizer)
    tokenizer.size = 3  # e.g. loaded after the model was built
    assert layer.vocabulary_size == 3
    assert to_numpy(layer(np.zeros((1, 4), "float32"))).tolist() == [[0, 0, 0, -1e9]]
    assert layer.get_config()["vocabulary_size"] == 3
