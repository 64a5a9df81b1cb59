"""GPTCausalLM: training on raw text, generation, bad input, compilation."""

import keras
import numpy as np
import pytest

import kzoo
from kzoo.testing import assert_allclose, run_saving_test, to_numpy

CORPUS = ["the cat sat on the mat", "the dog sat on the log",
          "a cat and a dog", "the mat and the log"]
VOCABULARY, MERGES = kzoo.tokenizers.compute_byte_pair_merges(CORPUS * 3,
                                                              vocabulary_size=290)
CONTEXT = 24


def _lm(sequence_length=12, seed=0, **backbone_kwargs):
    keras.utils.set_random_seed(seed)
    tokenizer = kzoo.models.GPTTokenizer(VOCABULARY, MERGES)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=len(VOCABULARY), num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=CONTEXT, dropout=0.0,
        **backbone_kwargs)
    return kzoo.models.GPTCausalLM(backbone, kzoo.models.GPTCausalLMPreprocessor(
        tokenizer, sequence_length=sequence_length))


def test_preprocessor_shifts_targets_and_masks_padding():
    lm = _lm(sequence_length=6)
    tokenizer = lm.preprocessor.tokenizer
    ids = to_numpy(tokenizer("the cat")).tolist()
    eos = tokenizer.end_token_id
    x, y, weight = lm.preprocessor(["the cat"])
    full = [eos] + ids + [eos]
    full += [eos] * (7 - len(full))
    assert to_numpy(x["token_ids"]).tolist() == [full[:6]]
    assert to_numpy(y).tolist() == [full[1:]]
    real = len(ids) + 1  # the tokens and the end token are targets
    assert to_numpy(weight).tolist() == [[1.0] * real + [0.0] * (6 - real)]
    assert to_numpy(x["padding_mask"]).tolist() == [[1] * (real + 1) + [0] * (5 - real)]
    with pytest.raises(ValueError, match="makes its own targets"):
        lm.preprocessor(["the cat"], [1])


def test_fit_on_raw_strings_and_padding_out_of_the_loss():
    lm = _lm()
    lm.compile(optimizer=keras.optimizers.Adam(1e-2))
    x, y, weight = lm.preprocessor(CORPUS)
    before = lm.evaluate(x, y, sample_weight=weight, verbose=0, return_dict=True)["loss"]
    first = lm.fit(CORPUS, epochs=1, batch_size=4, verbose=0).history["loss"][0]
    assert_allclose(first, before, atol=1e-5)  # raw strings give the same loss
    # More steps on the same tensors (one tf.data pass per epoch is slow).
    history = lm.fit(x, y, sample_weight=weight, epochs=14, batch_size=4, verbose=0)
    after = history.history["loss"][-1]
    assert after < 0.5 * before, (before, after)
    # Longer padding changes nothing: padded targets weigh 0 and real
    # positions never attend to later (padded) ones.
    longer = kzoo.models.GPTCausalLM(lm.backbone, kzoo.models.GPTCausalLMPreprocessor(
        lm.preprocessor.tokenizer, sequence_length=20))
    x20, y20, weight20 = longer.preprocessor(CORPUS)
    assert_allclose(
        longer.evaluate(x20, y20, sample_weight=weight20, verbose=0,
                        return_dict=True)["loss"],
        lm.evaluate(x, y, sample_weight=weight, verbose=0, return_dict=True)["loss"],
        atol=1e-5)


def test_generate_text_batches_and_empty_prompt():
    lm = _lm()
    alone = [lm.generate(p, max_length=14) for p in ("the cat", "a", "")]
    batch = lm.generate(["the cat", "a", ""], max_length=14)
    assert batch == alone
    assert batch[0].startswith("the cat") and batch[1].startswith("a")
    assert isinstance(alone[0], str)
    tokens = lm.generate_token_ids([[lm.preprocessor.tokenizer.end_token_id]],
                                   max_length=5, stop_token_ids=None)
    assert len(tokens[0]) == 5


