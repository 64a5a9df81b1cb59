"""keras-hub presets in and out: BERT (backbone, text classifier) and GPT-2
(backbone, causal LM) against keras-hub itself, a test-only reference."""

import os
import shutil
import subprocess
import sys

import h5py
import keras
import numpy as np
import pytest

import kzoo
from kzoo.models.bert.bert_keras_hub import KerasHubBertSource
from kzoo.models.family import family_of_preset
from kzoo.models.gpt.gpt_keras_hub import KerasHubGPT2Source
from kzoo.presets.errors import PresetError
from kzoo.presets.preset_loader import get_source

keras_hub = pytest.importorskip("keras_hub")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "a",
         "cat", "sat", "on", "mat", "good", "bad", "film", "##s", "##ed", "!", ",",
         "is", "was", "very", "not", "and", "it", "he", "she", "runs", "walk",
         "##ing", "red", "blue", "green", "big", "small", "old", "new", "day", "night",
         "."]
BERT_VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
TEXTS = ["The quick brown fox jumps over the lazy dog!",
         "a good film", "She walks, he runs. Cats sat on mats"]
SIZES = dict(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
             max_sequence_length=24)


def _randomize(model, seed):
    """Every weight random (not keras' zero biases and unit gammas), so a
    swapped or missed tensor shows."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(rng.normal(0.0, 0.2, tuple(variable.shape)).astype("float32"))


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


@pytest.fixture(scope="module")
def hub_bert(tmp_path_factory):
    """A keras-hub BertTextClassifier saved by keras-hub's save_to_preset."""
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=BERT_VOCABULARY, lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        tokenizer, sequence_length=12)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(BERT_VOCABULARY), **SIZES)
    classifier = keras_hub.models.BertTextClassifier(
        backbone, num_classes=3, preprocessor=preprocessor)
    _randomize(classifier, 0)
    path = tmp_path_factory.mktemp("hub") / "bert_classifier"
    classifier.save_to_preset(str(path))
    return classifier, path


def _gpt_vocabulary():
    return kzoo.tokenizers.compute_byte_pair_merges(
        [t.lower() for t in TEXTS] * 3, vocabulary_size=290)


@pytest.fixture(scope="module")
def hub_gpt(tmp_path_factory):
    """A keras-hub GPT2CausalLM saved by keras-hub's save_to_preset."""
    vocabulary, merges = _gpt_vocabulary()
    tokenizer = keras_hub.models.GPT2Tokenizer(vocabulary=vocabulary, merges=merges)
    preprocessor = keras_hub.models.GPT2CausalLMPreprocessor(tokenizer, sequence_length=16)
    backbone = keras_hub.models.GPT2Backbone(vocabulary_size=len(vocabulary), **SIZES)
    lm = keras_hub.models.GPT2CausalLM(backbone, preprocessor=preprocessor)
    _randomize(lm, 1)
    path = tmp_path_factory.mktemp("hub") / "gpt2_causal_lm"
    lm.save_to_preset(str(path))
    return lm, path


