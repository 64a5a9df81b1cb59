"""Label names and regression on the classifier heads (BERT as the family)."""

import os

import keras
import numpy as np
import pytest
from scipy import stats

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_classifier import BertClassifier
from kzoo.models.bert.bert_classifier_preprocessor import BertClassifierPreprocessor
from kzoo.models.bert.bert_tokenizer import BertTokenizer

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "bad",
              "film", "movie", "great", "awful", "plot", "the", "is"]
TEXTS = ["a good film", "a great movie", "a bad film", "an awful plot",
         "the film is good", "the plot is bad", "good", "bad"]


def classifier(num_classes, **kwargs):
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1,
                            num_heads=2, hidden_dim=8, intermediate_dim=16,
                            max_sequence_length=16)
    preprocessor = BertClassifierPreprocessor(BertTokenizer(VOCABULARY),
                                              sequence_length=8)
    return BertClassifier(backbone, num_classes, preprocessor=preprocessor, **kwargs)


def test_label_names_are_predicted_and_saved(tmp_path):
    model = classifier(3, label_names=["neg", "neutral", "pos"])
    logits = np.asarray(model.predict(TEXTS, verbose=0))
    expected = [("neg", "neutral", "pos")[i] for i in logits.argmax(-1)]
    assert model.predict_labels(TEXTS) == expected
    model.save_to_preset(str(tmp_path / "p"))
    loaded = BertClassifier.from_preset(str(tmp_path / "p"))
    assert loaded.label_names == ("neg", "neutral", "pos")
    assert loaded.predict_labels(TEXTS) == expected
    assert classifier(2).predict_labels(["a film"])[0] in (0, 1)  # ids without names


@pytest.mark.parametrize("names, message", [
    (["a"], "1 names for num_classes=2"),
    (["a", "a"], "repeats ['a']"),
    (["a", ""], "non-empty strings"),
    ("ab", "list of str"),
])
def test_bad_label_names(names, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("[", r"\[")):
        classifier(2, label_names=names)


def test_regression_trains_on_scores_and_reports_correlations():
    model = classifier(1)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    # Centred scores: a barely trained head predicts values close to one
    # another, which float32 correlation sums resolve only around zero.
    scores = np.array([4.5, 5.0, 1.0, 0.5, 4.0, 1.5, 3.5, 2.0], "float32") - 2.75
    history = model.fit(TEXTS, scores, batch_size=4, epochs=15, verbose=0).history
    assert history["loss"][-1] < history["loss"][0]
    assert {"pearson", "spearman"} <= set(history)
    predicted = np.asarray(model.predict(TEXTS, verbose=0))[:, 0]
    assert model.predict_labels(TEXTS) == pytest.approx(predicted.tolist(), rel=1e-5)
    result = model.evaluate(TEXTS, scores, batch_size=8, verbose=0, return_dict=True)
    assert result["pearson"] == pytest.approx(stats.pearsonr(predicted, scores)[0],
                                              abs=1e-4)
    assert result["spearman"] == pytest.approx(stats.spearmanr(predicted, scores)[0],
                                               abs=1e-4)


@pytest.mark.backends("tensorflow")
def test_exports_give_label_names_and_scores(tmp_path):
    import tensorflow as tf

    import kzoo

    named = classifier(2, label_names=["neg", "pos"])
    kzoo.export.saved_model(named, str(tmp_path / "named"))
    outputs = tf.saved_model.load(str(tmp_path / "named")).signatures[
        "serving_default"](text=tf.constant(TEXTS[:3]))
    assert [v.decode() for v in outputs["labels"].numpy()] == named.predict_labels(
        TEXTS[:3])
    regressor = classifier(1)
    kzoo.export.saved_model(regressor, str(tmp_path / "scores"))
    outputs = tf.saved_model.load(str(tmp_path / "scores")).signatures[
        "serving_default"](text=tf.constant(TEXTS[:3]))
    np.testing.assert_allclose(outputs["score"].numpy(),
                               regressor.predict_labels(TEXTS[:3]), rtol=1e-5)
    assert os.path.isdir(tmp_path / "scores" / "variables")
