"""Backbone / Preprocessor / Task base classes through a tiny toy family."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from kzoo.presets.errors import PresetError
from kzoo.testing import assert_allclose, run_backbone_test, run_saving_test
from tests.toy_models import ToyBackbone, ToyClassifier, toy_classifier

TEXTS = ["good movie", "great film", "bad movie", "awful film",
         "good great film", "bad awful movie", "", "unknown words here"]
LABELS = np.array([1, 1, 0, 0, 1, 0, 0, 0])


def test_backbone_basics():
    inputs = {"token_ids": np.array([[2, 3, 0]], "int32"),
              "padding_mask": np.array([[True, True, False]])}
    run_backbone_test(
        ToyBackbone, {"vocabulary_size": 8, "hidden_dim": 4}, inputs,
        expected_output_shape={"sequence_output": (1, 3, 4), "pooled_output": (1, 4)},
    )


def test_fit_predict_on_raw_strings():
    model = toy_classifier()
    history = model.fit(TEXTS, LABELS, batch_size=4, epochs=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    logits = keras.ops.convert_to_numpy(model.predict(TEXTS, verbose=0))
    assert logits.shape == (len(TEXTS), 2)
    # Trained on the sentiment words, it separates the clear cases.
    assert (logits[:6].argmax(-1) == LABELS[:6]).mean() >= 5 / 6
    metrics = model.evaluate(TEXTS, LABELS, batch_size=4, verbose=0,
                             return_dict=True)
    assert set(metrics) >= {"loss", "accuracy"}


class _CountBatches(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = []

    def on_epoch_begin(self, epoch, logs=None):
        self.batches.append(0)

    def on_train_batch_end(self, batch, logs=None):
        self.batches[-1] += 1


def test_fit_on_a_tf_data_pipeline_of_raw_batches():
    model = toy_classifier()
    ds = tf.data.Dataset.from_tensor_slices((TEXTS, LABELS)).batch(3)
    model.predict(TEXTS[:1], verbose=0)  # built, to read its weights before fit
    before = [np.array(w) for w in model.get_weights()]
    counted = _CountBatches()
    history = model.fit(ds, epochs=6, verbose=0, validation_data=ds,
                        callbacks=[counted]).history
    # One step per batch of the pipeline (8 texts in batches of 3: 3 a pass).
    assert counted.batches == [int(ds.cardinality())] * 6 == [3] * 6
    for key in ("loss", "val_loss"):
        assert len(history[key]) == 6 and np.isfinite(history[key]).all()
        assert history[key][-1] < history[key][0]
    assert any(not np.array_equal(b, np.array(a))
               for b, a in zip(before, model.get_weights()))


def test_raw_text_fit_equals_fit_on_tokenized_arrays():
    # fit repeats raw in-memory data (one iterator per fit, not one per
    # epoch) and keeps the validation iterator across epochs: the epochs,
    # their partial last batches and each validation pass must still be
    # exactly those of the same data given as arrays.
    raw, tokenized = toy_classifier(seed=3), toy_classifier(seed=3)
    x = keras.tree.map_structure(np.asarray, tokenized.preprocessor(TEXTS[:7]))
    x_val = keras.tree.map_structure(np.asarray, tokenized.preprocessor(TEXTS[3:]))
    fit = dict(batch_size=3, epochs=3, shuffle=False, verbose=0)
    got = raw.fit(TEXTS[:7], LABELS[:7], validation_data=(TEXTS[3:], LABELS[3:]), **fit)
    want = tokenized.fit(x, LABELS[:7], validation_data=(x_val, LABELS[3:]), **fit)
    assert sorted(got.history) == sorted(want.history)
    for key, values in want.history.items():
        assert_allclose(got.history[key], values, atol=1e-6)
    assert_allclose(raw.predict(TEXTS), tokenized.predict(tokenized.preprocessor(TEXTS)),
                    atol=1e-6)


def test_raw_text_iterators_do_not_grow_with_epochs(monkeypatch):
    # A new tf.data iterator sets up the tokenizer's graph again (a pause
    # for WordPiece): fit makes its training and validation iterators once.
    created = []
    make_iterator = tf.data.Dataset.__iter__
    monkeypatch.setattr(tf.data.Dataset, "__iter__",
                        lambda self: created.append(1) or make_iterator(self))
    counts = []
    for epochs in (1, 4):
        created.clear()
        toy_classifier().fit(TEXTS, LABELS, batch_size=4, epochs=epochs, verbose=0,
                             validation_data=(TEXTS, LABELS))
        counts.append(len(created))
    assert counts[0] == counts[1] <= 3, counts


def test_preprocessing_is_traced_once_per_preprocessor_config():
    model = toy_classifier()
    model.fit(TEXTS, LABELS, batch_size=4, epochs=2, verbose=0,
              validation_data=(TEXTS, LABELS))
    model.evaluate(TEXTS, LABELS, batch_size=4, verbose=0)
    model.predict(TEXTS, batch_size=4, verbose=0)
    function = model._preprocess_function()
    # With and without labels: two input signatures, each traced once.
    assert function.experimental_get_tracing_count() == 2
    model.predict(TEXTS[:3], verbose=0)
    assert model._preprocess_function() is function
    assert function.experimental_get_tracing_count() == 2
    # A changed preprocessor config is a new function.
    model.preprocessor.sequence_length = 4
    assert model._preprocess_function() is not function
    assert model.predict(TEXTS, verbose=0).shape == (len(TEXTS), 2)


def test_empty_batches():
    model = toy_classifier()
    # predict and evaluate give an empty result of the usual structure ...
    empty = model.predict([], verbose=0)
    assert isinstance(empty, np.ndarray) and empty.shape == (0, 2)
    assert empty.dtype == model.predict(TEXTS[:1], verbose=0).dtype
    full = model.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)
    logs = model.evaluate([], [], verbose=0, return_dict=True)
    assert set(logs) == set(full) and all(np.isnan(v) for v in logs.values())
    values = model.evaluate([], [], verbose=0)
    assert len(values) == len(full) and np.isnan(values).all()
    # ... also without the preprocessor, on empty tensors.
    x = {k: v[:0] for k, v in model.preprocessor(TEXTS).items()}
    assert model.predict(x, verbose=0).shape == (0, 2)
    # Training on nothing is an error.
    for call in (lambda: model.fit([], [], verbose=0),
                 lambda: model.fit(([], []), [], verbose=0)):
        with pytest.raises(ValueError, match="empty batch"):
            call()


def test_items_that_are_not_text_are_a_type_error_naming_the_index():
    model = toy_classifier()
    for bad, message in [
            (["good", None], "Item 1 of the text batch is NoneType None"),
            ([None, "good"], "Item 0 of the text batch is NoneType None"),
            (np.array(["good", "bad", 3], dtype=object), "Item 2 .* is int 3"),
            ((["good"], [None]), "Item 0 of segment 1 of the text batch"),
            ([["good", "movie"], ["bad", 3.5]], "Item 1 .* holds float 3.5")]:
        for call in (lambda: model.predict(bad, verbose=0),
                     lambda: model.evaluate(bad, [0] * len(bad), verbose=0),
                     lambda: model.fit(bad, [0] * len(bad), verbose=0)):
            with pytest.raises(TypeError, match=message):
                call()


def test_task_keras_file_round_trip(tmp_path):
    model = toy_classifier()
    x = model.preprocessor(TEXTS)
    restored = run_saving_test(model, x, tmp_path)
    # The tokenizer's vocabulary travelled in the .keras file.
    assert restored.preprocessor.tokenizer.get_vocabulary() == \
        model.preprocessor.tokenizer.get_vocabulary()


def test_task_preset_round_trip(tmp_path):
    model = toy_classifier(num_classes=3)
    model.fit(TEXTS, LABELS, epochs=1, verbose=0)
    expected = keras.ops.convert_to_numpy(model.predict(TEXTS, verbose=0))
    model.save_to_preset(tmp_path / "toy")
    names = set(os.listdir(tmp_path / "toy"))
    assert {"config.json", "model.weights.h5", "tokenizer.json", "assets",
            "preprocessor.json", "task.json", "task.weights.h5",
            "metadata.json", "README.md"} <= names
    restored = ToyClassifier.from_preset(str(tmp_path / "toy"))
    assert_allclose(restored.predict(TEXTS, verbose=0), expected, atol=1e-6)
    # Asked for another head size, the saved head is refused by name ...
    with pytest.raises(PresetError, match="num_classes=3.*num_classes=2"):
        ToyClassifier.from_preset(str(tmp_path / "toy"), num_classes=2)
    # ... unless a fresh head is asked for, on the saved backbone.
    fresh = ToyClassifier.from_preset(str(tmp_path / "toy"), num_classes=2,
                                      load_task_head=False)
    assert_allclose(fresh.backbone.get_weights()[0],
                    model.backbone.get_weights()[0])
    # The preprocessor override reaches the preprocessor, not the task.
    longer = ToyClassifier.from_preset(str(tmp_path / "toy"), sequence_length=9)
    assert longer.preprocessor.sequence_length == 9


def test_backbone_preset_without_task(tmp_path):
    model = toy_classifier()
    model.backbone.save_to_preset(tmp_path / "bb")
    model.preprocessor.tokenizer.save_to_preset(tmp_path / "bb")
    # Saving the tokenizer second kept the backbone files (saves compose).
    backbone = ToyBackbone.from_preset(str(tmp_path / "bb"))
    for a, b in zip(backbone.get_weights(), model.backbone.get_weights()):
        np.testing.assert_array_equal(a, b)
    task = ToyClassifier.from_preset(str(tmp_path / "bb"), num_classes=4)
    assert keras.ops.shape(task.predict(TEXTS[:2], verbose=0)) == (2, 4)
    random_init = ToyBackbone.from_preset(str(tmp_path / "bb"), load_weights=False)
    assert not np.allclose(random_init.get_weights()[0],
                           model.backbone.get_weights()[0])
    overridden = ToyBackbone.from_preset(str(tmp_path / "bb"), hidden_dim=6,
                                         load_weights=False)
    assert overridden.hidden_dim == 6