BERT_INPUTS = {
    "token_ids": np.array([[2, 5, 6, 7, 8, 3, 0, 0], [2, 9, 10, 11, 12, 13, 14, 3]]),
    "segment_ids": np.array([[0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1]]),
    "padding_mask": np.array([[1, 1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]),
}


def _assert_bert_backbones_equal(ours, theirs):
    a, b = ours(BERT_INPUTS), theirs(BERT_INPUTS)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(_numpy(a[key]), _numpy(b[key]), atol=1e-4)


def test_keras_hub_folders_go_to_their_converters(hub_bert, hub_gpt):
    assert type(get_source(str(hub_bert[1]))) is KerasHubBertSource
    assert type(get_source(str(hub_gpt[1]))) is KerasHubGPT2Source
    assert family_of_preset(str(hub_gpt[1])).name == "gpt"


def test_bert_backbone_from_keras_hub_preset(hub_bert):
    classifier, path = hub_bert
    backbone = kzoo.models.BertBackbone.from_preset(str(path))
    assert backbone.activation == "gelu_approximate"
    _assert_bert_backbones_equal(backbone, classifier.backbone)


def test_bert_classifier_from_keras_hub_preset(hub_bert):
    theirs, path = hub_bert
    ours = kzoo.models.BertClassifier.from_preset(str(path))
    assert ours.num_classes == 3
    assert ours.preprocessor.sequence_length == 12
    our_inputs = ours.preprocessor(TEXTS)
    their_inputs = theirs.preprocessor(TEXTS)
    for key in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(_numpy(our_inputs[key]).astype("int32"),
                                      _numpy(their_inputs[key]).astype("int32"))
    np.testing.assert_allclose(ours.predict(TEXTS, verbose=0),
                               theirs.predict(TEXTS, verbose=0), atol=1e-4)
    with pytest.raises(PresetError, match="keras-hub BertTextClassifier"):
        kzoo.models.BertClassifier.from_preset(str(path), num_classes=5)


def test_gpt_from_keras_hub_preset(hub_gpt):
    theirs, path = hub_gpt
    backbone = kzoo.models.GPTBackbone.from_preset(str(path))
    ours = kzoo.models.GPTCausalLM.from_preset(str(path))
    assert ours.preprocessor.sequence_length == 16
    our_x = ours.preprocessor(TEXTS)[0]
    their_x = theirs.preprocessor(TEXTS)[0]
    for key in ("token_ids", "padding_mask"):
        np.testing.assert_array_equal(_numpy(our_x[key]).astype("int32"),
                                      _numpy(their_x[key]).astype("int32"))
    real = _numpy(their_x["padding_mask"]).astype(bool)
    np.testing.assert_allclose(
        _numpy(backbone(our_x)["sequence_output"])[real],
        _numpy(theirs.backbone(their_x))[real], atol=1e-4)
    np.testing.assert_allclose(_numpy(ours(our_x))[real], _numpy(theirs(their_x))[real],
                               atol=1e-4)


def test_a_head_kzoo_does_not_read_is_new_and_said(hub_bert, tmp_path):
    theirs, path = hub_bert
    shutil.copytree(path, tmp_path / "mlm")
    task = tmp_path / "mlm" / "task.json"
    task.write_text(task.read_text().replace("keras_hub>BertTextClassifier",
                                             "keras_hub>BertMaskedLM"))
    with pytest.warns(UserWarning, match="keras-hub BertMaskedLM, whose head kzoo "
                                         "does not read"):
        model = kzoo.models.BertMaskedLM.from_preset(str(tmp_path / "mlm"))
    assert model.preprocessor.sequence_length == 12
    _assert_bert_backbones_equal(model.backbone, theirs.backbone)


def _kzoo_bert_classifier():
    keras.utils.set_random_seed(2)
    tokenizer = kzoo.models.BertTokenizer(vocabulary=BERT_VOCABULARY)
    backbone = kzoo.models.BertBackbone(
        vocabulary_size=len(BERT_VOCABULARY), activation="gelu_approximate", **SIZES)
    model = kzoo.models.BertClassifier(
        backbone, num_classes=4, preprocessor=kzoo.models.BertClassifierPreprocessor(
            tokenizer, sequence_length=10))
    _randomize(model, 3)
    return model


def test_bert_to_keras_hub(tmp_path):
    ours = _kzoo_bert_classifier()
    kzoo.export.keras_hub(ours, tmp_path / "classifier")
    theirs = keras_hub.models.BertTextClassifier.from_preset(str(tmp_path / "classifier"))
    assert theirs.num_classes == 4
    np.testing.assert_allclose(theirs.predict(TEXTS, verbose=0),
                               ours.predict(TEXTS, verbose=0), atol=1e-4)
    kzoo.export.keras_hub(ours.backbone, tmp_path / "backbone")
    _assert_bert_backbones_equal(
        ours.backbone, keras_hub.models.BertBackbone.from_preset(str(tmp_path / "backbone")))
    # The exported folder reads back into kzoo too.
    again = kzoo.models.BertClassifier.from_preset(str(tmp_path / "classifier"))
    np.testing.assert_allclose(again.predict(TEXTS, verbose=0),
                               ours.predict(TEXTS, verbose=0), atol=1e-5)


def test_exact_gelu_bert_is_refused_unless_asked(tmp_path):
    backbone = kzoo.models.BertBackbone(vocabulary_size=len(BERT_VOCABULARY), **SIZES)
    with pytest.raises(ValueError, match="approximate_gelu=True"):
        kzoo.export.keras_hub(backbone, tmp_path / "exact")
    assert not (tmp_path / "exact").exists()
    kzoo.export.keras_hub(backbone, tmp_path / "exact", approximate_gelu=True)
    assert keras_hub.models.BertBackbone.from_preset(str(tmp_path / "exact"))


def test_gpt_to_keras_hub(tmp_path):
    keras.utils.set_random_seed(4)
    vocabulary, merges = _gpt_vocabulary()
    backbone = kzoo.models.GPTBackbone(vocabulary_size=len(vocabulary), **SIZES)
    ours = kzoo.models.GPTCausalLM(backbone, kzoo.models.GPTCausalLMPreprocessor(
        kzoo.models.GPTTokenizer(vocabulary, merges), sequence_length=12))
    _randomize(ours, 5)
    kzoo.export.keras_hub(ours, tmp_path / "lm")
    theirs = keras_hub.models.GPT2CausalLM.from_preset(str(tmp_path / "lm"))
    x = ours.preprocessor(TEXTS)[0]
    real = _numpy(x["padding_mask"]).astype(bool)
    np.testing.assert_array_equal(_numpy(theirs.preprocessor(TEXTS)[0]["token_ids"]),
                                  _numpy(x["token_ids"]))
    np.testing.assert_allclose(_numpy(theirs(x))[real], _numpy(ours(x))[real], atol=1e-4)
    their_backbone = keras_hub.models.GPT2Backbone.from_preset(str(tmp_path / "lm"))
    np.testing.assert_allclose(_numpy(their_backbone(x))[real],
                               _numpy(backbone(x)["sequence_output"])[real], atol=1e-4)


def _damage(src, dst, dataset, value):
    shutil.copytree(src, dst)
    with h5py.File(dst / "model.weights.h5", "a") as f:
        del f[dataset]
        if value is not None:
            f[dataset] = value


@pytest.mark.parametrize("value, message", [
    (np.zeros((3, 16), "float32"),
     r"layers/embedding/vars/0 has shape \(3, 16\) in the file but the BertBackbone "
     r"expects \(2, 16\)"),
    (None, "layers/embedding/vars/0 is missing"),
])
def test_mismatched_weights_load_nothing(hub_bert, tmp_path, value, message):
    _, path = hub_bert
    _damage(path, tmp_path / "bad", "layers/embedding/vars/0", value)
    source = get_source(str(tmp_path / "bad"))
    backbone = kzoo.models.BertBackbone.from_preset(str(path))
    before = [_numpy(v) for v in backbone.weights]
    with pytest.raises(PresetError, match=message + ".*Nothing was loaded"):
        source.load_backbone_weights(backbone)
    for variable, value in zip(backbone.weights, before):
        np.testing.assert_array_equal(_numpy(variable), value)
    with pytest.raises(PresetError, match="layers/embedding/vars/0"):
        kzoo.models.BertClassifier.from_preset(str(tmp_path / "bad"))


def test_damaged_weights_file_is_a_preset_error(hub_gpt, tmp_path):
    shutil.copytree(hub_gpt[1], tmp_path / "bad")
    (tmp_path / "bad" / "model.weights.h5").write_bytes(b"not an hdf5 file")
    with pytest.raises(PresetError, match="as a Keras weights file"):
        kzoo.models.GPTBackbone.from_preset(str(tmp_path / "bad"))


def test_cli_exports_keras_hub(tmp_path):
    from kzoo import cli

    ours = _kzoo_bert_classifier()
    ours.save_to_preset(tmp_path / "run")
    assert cli.main(["export", "--model", str(tmp_path / "run"), "--output",
                     str(tmp_path / "hub"), "--format", "keras-hub"]) == 0
    theirs = keras_hub.models.BertTextClassifier.from_preset(str(tmp_path / "hub"))
    np.testing.assert_allclose(theirs.predict(TEXTS, verbose=0),
                               ours.predict(TEXTS, verbose=0), atol=1e-4)


def test_round_trip_without_keras_hub(tmp_path):
    """Writing and reading keras-hub folders never imports keras-hub."""
    script = f"""
import sys
sys.modules["keras_hub"] = None
sys.modules["keras_nlp"] = None
import keras
import numpy as np
import kzoo
backbone = kzoo.models.BertBackbone(vocabulary_size=9, num_layers=1, num_heads=2,
    hidden_dim=4, intermediate_dim=8, activation="gelu_approximate")
kzoo.export.keras_hub(backbone, {str(tmp_path / "b")!r})
again = kzoo.models.BertBackbone.from_preset({str(tmp_path / "b")!r})
x = {{"token_ids": np.array([[2, 5, 3]]), "segment_ids": np.zeros((1, 3), "int32"),
     "padding_mask": np.ones((1, 3), "int32")}}
np.testing.assert_allclose(keras.ops.convert_to_numpy(again(x)["sequence_output"]),
                           keras.ops.convert_to_numpy(backbone(x)["sequence_output"]))
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
