"""GPT-1 fine-tuning: packing, extract state, similarity, auxiliary LM loss, multiple choice."""

import keras
import numpy as np
import pytest

import kzoo
from kzoo.testing import assert_allclose, to_numpy

CORPUS = ["the cat sat on the mat", "a dog sat on a log", "the cat is not a dog"]
VOCABULARY, MERGES = kzoo.tokenizers.compute_byte_pair_merges(CORPUS * 3,
                                                              vocabulary_size=280)


def _parts(seed=0):
    keras.utils.set_random_seed(seed)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=len(VOCABULARY), num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=32, dropout=0.0)
    tokenizer = kzoo.models.GPTTokenizer(VOCABULARY, MERGES)
    return kzoo.models.gpt.add_fine_tuning_tokens(backbone, tokenizer, seed=seed)


def test_add_fine_tuning_tokens_keeps_the_pretrained_model():
    keras.utils.set_random_seed(0)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=16, dropout=0.0)
    tokenizer = kzoo.models.GPTTokenizer(VOCABULARY, MERGES)
    new_backbone, new_tokenizer = kzoo.models.gpt.add_fine_tuning_tokens(backbone,
                                                                         tokenizer)
    size = len(VOCABULARY)
    assert [new_tokenizer.token_to_id(t) for t in
            ("<|start|>", "<|delim|>", "<|extract|>")] == [size, size + 1, size + 2]
    assert new_backbone.vocabulary_size == size + 3
    ids = {"token_ids": np.array([[0, 5, 9, 30]]), "padding_mask": np.ones((1, 4))}
    assert_allclose(new_backbone(ids)["sequence_output"],
                    backbone(ids)["sequence_output"], atol=1e-6)
    # The new tokens are whole in text, and the old ids are unchanged.
    text = "the cat<|extract|>"
    assert to_numpy(new_tokenizer(text)).tolist() == to_numpy(
        tokenizer("the cat")).tolist() + [size + 2]


def test_packing_single_pair_and_symmetric():
    _, tokenizer = _parts()
    s, d, e = (tokenizer.token_to_id(t) for t in ("<|start|>", "<|delim|>", "<|extract|>"))
    a, b = (to_numpy(tokenizer(t)).tolist() for t in ("the cat", "a dog"))
    pre = kzoo.models.GPTClassifierPreprocessor(tokenizer, sequence_length=12)
    x = pre(["the cat"])
    assert set(x) == {"token_ids", "padding_mask"}
    row = [s] + a + [e]
    assert to_numpy(x["token_ids"])[0, :len(row)].tolist() == row
    pair = kzoo.models.GPTClassifierPreprocessor(tokenizer, sequence_length=12,
                                                 num_segments=2, symmetric=True)
    x = pair((["the cat"], ["a dog"]))
    ids = to_numpy(x["token_ids"])
    assert ids.shape == (2, 12)
    assert ids[0, :len(a) + len(b) + 3].tolist() == [s] + a + [d] + b + [e]
    assert ids[1, :len(a) + len(b) + 3].tolist() == [s] + b + [d] + a + [e]
    with pytest.raises(ValueError, match="num_segments=2"):
        kzoo.models.GPTClassifierPreprocessor(tokenizer, symmetric=True)


def test_logits_come_from_the_extract_state():
    backbone, tokenizer = _parts()
    pre = kzoo.models.GPTClassifierPreprocessor(tokenizer, sequence_length=12,
                                                num_segments=2)
    model = kzoo.models.GPTClassifier(backbone, 3, preprocessor=pre, dropout=0.0)
    x = pre((["the cat sat", "a dog"], ["a dog", "the mat is a log"]))
    logits = to_numpy(model.predict_on_batch(x))
    states = to_numpy(backbone(x)["sequence_output"])
    last = to_numpy(x["padding_mask"]).sum(1) - 1
    dense = model.output_dense
    expected = states[[0, 1], last] @ to_numpy(dense.kernel) + to_numpy(dense.bias)
    assert_allclose(logits, expected, atol=1e-5)


def test_similarity_adds_both_orders_and_ignores_order():
    backbone, tokenizer = _parts()
    pre = kzoo.models.GPTClassifierPreprocessor(tokenizer, sequence_length=12,
                                                num_segments=2, symmetric=True)
    model = kzoo.models.GPTClassifier(backbone, 2, preprocessor=pre, dropout=0.0,
                                      symmetric=True)
    a, b = ["the cat sat", "a dog"], ["a dog", "the mat is a log"]
    forward = to_numpy(model.predict_on_batch(pre((a, b))))
    assert forward.shape == (2, 2)
    assert_allclose(model.predict_on_batch(pre((b, a))), forward, atol=1e-5)
    states = to_numpy(backbone(pre((a, b)))["sequence_output"])
    last = to_numpy(pre((a, b))["padding_mask"]).sum(1) - 1
    summed = states[[0, 1], last[:2]] + states[[2, 3], last[2:]]
    dense = model.output_dense
    assert_allclose(forward, summed @ to_numpy(dense.kernel) + to_numpy(dense.bias),
                    atol=1e-5)
    with pytest.raises(ValueError, match="symmetric"):
        kzoo.models.GPTClassifier(backbone, 2, preprocessor=pre)


