"""BertTokenClassifier: word/piece alignment, fit, word predictions, presets."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_token_classifier import BertTokenClassifier
from kzoo.models.bert.bert_token_classifier_preprocessor import (
    BertTokenClassifierPreprocessor,
)
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.token_classifier import word_predictions
from kzoo.testing import (assert_all_equal, assert_allclose,
                          run_saving_test, to_numpy)

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "play",
              "##s", "##ing", "in", "paris", "new", "york", "un", "##believ",
              "##able", "u", ".", "s", "she", "lives"]
PAD, UNK, CLS, SEP = 0, 1, 2, 3
SENTENCES = [["John", "plays", "in", "Paris"],
             ["She", "lives", "in", "New", "York"],
             ["unbelievable", "U.S.", "zzz"],
             []]
LABELS = [[1, 0, 0, 2], [0, 0, 0, 2, 2], [0, 2, 0], []]
LENGTH = 10


def preprocessor(sequence_length=LENGTH):
    return BertTokenClassifierPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                           sequence_length=sequence_length)


def tiny_model(num_classes=3):
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1,
                            num_heads=2, hidden_dim=8, intermediate_dim=16,
                            max_sequence_length=LENGTH)
    return BertTokenClassifier(backbone, num_classes, preprocessor=preprocessor())


def test_alignment_of_multi_piece_unknown_and_empty_words():
    x, y, w = to_numpy(preprocessor()(SENTENCES, LABELS))
    # un ##believ ##able | u . s . | [UNK]
    assert x["token_ids"][2].tolist() == [CLS, 13, 14, 15, 16, 17, 18, 17, UNK, SEP]
    assert y[2].tolist() == [0, 0, 0, 0, 2, 0, 0, 0, 0, 0]
    assert w[2].tolist() == [0, 1, 0, 0, 1, 0, 0, 0, 1, 0]
    # John play ##s in Paris
    assert x["token_ids"][0].tolist() == [CLS, 5, 6, 7, 9, 10, SEP, PAD, PAD, PAD]
    assert y[0].tolist() == [0, 1, 0, 0, 0, 2, 0, 0, 0, 0]
    assert w[0].tolist() == [0, 1, 1, 0, 1, 1, 0, 0, 0, 0]
    assert x["padding_mask"][0].tolist() == [1] * 7 + [0] * 3
    assert x["segment_ids"].sum() == 0
    # An empty sentence: the special tokens only, nothing to learn.
    assert x["token_ids"][3].tolist() == [CLS, SEP] + [PAD] * 8
    assert w[3].sum() == 0 and y[3].sum() == 0
    word_ids = to_numpy(preprocessor().word_ids(SENTENCES))
    assert word_ids[2].tolist() == [-1, 0, 0, 0, 1, 1, 1, 1, 2, -1]
    assert word_ids[3].tolist() == [-1] * 10


def test_truncation_drops_whole_words():
    # 4 positions: [CLS] + 2 pieces + [SEP]. "plays" (2 pieces) does not fit
    # after "John", so it and everything after it are dropped.
    x, y, w = to_numpy(preprocessor(4)([["John", "plays", "in"]], [[1, 2, 1]]))
    assert x["token_ids"].tolist() == [[CLS, 5, SEP, PAD]]
    assert y.tolist() == [[0, 1, 0, 0]] and w.tolist() == [[0, 1, 0, 0]]
    # A first word longer than the budget leaves an empty sentence.
    x, _, w = to_numpy(preprocessor(4)([["unbelievable", "in"]], [[1, 2]]))
    assert x["token_ids"].tolist() == [[CLS, SEP, PAD, PAD]] and w.sum() == 0


def test_matches_hugging_face_word_ids(tmp_path):
    transformers = pytest.importorskip("transformers")
    (tmp_path / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    hf = transformers.BertTokenizer.from_pretrained(str(tmp_path))
    pre = preprocessor(16)
    x = to_numpy(pre(SENTENCES))
    word_ids = to_numpy(pre.word_ids(SENTENCES))
    for row, words in enumerate(SENTENCES):
        ref = hf(words, is_split_into_words=True, padding="max_length",
                 max_length=16)
        assert x["token_ids"][row].tolist() == ref["input_ids"]
        assert word_ids[row].tolist() == [
            -1 if i is None else i for i in ref.word_ids()]


def test_word_weights_negative_labels_and_whitespace_strings():
    pre = preprocessor()
    _, y, w = to_numpy(pre([["John", "plays"]], [[1, -100]], [[2.0, 5.0]]))
    assert y[0, :4].tolist() == [0, 1, 0, 0] and w[0, :4].tolist() == [0, 2, 0, 0]
    _, _, w = to_numpy(pre([["John", "in"]], [[1, 2]], [0.5]))
    assert w[0, :4].tolist() == [0, 0.5, 0.5, 0]
    assert_all_equal(pre(["John plays  in Paris", ""]),
                     pre([["John", "plays", "in", "Paris"], []]))
    assert pre.split_words(["John plays", ""]) == [["John", "plays"], []]


def test_raw_words_through_tf_data_and_config():
    # The dataset `fit` / `predict` build from raw word lists (ragged, with
    # the preprocessor mapped in tf.data) gives what an eager call gives.
    # (run_preprocessing_layer_test cannot restore a preprocessor's tokenizer
    # vocabulary from its config, so its checks are spelled out.)
    model = tiny_model()
    pre = model.preprocessor
    ds = model._preprocess_dataset(SENTENCES, LABELS, batch_size=4)
    batch = next(iter(ds))
    eager = pre(SENTENCES, LABELS)
    for got, expected in zip(batch, eager):
        assert_all_equal(got, expected)
    config = pre.get_config()
    assert config["sequence_length"] == LENGTH
    config["tokenizer"] = pre.tokenizer
    restored = BertTokenClassifierPreprocessor.from_config(config)
    for got, expected in zip(restored(SENTENCES, LABELS), eager):
        assert_all_equal(got, expected)
    serialized = keras.saving.serialize_keras_object(pre)
    assert serialized["registered_name"] == "kzoo>BertTokenClassifierPreprocessor"


def test_bad_inputs():
    pre = preprocessor()
    with pytest.raises(ValueError, match="`y` must hold one value per word"):
        pre([["John", "plays"]], [[1]])
    with pytest.raises(TypeError, match="`x` must hold strings"):
        pre.call(tf.constant([[1, 2]]))
    with pytest.raises(ValueError, match="`sequence_length` must be an int >= 2"):
        preprocessor(1)
    with pytest.raises(ValueError, match="`num_classes` must be a positive int"):
        BertTokenClassifier(tiny_model().backbone, num_classes=0)


def test_word_predictions_from_given_logits():
    logits = np.zeros((2, 6, 3), "float32")
    logits[0, 1, 2] = logits[0, 2, 1] = logits[0, 3, 1] = 1  # words 0, 0, 1
    logits[1, 1, 2] = 1
    word_ids = np.array([[-1, 0, 0, 1, -1, -1], [-1, 0, -1, -1, -1, -1]])
    # Word 0 reads its first piece (label 2, not 1); sentence 1's second
    # word was truncated: -1.
    assert word_predictions(logits, word_ids, [2, 2]) == [[2, 1], [2, -1]]


def test_fit_lowers_loss_and_predicts_words():
    model = tiny_model()
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    # Packed tensors: each tf.data epoch re-instantiates the tokenizer's
    # graph, which is slow (raw words through tf.data are tested above).
    x, y, w = model.preprocessor(SENTENCES, LABELS)
    history = model.fit(x, y, sample_weight=w, batch_size=4, epochs=8, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < 0.7 * losses[0]
    assert "accuracy" in history.history
    long = ["John"] * 12  # 8 fit, 4 are truncated
    predictions = model.predict_words(SENTENCES + [long], batch_size=5)
    assert [len(p) for p in predictions] == [4, 5, 3, 0, 12]
    assert all(0 <= label < 3 for p in predictions[:3] for label in p)
    assert predictions[4][8:] == [-1] * 4 and min(predictions[4][:8]) >= 0
    # The predictions are the arg-max of the first piece's logits.
    logits = to_numpy(model.predict_on_batch(x))
    assert logits.shape == (4, LENGTH, 3)
    assert predictions[0] == logits[0, [1, 2, 4, 5]].argmax(-1).tolist()
    assert predictions[2] == logits[2, [1, 4, 8]].argmax(-1).tolist()


def test_config_keras_file_and_preset_round_trip(tmp_path):
    model = tiny_model()
    config = model.get_config()
    assert config["num_classes"] == 3 and config["dropout"] == 0.1
    x = model.preprocessor(SENTENCES)
    run_saving_test(model, x, tmp_path)
    # A fresh head on a saved backbone + tokenizer ...
    model.backbone.save_to_preset(tmp_path / "base")
    model.preprocessor.save_to_preset(tmp_path / "base")
    fresh = BertTokenClassifier.from_preset(str(tmp_path / "base"), num_classes=5,
                                            sequence_length=LENGTH)
    assert fresh.num_classes == 5 and fresh.preprocessor.sequence_length == LENGTH
    assert_allclose(fresh.backbone.get_weights()[0], model.backbone.get_weights()[0])
    # ... and the whole fine-tuned task.
    model.save_to_preset(tmp_path / "task")
    restored = BertTokenClassifier.from_preset(str(tmp_path / "task"))
    assert_allclose(restored.predict_on_batch(x), model.predict_on_batch(x),
                    atol=1e-6)


def test_serving_hooks():
    model = tiny_model()
    assert model.serving_input_names() == ("text",)
    x = model.preprocessor(["John plays in Paris"])
    outputs = model.serving_outputs(model(x))
    assert set(outputs) == {"logits", "probabilities", "predictions"}
    assert tuple(outputs["predictions"].shape) == (1, LENGTH)
    assert_allclose(to_numpy(outputs["probabilities"]).sum(-1), np.ones((1, LENGTH)),
                    atol=1e-5)


def test_ragged_label_lists_and_empty_batches_through_the_common_path():
    model = tiny_model()
    x, y, w = model.preprocessor(SENTENCES, LABELS)
    expected = model.evaluate(x, y, sample_weight=w, verbose=0, return_dict=True)
    # Python lists of words and of labels, of different lengths per sentence.
    got = model.evaluate(SENTENCES, LABELS, verbose=0, return_dict=True)
    assert_allclose(got["loss"], expected["loss"], atol=1e-6)
    model.fit(SENTENCES, LABELS, batch_size=2, epochs=1, verbose=0)
    assert model.predict([], verbose=0).shape == (0, LENGTH, 3)
    logs = model.evaluate([], [], verbose=0, return_dict=True)
    assert set(logs) == {"loss", "accuracy"}
    assert all(np.isnan(v) for v in logs.values())
