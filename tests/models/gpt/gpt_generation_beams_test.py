"""Beam search with each logit control alone, and over a batch of prompts of
different lengths, against transformers' ``generate`` on the converted tiny
random GPT-2 of the generation controls test (token ids compared exactly)."""

import pytest

from kzoo import samplers
from tests.models.gpt import gpt_generation_controls_test as controls
from tests.models.gpt.gpt_generation_controls_test import models  # noqa: F401 (fixture)

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

PROMPT = controls.PROMPT


def _stop(model):
    """The first token the unstopped beam search makes after its first three
    new tokens (and not among them): the beams meet it a few tokens in, so
    the stop token and ``min_new_tokens`` matter."""
    new = controls._hf(model, num_beams=3, max_new_tokens=20)[0][len(PROMPT):]
    return next(t for t in new[3:] if t not in new[:3])


@pytest.mark.parametrize("control", [
    {"no_repeat_ngram_size": 2}, {"no_repeat_ngram_size": 3},
    {"repetition_penalty": 1.5}, {"min_new_tokens": 6}],
    ids=["ngram2", "ngram3", "penalty", "min_new_tokens"])
def test_beam_search_with_one_control_matches_transformers(models, control):
    model, lm = models
    stop = _stop(model)
    expected = controls._hf(model, stop=stop, num_beams=3, num_return_sequences=2,
                            max_new_tokens=12, **control)
    assert expected != controls._hf(model, stop=stop, num_beams=3,
                                    num_return_sequences=2, max_new_tokens=12)
    found = lm.generate_token_ids([PROMPT], max_new_tokens=12, stop_token_ids=[stop],
                                  num_return_sequences=2,
                                  sampler=samplers.BeamSampler(num_beams=3), **control)
    assert found == expected


def test_beam_search_over_prompts_of_different_lengths_matches_transformers(models):
    """One call with three prompts of different lengths: each prompt's beams
    are transformers' for that prompt alone, in prompt order."""
    model, lm = models
    stop = _stop(model)
    prompts = [PROMPT, [3, 1, 4, 1, 5, 9, 2], [42]]
    control = {"no_repeat_ngram_size": 2, "repetition_penalty": 1.2}
    found = lm.generate_token_ids(prompts, max_new_tokens=10, stop_token_ids=[stop],
                                  num_return_sequences=2,
                                  sampler=samplers.BeamSampler(num_beams=3), **control)
    expected = [row for prompt in prompts for row in controls._hf(
        model, prompt, stop=stop, num_beams=3, num_return_sequences=2,
        max_new_tokens=10, **control)]
    assert found == expected