def test_bad_input():
    lm = _lm()
    with pytest.raises(ValueError, match="shorter than the longest prompt"):
        lm.generate("the cat sat on the mat and the dog", max_length=4)
    with pytest.raises(ValueError, match="longer than the model's context"):
        lm.generate("the cat", max_length=CONTEXT + 1)
    with pytest.warns(UserWarning, match="keeping its last 23 tokens"):
        text = lm.generate(" ".join(CORPUS * 2), max_length=CONTEXT)
    assert isinstance(text, str)
    with pytest.raises(ValueError, match="sampler"):
        lm.generate("the", sampler="nucleus")
    with pytest.raises(ValueError, match=r"`p` must be in \(0, 1\]"):
        kzoo.samplers.TopPSampler(p=1.5)
    with pytest.raises(ValueError, match="`k` must be an int >= 1"):
        kzoo.samplers.TopKSampler(k=0)
    with pytest.raises(TypeError, match="list of str"):
        lm.generate([1, 2])


def test_each_step_is_one_position_over_the_cache(monkeypatch):
    lm = _lm()
    lengths = []
    original = lm.backbone.call_with_cache

    def recording(token_ids, cache, index, **kwargs):
        lengths.append(int(token_ids.shape[1]))
        return original(token_ids, cache, index, **kwargs)

    monkeypatch.setattr(lm.backbone, "call_with_cache", recording)
    lm.generate_token_ids([[1, 2, 3]], max_length=12, stop_token_ids=None)
    assert set(lengths) == {12, 1}  # one prefill of the buffer, then single tokens


def test_prefill_covers_the_shortest_prompt_rounded_up(monkeypatch):
    from kzoo.models import causal_lm

    assert [causal_lm._prefill_length(n, 100) for n in (1, 16, 17, 33, 64)] == [
        16, 16, 32, 64, 64]
    assert causal_lm._prefill_length(40, 50) == 50
    lm = _lm()
    # Prompts of 2 and 20 tokens in a 24-position buffer: a 16-position
    # prefill, the longer prompt's last 4 tokens fed by the loop.
    rng = np.random.default_rng(0)
    prompts = [rng.integers(1, len(VOCABULARY), n).tolist() for n in (2, 20)]
    lengths = []
    original = lm.backbone.call_with_cache

    def recording(token_ids, cache, index, **kwargs):
        lengths.append(token_ids.shape[1])  # (None in a TF retrace)
        return original(token_ids, cache, index, **kwargs)

    monkeypatch.setattr(lm.backbone, "call_with_cache", recording)
    results = {}
    for sampler in ("greedy", kzoo.samplers.BeamSampler(num_beams=2)):
        results[sampler] = lm.generate_token_ids(prompts, max_length=CONTEXT,
                                                 sampler=sampler, stop_token_ids=None)
    assert 16 in lengths and CONTEXT not in lengths
    # The same tokens as with a prefill of the whole buffer.
    monkeypatch.setattr(causal_lm, "_prefill_length", lambda shortest, length: length)
    for sampler, result in results.items():
        assert lm.generate_token_ids(prompts, max_length=CONTEXT, sampler=sampler,
                                     stop_token_ids=None) == result
        assert [row[:len(p)] for row, p in zip(result, prompts)] == prompts
        assert all(len(row) == CONTEXT for row in result)


@pytest.mark.skipif(keras.config.backend() == "torch",
                    reason="Keras runs torch predictions eagerly (nothing to compile)")
def test_generation_is_compiled_once_per_shape(monkeypatch):
    from kzoo.models import causal_lm

    lm = _lm()
    traces = []
    original = causal_lm._Generation.call
    monkeypatch.setattr(causal_lm._Generation, "call",
                        lambda self, inputs: traces.append(1) or original(self, inputs))
    for prompts in (["the cat", "a dog"], ["a", "the mat and"], ["the log", ""]):
        lm.generate(prompts, max_length=12)
    assert len(traces) == 1


def test_saving(tmp_path):
    lm = _lm()
    data = {"token_ids": np.array([[0, 5, 9, 3]]), "padding_mask": np.ones((1, 4))}
    restored = run_saving_test(lm, data, tmp_path, atol=1e-5)
    assert restored.generate("the cat", max_length=10) == lm.generate("the cat",
                                                                      max_length=10)


def test_weights_save_and_load_after_generating(tmp_path):
    # Each generation loop the model keeps refers back to it; Keras' saving
    # must not walk into them (load_weights recursed without end).
    lm = _lm()
    before = lm.generate("the cat", max_length=10)
    lm.save_weights(tmp_path / "lm.weights.h5")
    lm.load_weights(tmp_path / "lm.weights.h5")
    assert lm.generate("the cat", max_length=10) == before


