"""Samplers: exact filters, inverse-transform proportions, seeds, beam search."""

import itertools

import keras
import numpy as np
import pytest

import kzoo
from kzoo import samplers
from kzoo.testing import to_numpy

PROBS = np.array([[0.1, 0.4, 0.2, 0.3]], "float32")
LOGITS = np.log(PROBS)


def test_filters_keep_exactly_the_right_tokens():
    keep = lambda s: np.isfinite(to_numpy(s.filter_logits(LOGITS)))[0].tolist()  # noqa: E731
    assert keep(samplers.TopKSampler(k=2)) == [False, True, False, True]
    assert keep(samplers.TopKSampler(k=10)) == [True] * 4  # k > vocabulary
    assert keep(samplers.TopPSampler(p=0.4)) == [False, True, False, False]
    assert keep(samplers.TopPSampler(p=0.5)) == [False, True, False, True]
    assert keep(samplers.TopPSampler(p=0.75)) == [False, True, True, True]
    assert keep(samplers.TopPSampler(p=1.0)) == [True] * 4


@pytest.mark.parametrize("sampler, expected", [
    (samplers.RandomSampler(), PROBS[0]),
    (samplers.TopKSampler(k=2), np.array([0, 4, 0, 3]) / 7),
    (samplers.TopPSampler(p=0.5), np.array([0, 4, 0, 3]) / 7),
])
def test_inverse_transform_gives_the_distribution(sampler, expected):
    # Evenly spaced noise in (0, 1]: the counts are the probabilities exactly.
    n = 7000
    noise = (np.arange(n, dtype="float32") + 0.5) / n
    logits = np.repeat(LOGITS, n, axis=0)
    chosen = to_numpy(sampler.choose(logits, noise))
    np.testing.assert_allclose(np.bincount(chosen, minlength=4) / n, expected, atol=2e-3)


def test_greedy_and_temperature():
    assert to_numpy(samplers.GreedySampler().choose(LOGITS, None)).tolist() == [1]
    with pytest.raises(ValueError, match="temperature"):
        samplers.RandomSampler(temperature=0)
    assert samplers.get("top_p").p == 0.9
    # float32 logits over the temperature (at 1: the logits themselves)
    half = np.array([[1.0, -3.0, 0.5]], "float16")
    for temperature, want in ((1.0, [[1.0, -3.0, 0.5]]), (2.0, [[0.5, -1.5, 0.25]])):
        got = samplers.RandomSampler(temperature=temperature).scale_logits(half)
        assert keras.backend.standardize_dtype(got.dtype) == "float32"
        assert to_numpy(got).tolist() == want
    assert samplers.get(samplers.BeamSampler(num_beams=2)).num_beams == 2


def _tiny_lm(vocabulary_size=6):
    keras.utils.set_random_seed(3)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=vocabulary_size, num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=8, dropout=0.0)
    backbone.token_embedding.embeddings.assign(
        np.random.default_rng(1).normal(0, 2, (vocabulary_size, 8)).astype("float32"))
    return kzoo.models.GPTCausalLM(backbone)


def test_seeded_sampling_is_reproducible_and_varies():
    lm = _tiny_lm()
    prompts = [[1, 2]] * 4

    def run(seed):
        return lm.generate_token_ids(prompts, max_length=8, stop_token_ids=None,
                                     sampler=samplers.RandomSampler(temperature=3.0, seed=seed))

    assert run(7) == run(7)
    sampler = samplers.RandomSampler(temperature=3.0, seed=7)
    first = lm.generate_token_ids(prompts, max_length=8, sampler=sampler,
                                  stop_token_ids=None)
    second = lm.generate_token_ids(prompts, max_length=8, sampler=sampler,
                                   stop_token_ids=None)
    assert first != second  # the stream moves on between calls
    assert len({tuple(row) for row in first}) > 1  # rows draw independently


def test_beam_search_one_beam_is_greedy_and_many_beams_are_exhaustive():
    lm = _tiny_lm()
    prompts = [[1, 2], [3]]
    greedy = lm.generate_token_ids(prompts, max_length=6, stop_token_ids=None)
    one_beam = lm.generate_token_ids(prompts, max_length=6, stop_token_ids=None,
                                     sampler=samplers.BeamSampler(num_beams=1))
    assert one_beam == greedy
    # 36 beams hold every 2-token continuation of a 6-token vocabulary: the
    # best one by total log-probability, found by brute force.
    found = lm.generate_token_ids(prompts, max_length=4, stop_token_ids=None,
                                  sampler=samplers.BeamSampler(num_beams=36))
    for prompt, row in zip(prompts, found):
        best, best_score = None, -np.inf
        for tail in itertools.product(range(6), repeat=4 - len(prompt)):
            seq = prompt + list(tail)
            logits = to_numpy(lm.predict_on_batch(
                {"token_ids": np.array([seq]), "padding_mask": np.ones((1, 4))}))[0]
            logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
            score = sum(logp[i - 1, seq[i]] for i in range(len(prompt), 4))
            if score > best_score:
                best, best_score = seq, score
        assert row == best


def test_beam_search_stops_rows_at_the_stop_token():
    lm = _tiny_lm()
    free = lm.generate_token_ids([[1, 2]], max_length=8, stop_token_ids=None,
                                 sampler=samplers.BeamSampler(num_beams=3))[0]
    stop = free[3]
    stopped = lm.generate_token_ids([[1, 2]], max_length=8, stop_token_ids=[stop],
                                    sampler=samplers.BeamSampler(num_beams=3))[0]
    assert stopped[-1] == stop and stop not in stopped[2:-1]
