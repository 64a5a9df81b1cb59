"""``stop_strings`` against transformers' ``generate(stop_strings=...,
tokenizer=...)`` on the converted tiny random GPT-2 of the generation
controls test: token ids compared exactly, greedy and beam search, with stop
strings taken from the model's own unstopped output."""

import json

import numpy as np
import pytest

from kzoo import samplers
from tests.models.gpt import gpt_generation_controls_test as controls
from tests.models.gpt.gpt_generation_controls_test import models  # noqa: F401 (fixture)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

PROMPT = controls.PROMPT
OTHER_PROMPT = [3, 1, 4, 1, 5, 9, 2]
NEW_TOKENS = 20


@pytest.fixture(scope="module")
def hf_tokenizer(tmp_path_factory):
    """transformers' GPT-2 tokenizer over the same vocabulary and merges."""
    path = tmp_path_factory.mktemp("gpt2_tokenizer")
    with open(path / "vocab.json", "w", encoding="utf-8") as f:
        json.dump(controls.VOCABULARY, f)
    (path / "merges.txt").write_text(
        "#version: 0.2\n" + "\n".join(controls.MERGES) + "\n", encoding="utf-8")
    return transformers.GPT2Tokenizer(vocab=str(path / "vocab.json"),
                                      merges=str(path / "merges.txt"))


def _hf(model, tokenizer, prompt, beams, stop_strings=None):
    """transformers' sequence (no stop token: only the strings end it)."""
    kwargs = {"stop_strings": stop_strings, "tokenizer": tokenizer} if stop_strings else {}
    with torch.no_grad():
        return model.generate(torch.tensor([prompt]), do_sample=False, num_beams=beams,
                              max_new_tokens=NEW_TOKENS, eos_token_id=None,
                              pad_token_id=controls.EOS, **kwargs).tolist()[0]


def _kzoo(lm, prompts, beams, stop_strings=None):
    sampler = "greedy" if beams == 1 else samplers.BeamSampler(num_beams=beams)
    return lm.generate_token_ids(prompts, max_new_tokens=NEW_TOKENS, stop_token_ids=None,
                                 sampler=sampler, stop_strings=stop_strings)


def _printable(token):
    return bool(token) and all(32 < b < 127 for b in token)


def _strings_from(token_bytes, new_tokens):
    """Stop strings read off an unstopped continuation: at the first two
    neighbouring printable tokens, one of them at least two bytes long, the
    string across their boundary (two tokens), the longer token's text
    without its first byte (a suffix inside one token), without its last
    byte (a string the token runs past), and the token's whole text."""
    pieces = [token_bytes[t] for t in new_tokens]
    for a, b in zip(pieces, pieces[1:]):
        if _printable(a) and _printable(b) and max(len(a), len(b)) >= 2:
            longer = a if len(a) >= len(b) else b
            return {"across": (a[-1:] + b[:1]).decode(),
                    "suffix_inside": longer[1:].decode(),
                    "token_runs_past": longer[:-1].decode(),
                    "whole_token": longer.decode()}
    raise AssertionError(f"no two neighbouring printable tokens in {pieces}")


@pytest.mark.parametrize("beams, prompt", [(1, PROMPT), (3, OTHER_PROMPT)],
                         ids=["greedy", "beams"])
def test_stop_strings_match_transformers(models, hf_tokenizer, beams, prompt):
    model, lm = models
    free = _hf(model, hf_tokenizer, prompt, beams)
    strings = _strings_from(lm.preprocessor.token_bytes(), free[len(prompt):])
    cases = [[strings["across"]], [strings["suffix_inside"]], [strings["token_runs_past"]],
             # Several strings: the first reached decides; one never generated.
             [strings["whole_token"], strings["across"], "never there"]]
    for stop_strings in cases:
        expected = _hf(model, hf_tokenizer, prompt, beams, stop_strings)
        found = _kzoo(lm, [prompt], beams, stop_strings)[0]
        assert found == expected, stop_strings
        if beams == 1:  # greedy: the same row, cut where the string is reached
            assert len(expected) < len(free) and free[:len(expected)] == expected


def test_rows_of_a_batch_stop_as_alone(models, hf_tokenizer):
    """Prompts of different lengths in one call each stop where
    transformers stops them one at a time."""
    model, lm = models
    prompts = [PROMPT, OTHER_PROMPT, [42, 17]]
    free = _hf(model, hf_tokenizer, PROMPT, 1)
    strings = _strings_from(lm.preprocessor.token_bytes(), free[len(PROMPT):])
    stop_strings = [strings["across"], strings["suffix_inside"]]
    found = _kzoo(lm, prompts, 1, stop_strings)
    expected = [_hf(model, hf_tokenizer, p, 1, stop_strings) for p in prompts]
    assert found == expected
    assert len({len(row) - len(p) for row, p in zip(expected, prompts)}) > 1


def test_sampled_rows_end_where_transformers_criteria_first_hold(models, hf_tokenizer):
    """Sampling: every row ends at the first position where transformers'
    ``StopStringCriteria`` holds on the row so far (or runs to
    ``max_new_tokens`` when it never does)."""
    model, lm = models
    free = _hf(model, hf_tokenizer, PROMPT, 1)
    strings = _strings_from(lm.preprocessor.token_bytes(), free[len(PROMPT):])
    stop_strings = [strings["across"], strings["whole_token"], "e", " "]
    criteria = transformers.generation.stopping_criteria.StopStringCriteria(
        hf_tokenizer, stop_strings)
    rows = lm.generate_token_ids([PROMPT], max_new_tokens=NEW_TOKENS, stop_token_ids=None,
                                 num_return_sequences=64, stop_strings=stop_strings,
                                 sampler=samplers.TopKSampler(k=40, seed=3))
    stopped = 0
    for row in rows:
        full = np.asarray(row)
        holds = [bool(criteria(torch.tensor(full[None, :end]), None)[0])
                 for end in range(len(PROMPT) + 1, len(row) + 1)]
        if len(row) < len(PROMPT) + NEW_TOKENS:
            assert holds[-1] and not any(holds[:-1])
            stopped += 1
        else:
            assert not any(holds[:-1])
    assert 0 < stopped < len(rows)


def test_strings_reaching_into_the_prompt_match_transformers(models, hf_tokenizer):
    """A string across the prompt's last token and the first new token stops
    at once; one wholly inside the prompt never stops the row."""
    model, lm = models
    token_bytes = lm.preprocessor.token_bytes()
    free = _hf(model, hf_tokenizer, OTHER_PROMPT, 1)
    first_new = token_bytes[free[len(OTHER_PROMPT)]]
    prompt_text = b"".join(token_bytes[t] for t in OTHER_PROMPT)
    across = (prompt_text[-1:] + first_new[:1]).decode()
    inside_prompt = prompt_text[-3:].decode()
    for stop_strings, length in (([across], len(OTHER_PROMPT) + 1),
                                 ([inside_prompt], len(free))):
        expected = _hf(model, hf_tokenizer, OTHER_PROMPT, 1, stop_strings)
        assert len(expected) == length
        assert _kzoo(lm, [OTHER_PROMPT], 1, stop_strings)[0] == expected
