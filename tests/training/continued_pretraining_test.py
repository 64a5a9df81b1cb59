"""What continued pretraining shares: the held-out split, the size options
refused beside a preset, and the masked-LM held-out loss."""

import argparse

import keras
import numpy as np
import pytest

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_masked_lm import BertMaskedLM
from kzoo.models.bert.bert_masked_lm_preprocessor import BertMaskedLMPreprocessor
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.testing import assert_allclose
from kzoo.training.continued_pretraining import (
    check_no_size_options,
    held_out_split,
    masked_lm_held_out,
)

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog",
              "sat", "ran", "on", "mat", "a", "big", "red"]
TEXTS = ["the cat sat on the mat", "a dog ran", "the big red dog sat",
         "a cat ran on a mat", "the dog sat", "a red cat"]


def test_held_out_split_keeps_the_last_documents_or_lines():
    documents = [[f"d{i}"] for i in range(10)]
    train, held = held_out_split(documents, 0.2)
    assert train == documents[:8] and held == documents[8:]
    assert held_out_split(documents[:2], 0.9) == ([["d0"]], [["d1"]])
    assert held_out_split([["a", "b", "c"]], 0.1) == ([["a", "b"]], [["c"]])
    with pytest.raises(ValueError, match="two lines or more"):
        held_out_split([["only one"]], 0.1)
    with pytest.raises(ValueError, match="between 0 and 1"):
        held_out_split(documents, 1.0)


def test_size_options_are_refused_beside_a_preset():
    options = argparse.Namespace(hidden_dim=64, num_layers=None, num_heads=2,
                                 vocabulary_size=None)
    with pytest.raises(ValueError, match="--hidden-dim, --num-heads cannot be used "
                                         "with --from p"):
        check_no_size_options(options, "p")
    options.hidden_dim = options.num_heads = None
    options.vocabulary_size = 100
    check_no_size_options(options, "p", allowed=("vocabulary_size",))


def test_masked_lm_held_out_is_the_keras_loss_on_fixed_masks():
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1,
                            num_heads=2, hidden_dim=8, intermediate_dim=16,
                            max_sequence_length=10)
    pre = BertMaskedLMPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                   sequence_length=10, seed=5)
    model = BertMaskedLM(backbone, preprocessor=pre)
    loss, count = masked_lm_held_out(model, TEXTS, batch_size=4, seed=7)
    again, _ = masked_lm_held_out(model, TEXTS, batch_size=2, seed=7)
    assert again == pytest.approx(loss, rel=1e-6)
    # The reference: the same masks drawn by a preprocessor seeded alike, and
    # the model's own compiled loss (mean over the masked tokens) in one batch.
    x, y, w = BertMaskedLMPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                       sequence_length=10, seed=7)(TEXTS)
    x, y, w = keras.tree.map_structure(keras.ops.convert_to_numpy, (x, y, w))
    expected = model.evaluate(x, y, sample_weight=w, batch_size=len(TEXTS),
                              verbose=0, return_dict=True)["loss"]
    assert count == int(np.sum(w))
    assert_allclose(loss, expected, rtol=1e-5)
    # The model's own masking stream starts again from its seed.
    fresh = BertMaskedLMPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                     sequence_length=10, seed=5)
    assert_allclose(model.preprocessor(TEXTS)[0]["mask_positions"],
                    fresh(TEXTS)[0]["mask_positions"], atol=0)