def _padded_lm(extra=10):
    """An LM whose backbone has ``extra`` ids past the tokenizer's vocabulary,
    with weights set so that those ids are the most likely everywhere."""
    keras.utils.set_random_seed(0)
    tokenizer = kzoo.models.GPTTokenizer(VOCABULARY, MERGES)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=len(VOCABULARY) + extra, num_layers=1, num_heads=2,
        hidden_dim=16, intermediate_dim=32, max_sequence_length=CONTEXT, dropout=0.0)
    with pytest.warns(UserWarning, match=f"ids {len(VOCABULARY)} to "
                      f"{len(VOCABULARY) + extra - 1} have no text"):
        lm = kzoo.models.GPTCausalLM(backbone, kzoo.models.GPTCausalLMPreprocessor(
            tokenizer, sequence_length=12))
    # The final layer norm outputs the constant vector 1 (gamma 0, beta 1):
    # the logit of id i is the sum of its embedding row, 5 * 16 for the extra
    # rows and about +-0.1 for the tokenizer's.
    backbone.layer_norm.gamma.assign(np.zeros(16, "float32"))
    backbone.layer_norm.beta.assign(np.ones(16, "float32"))
    table = to_numpy(backbone.token_embedding.embeddings).copy()
    table[len(VOCABULARY):] = 5.0
    backbone.token_embedding.embeddings.assign(table)
    return lm


@pytest.mark.parametrize("sampler", [
    "greedy", kzoo.samplers.RandomSampler(seed=1),
    kzoo.samplers.RandomSampler(temperature=100.0, seed=2),
    kzoo.samplers.TopKSampler(k=20, seed=3), kzoo.samplers.TopPSampler(p=1.0, seed=4),
    kzoo.samplers.BeamSampler(num_beams=3)],
    ids=["greedy", "random", "random_hot", "top_k", "top_p", "beam"])
def test_ids_past_the_tokenizer_are_never_generated(sampler):
    lm = _padded_lm()
    size = len(VOCABULARY)
    x = {"token_ids": np.array([[0, 5, 9, 3]]), "padding_mask": np.ones((1, 4), "int32")}
    unmasked = to_numpy(lm.lm_head(lm.backbone(x)["sequence_output"]))
    assert (unmasked.argmax(-1) >= size).all()  # without the mask they would win
    logits = to_numpy(lm(x))
    assert (logits[..., size:] == -1e9).all()
    assert_allclose(logits[..., :size], unmasked[..., :size], atol=0)
    prompts = [[0], [0, 5, 9], [3, 4]]
    rows = lm.generate_token_ids(prompts, max_length=CONTEXT, sampler=sampler,
                                 stop_token_ids=None)
    assert [len(r) for r in rows] == [CONTEXT] * 3
    assert max(max(r) for r in rows) < size, rows
    assert all(isinstance(t, str) for t in lm.generate(["the cat", "a"],
                                                        max_length=16, sampler=sampler))


def test_backbone_with_fewer_ids_than_the_tokenizer_is_refused():
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=len(VOCABULARY) - 1, num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=CONTEXT)
    preprocessor = kzoo.models.GPTCausalLMPreprocessor(
        kzoo.models.GPTTokenizer(VOCABULARY, MERGES), sequence_length=8)
    with pytest.raises(ValueError, match=f"vocabulary_size={len(VOCABULARY)}"):
        kzoo.models.GPTCausalLM(backbone, preprocessor)


def test_the_mask_survives_saving(tmp_path):
    lm = _padded_lm()
    lm.save(tmp_path / "lm.keras")
    restored = keras.models.load_model(tmp_path / "lm.keras")
    x = {"token_ids": np.array([[0, 5, 9, 3]]), "padding_mask": np.ones((1, 4), "int32")}
    logits = to_numpy(restored(x))
    assert (logits[..., len(VOCABULARY):] == -1e9).all()
    assert_allclose(logits, to_numpy(lm(x)), atol=1e-5)


def test_int8_logits_stay_close_to_float32():
    # The tied output head reads the int8 table with its per-row scales:
    # read as raw int8 values, the logits came out hundreds of times too large.
    lm = _lm()
    data = {"token_ids": np.array([[0, 5, 9, 3, 7, 2]]), "padding_mask": np.ones((1, 6))}
    expected = to_numpy(lm(data))
    lm.backbone.quantize("int8")
    found = to_numpy(lm(data))
    assert np.abs(found - expected).max() < 0.05 * np.abs(expected).max()
    assert not np.array_equal(found, expected)
    assert len(lm.generate("the cat", max_length=10)) > len("the cat")