def test_auxiliary_language_model_loss():
    backbone, tokenizer = _parts()
    pre = kzoo.models.GPTClassifierPreprocessor(tokenizer, sequence_length=12)
    model = kzoo.models.GPTClassifier(backbone, 2, preprocessor=pre, dropout=0.0,
                                      language_model_loss_weight=0.5)
    texts, labels = ["the cat sat", "a dog on a log"], np.array([0, 1])
    x = pre(texts)
    loss = model.evaluate(x, labels, verbose=0, return_dict=True)["loss"]
    logits = to_numpy(model.predict_on_batch(x))
    log_softmax = lambda z: z - np.log(np.exp(z).sum(-1, keepdims=True))  # noqa: E731
    classification = -log_softmax(logits)[[0, 1], labels].mean()
    lm_logits = to_numpy(kzoo.models.GPTCausalLM(backbone).predict_on_batch(x))
    ids, mask = to_numpy(x["token_ids"]), to_numpy(x["padding_mask"]).astype(float)
    token_loss = -np.take_along_axis(log_softmax(lm_logits[:, :-1]),
                                     ids[:, 1:, None], -1)[..., 0]
    lm = (token_loss * mask[:, 1:]).sum() / mask[:, 1:].sum()
    assert_allclose(loss, classification + 0.5 * lm, atol=1e-4)
    history = model.fit(texts * 4, np.tile(labels, 4), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def test_multiple_choice_scores_each_answer():
    backbone, tokenizer = _parts()
    pre = kzoo.models.GPTMultipleChoicePreprocessor(tokenizer, sequence_length=12)
    model = kzoo.models.GPTMultipleChoice(backbone, preprocessor=pre, dropout=0.0)
    contexts, endings = ["the cat sat on"], [["the mat", "a dog", "a log"]]
    x = pre((contexts, endings))
    assert set(x) == {"token_ids", "padding_mask"}
    scores = to_numpy(model.predict((contexts, endings), verbose=0))
    assert scores.shape == (1, 3)
    single = kzoo.models.GPTClassifierPreprocessor(tokenizer, sequence_length=12,
                                                   num_segments=2)
    for i, ending in enumerate(endings[0]):
        xi = single((contexts, [ending]))
        state = to_numpy(backbone(xi)["sequence_output"])[
            0, int(to_numpy(xi["padding_mask"]).sum()) - 1]
        dense = model.output_dense
        expected = state @ to_numpy(dense.kernel)[:, 0] + to_numpy(dense.bias)[0]
        assert_allclose(scores[0, i], expected, atol=1e-5)


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_multiple_choice_auxiliary_language_model_loss():
    backbone, tokenizer = _parts()
    pre = kzoo.models.GPTMultipleChoicePreprocessor(tokenizer, sequence_length=12)
    contexts = ["the cat sat on", "a dog"]
    endings = [["the mat", "a dog", "a log"], ["sat on a log", "is not", "the cat"]]
    labels = np.array([0, 2])
    x = pre((contexts, endings))
    plain = kzoo.models.GPTMultipleChoice(backbone, preprocessor=pre, dropout=0.0)
    model = kzoo.models.GPTMultipleChoice(backbone, preprocessor=pre, dropout=0.0,
                                          language_model_loss_weight=0.5)
    model.output_dense.set_weights(plain.output_dense.get_weights())
    loss = model.evaluate(x, labels, verbose=0, return_dict=True)["loss"]
    scores = to_numpy(model.predict_on_batch(x))
    choice = -_log_softmax(scores)[[0, 1], labels].mean()
    # λ = 0 is the plain model: its loss is the choice loss alone.
    plain_loss = plain.evaluate(x, labels, verbose=0, return_dict=True)["loss"]
    assert_allclose(plain_loss, choice, atol=1e-5)
    # The LM loss over every (context, answer) sequence, from the causal LM's
    # own logits on the same backbone.
    ids = to_numpy(x["token_ids"]).reshape(6, -1)
    mask = to_numpy(x["padding_mask"]).reshape(6, -1).astype(float)
    lm_logits = to_numpy(kzoo.models.GPTCausalLM(backbone).predict_on_batch(
        {"token_ids": ids, "padding_mask": mask.astype(bool)}))
    token_loss = -np.take_along_axis(_log_softmax(lm_logits[:, :-1]),
                                     ids[:, 1:, None], -1)[..., 0]
    lm = (token_loss * mask[:, 1:]).sum() / mask[:, 1:].sum()
    assert lm > 1.0  # an untrained model: the term is not negligible
    assert_allclose(loss, choice + 0.5 * lm, atol=1e-4)
    history = model.fit((contexts * 2, endings * 2), np.tile(labels, 2), epochs=1,
                        verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    restored = kzoo.models.GPTMultipleChoice.from_config(model.get_config())
    assert restored.language_model_loss_weight == 0.5
    for bad in (-0.5, "0.5", True):
        with pytest.raises(ValueError, match="language_model_loss_weight"):
            kzoo.models.GPTMultipleChoice(backbone, language_model_loss_weight=bad)
