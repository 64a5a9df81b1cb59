"""BertMultipleChoice: N packed pairs per example, logits over the choices."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_multiple_choice import BertMultipleChoice
from kzoo.models.bert.bert_multiple_choice_preprocessor import (
    BertMultipleChoicePreprocessor,
)
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.testing import assert_all_equal, assert_allclose, run_saving_test, to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "she", "he", "sat",
              "ran", "down", "away", "the", "dog", "cat", "barked", "slept"]
CLS, SEP, PAD = 2, 3, 0
CONTEXTS = ["She", "The dog", "The cat"]
ENDINGS = [["sat down", "barked", "ran away"],
           ["barked", "sat down", "slept"],
           ["slept", "ran away", "barked"]]
LABELS = np.array([1, 0, 2])
LENGTH = 8


def preprocessor(**kwargs):
    return BertMultipleChoicePreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                          sequence_length=LENGTH, **kwargs)


def tiny_model(dropout=0.1, **kwargs):
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1,
                            num_heads=2, hidden_dim=8, intermediate_dim=16,
                            max_sequence_length=LENGTH, dropout=dropout)
    return BertMultipleChoice(backbone, preprocessor=preprocessor(**kwargs),
                              dropout=dropout)


def spread_weights(model):
    """Larger random weights than BERT's N(0, 0.02): the pairs' scores then
    differ by ~1e-2 (with the initial weights, by ~1e-6)."""
    rng = np.random.default_rng(0)
    model.set_weights([w + rng.normal(0, 0.5, w.shape).astype(w.dtype)
                       for w in model.get_weights()])


def test_packing_of_each_pair():
    x = to_numpy(preprocessor()((CONTEXTS, ENDINGS)))
    assert x["token_ids"].shape == (3, 3, LENGTH)
    assert x["token_ids"][1].tolist() == [
        [CLS, 11, 12, SEP, 14, SEP, PAD, PAD],
        [CLS, 11, 12, SEP, 7, 9, SEP, PAD],
        [CLS, 11, 12, SEP, 15, SEP, PAD, PAD]]
    assert x["segment_ids"][1, 1].tolist() == [0, 0, 0, 0, 1, 1, 1, 0]
    assert x["padding_mask"][1, 0].tolist() == [1] * 6 + [0] * 2
    # One string batch per ending gives the same tensors (the serving form).
    columns = tuple([row[i] for row in ENDINGS] for i in range(3))
    assert_all_equal(preprocessor()((CONTEXTS,) + columns), x)
    # Long pairs are cut (round robin), empty strings keep their separators.
    x = to_numpy(preprocessor()((["the dog the dog the dog"], [["", "sat " * 9]])))
    assert x["token_ids"][0].tolist() == [
        [CLS, 11, 12, 11, 12, 11, SEP, SEP],
        [CLS, 11, 12, 11, SEP, 7, 7, SEP]]


def test_tf_data_matches_eager_and_config():
    pre = preprocessor()
    ds = tf.data.Dataset.from_tensor_slices(((CONTEXTS, ENDINGS), LABELS))
    x, y = next(iter(ds.batch(3).map(pre)))
    eager = pre((CONTEXTS, ENDINGS), LABELS)
    assert_all_equal(x, eager[0])
    assert_all_equal(y, LABELS)
    assert tuple(x["token_ids"].shape) == (3, 3, LENGTH)
    config = pre.get_config()
    assert config["num_choices"] is None and config["truncate"] == "round_robin"
    config["tokenizer"] = pre.tokenizer
    restored = BertMultipleChoicePreprocessor.from_config(config)
    assert_all_equal(restored((CONTEXTS, ENDINGS)), eager[0])
    serialized = keras.saving.serialize_keras_object(pre)
    assert serialized["registered_name"] == "kzoo>BertMultipleChoicePreprocessor"


def test_bad_inputs():
    with pytest.raises(ValueError, match="`x` must be a tuple `\\(contexts, endings\\)`"):
        preprocessor()(CONTEXTS)
    with pytest.raises(ValueError, match="same number of endings"):
        preprocessor()((["She", "He"], [["sat", "ran"], ["sat"]]))
    with pytest.raises(ValueError, match="3 endings per example.*`num_choices=2`"):
        preprocessor(num_choices=2)((CONTEXTS, ENDINGS))
    with pytest.raises(ValueError, match="`truncate` must be"):
        preprocessor(truncate="longest")


def test_logits_shape_and_option_permutation():
    model = tiny_model()
    spread_weights(model)
    x = model.preprocessor((CONTEXTS, ENDINGS))
    logits = to_numpy(model.predict_on_batch(x))
    assert logits.shape == (3, 3) and np.isfinite(logits).all()
    assert logits.std(axis=1).min() > 1e-3  # well above the tolerance below
    # Permuting the options permutes the logits.
    order = [2, 0, 1]
    permuted = model.preprocessor(
        (CONTEXTS, [[row[i] for i in order] for row in ENDINGS]))
    assert_allclose(model.predict_on_batch(permuted), logits[:, order], atol=1e-5)
    # Each pair is scored on its own: two options give the first two scores.
    two = model.predict_on_batch(
        model.preprocessor((CONTEXTS, [row[:2] for row in ENDINGS])))
    assert_allclose(two, logits[:, :2], atol=1e-5)


def test_fit_lowers_loss():
    model = tiny_model(dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(3e-2))
    # The right ending is the one that "barked".
    x, y = model.preprocessor((CONTEXTS, ENDINGS), np.array([1, 0, 2]))
    history = model.fit(x, y, batch_size=3, epochs=12, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < 0.7 * losses[0]
    assert "accuracy" in history.history


def test_keras_file_preset_and_serving(tmp_path):
    model = tiny_model(num_choices=3)
    assert model.get_config()["dropout"] == 0.1
    x = model.preprocessor((CONTEXTS, ENDINGS))
    run_saving_test(model, x, tmp_path)
    model.backbone.save_to_preset(tmp_path / "base")
    model.preprocessor.save_to_preset(tmp_path / "base")
    fresh = BertMultipleChoice.from_preset(str(tmp_path / "base"), dropout=0.2)
    assert fresh.dropout == 0.2 and fresh.preprocessor.num_choices == 3
    model.save_to_preset(tmp_path / "task")
    restored = BertMultipleChoice.from_preset(str(tmp_path / "task"))
    assert_allclose(restored.predict_on_batch(x), model.predict_on_batch(x), atol=1e-6)
    assert model.serving_input_names() == ("context", "ending_0", "ending_1",
                                           "ending_2")
    outputs = model.serving_outputs(model(x))
    assert_allclose(to_numpy(outputs["probabilities"]).sum(-1), np.ones(3), atol=1e-5)
    with pytest.raises(ValueError, match="`num_choices=` set"):
        tiny_model().serving_input_names()
