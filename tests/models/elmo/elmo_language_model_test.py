"""ElmoLanguageModel: targets, no peeking, loss and perplexity by hand, fit, presets."""

import numpy as np
import pytest
import tensorflow as tf

from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_language_model import ElmoLanguageModel
from kzoo.models.elmo.elmo_language_model_preprocessor import ElmoLanguageModelPreprocessor
from kzoo.testing import assert_all_equal, assert_allclose, to_numpy
from kzoo.tokenizers import WordTokenizer

VOCAB = ["<UNK>", "<S>", "</S>", "the", "river", "bank", "money", "a"]
TINY = dict(num_layers=2, hidden_dim=8, projection_dim=4, filters=((1, 4), (2, 4)),
            character_dim=3, max_word_length=10, dropout=0.0)
SENTENCES = ["the river bank", "a bank", "the money bank river"]


def make(sequence_length=None, num_sampled=None):
    tokenizer = WordTokenizer(vocabulary=VOCAB, oov_token="<UNK>")
    pre = ElmoLanguageModelPreprocessor(tokenizer, sequence_length=sequence_length,
                                        max_word_length=10)
    return ElmoLanguageModel(ElmoBackbone(**TINY), preprocessor=pre,
                             num_sampled=num_sampled, seed=0)


def test_targets_and_weights_with_truncation():
    pre = make(sequence_length=4).preprocessor
    x, y, w = pre(SENTENCES)
    # <S> the river </S> | <S> a bank </S> | <S> the money </S> (cut)
    assert_all_equal(y["forward"], [[3, 4, 2, 0], [7, 5, 2, 0], [3, 6, 2, 0]])
    assert_all_equal(y["backward"], [[0, 1, 3, 4], [0, 1, 7, 5], [0, 1, 3, 6]])
    assert_all_equal(w["forward"], [[1, 1, 1, 0]] * 3)
    assert_all_equal(w["backward"], [[0, 1, 1, 1]] * 3)
    assert tuple(x["character_ids"].shape) == (3, 4, 10)
    ds = tf.data.Dataset.from_tensor_slices(SENTENCES).batch(3).map(pre)
    assert_all_equal(next(iter(ds))[1], y)
    with pytest.raises(ValueError, match="makes its targets from the text"):
        pre(SENTENCES, [1, 2, 3])
    with pytest.raises(ValueError, match="no `sequence_length`"):
        ElmoLanguageModelPreprocessor(WordTokenizer(vocabulary=VOCAB, oov_token="<UNK>",
                                                    sequence_length=4))


def test_each_direction_predicts_without_seeing_its_target():
    model = make()
    x, _, _ = model.preprocessor(["the river bank money"])
    changed, _, _ = model.preprocessor(["the river bank a"])
    a, b = to_numpy(model.predict_on_batch(x)), to_numpy(model.predict_on_batch(changed))
    # Token 4 (of <S> the river bank X </S>) changed: forward predictions up
    # to position 3 (whose target is X) and backward ones from 5 are unchanged.
    np.testing.assert_array_equal(a["forward"][0, :4], b["forward"][0, :4])
    np.testing.assert_array_equal(a["backward"][0, 5:], b["backward"][0, 5:])
    assert not np.allclose(a["forward"][0, 4], b["forward"][0, 4])


@pytest.mark.parametrize("num_sampled", [None, 5])
def test_loss_and_perplexity_match_numpy(num_sampled):
    # evaluate() is the full softmax, also for a model trained sampled.
    model = make(num_sampled=num_sampled)
    x, y, w = model.preprocessor(SENTENCES)
    logits = to_numpy(model.predict_on_batch(x))
    results = model.evaluate(SENTENCES, verbose=0, return_dict=True, batch_size=3)
    for direction in ("forward", "backward"):
        z = logits[direction].astype("float64")
        log_p = z - z.max(-1, keepdims=True)
        log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
        target, weight = to_numpy(y[direction]), to_numpy(w[direction])
        nll = -np.take_along_axis(log_p, target[..., None], -1)[..., 0]
        mean = (nll * weight).sum() / weight.sum()
        assert_allclose(results[f"{direction}_loss"], mean, atol=1e-5, rtol=1e-5)
        assert_allclose(results[f"{direction}_perplexity"], np.exp(mean), atol=1e-4, rtol=1e-4)


CORPUS = ["the river bank", "the money bank", "a river bank", "a money bank"] * 4


def train_and_round_trip(model, data, tmp_path, epochs, **fit_kwargs):
    """Adam(0.03) on CORPUS-like data; the preset round trip checked.

    Returns the full-softmax perplexities before and after (per direction)
    and the fit history.
    """
    before = model.evaluate(CORPUS, verbose=0, return_dict=True)
    model.compile(optimizer="adam")  # 1e-3; the rest keeps its defaults
    model.optimizer.learning_rate.assign(0.03)
    history = model.fit(data, epochs=epochs, verbose=0, **fit_kwargs).history
    after = model.evaluate(CORPUS, verbose=0, return_dict=True)
    model.save_to_preset(str(tmp_path / "lm"))
    restored = ElmoLanguageModel.from_preset(str(tmp_path / "lm"))
    assert restored.num_sampled == model.num_sampled
    x, _, _ = model.preprocessor(SENTENCES)
    assert_allclose(restored.predict_on_batch(x), model.predict_on_batch(x), atol=1e-5)
    ratios = {d: after[f"{d}_perplexity"] / before[f"{d}_perplexity"]
              for d in ("forward", "backward")}
    return ratios, history


def test_fit_on_a_tf_data_pipeline_lowers_perplexity_and_presets_round_trip(tmp_path):
    ds = tf.data.Dataset.from_tensor_slices(CORPUS).shuffle(16, seed=0).batch(8)
    ratios, _ = train_and_round_trip(make(), ds, tmp_path, epochs=8)
    assert max(ratios.values()) < 0.6, ratios


def test_sampled_softmax_training_lowers_the_full_softmax_perplexity(tmp_path):
    model = make(num_sampled=5)
    assert type(model.optimizer).__name__ == "Adagrad"  # bilm-tf's, when sampled
    ratios, history = train_and_round_trip(model, CORPUS, tmp_path, epochs=12, batch_size=8)
    # Training logs the sampled loss and its exponential (equal batches).
    assert_allclose(history["forward_perplexity"], np.exp(history["forward_loss"]),
                    rtol=1e-4, atol=1e-4)
    assert history["forward_loss"][-1] < 0.7 * history["forward_loss"][0]
    # Five log-uniform samples of eight words seldom draw the last ids, so
    # the full softmax gains less than the sampled one (its loss falls less
    # here than with the full softmax in the test above).
    assert max(ratios.values()) < 0.8, ratios
    with pytest.raises(ValueError, match="`num_sampled` must be None"):
        make(num_sampled=8)


def test_sampled_softmax_refuses_a_quantized_softmax():
    # int8 softmax_dense.kernel is the raw int8 values: training on it
    # would be silently wrong.
    model = make(num_sampled=5)
    model.quantize("int8")
    assert model.softmax_dense.quantization_mode == "int8"
    with pytest.raises(ValueError, match="sampled softmax trains the float softmax"):
        model.fit(CORPUS, batch_size=8, epochs=1, verbose=0)
