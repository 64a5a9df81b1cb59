"""Sampling against transformers, compared by its distribution.

kzoo draws the first two new tokens of one prompt many times in one call;
their empirical distribution is compared with the next-token probabilities
transformers computes on the same converted tiny random GPT-2 (its logits
through transformers' own logits processors and warpers, checked equal to
what its ``generate`` uses), by total variation.

The threshold is a bound, not a guess: for n draws from p with empirical
distribution q, E[TV(q, p)] <= 1/2 sum_i sqrt(p_i (1 - p_i) / n) (Jensen on
each |q_i - p_i|), and TV moves by at most 1/n when one draw changes, so
P(TV > E[TV] + t) <= exp(-2 n t^2) (McDiarmid). With t = sqrt(ln(1e6) /
(2 n)), a correct sampler passes with probability >= 1 - 1e-6. Each test also
shows that the same draws reject a wrong sampler (a skipped temperature, a
top-k or top-p cut one token off, a skipped repetition penalty).
"""

import numpy as np
import pytest

from kzoo import samplers
from tests.models.gpt import gpt_generation_controls_test as controls
from tests.models.gpt.gpt_generation_controls_test import models  # noqa: F401 (fixture)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
hf = transformers.generation.logits_process

PROMPT = controls.PROMPT
DRAWS = 20000
FAILURE = 1e-6


def _threshold(p, n):
    """TV that n draws from ``p`` exceed with probability <= FAILURE."""
    p = np.asarray(p, "float64").ravel()
    return 0.5 * np.sum(np.sqrt(p * (1 - p) / n)) + np.sqrt(np.log(1 / FAILURE) / (2 * n))


def _tv_to(samples, p):
    """(total variation between the draws' frequencies and ``p``, its threshold)."""
    p = np.asarray(p, "float64")
    counts = np.bincount(np.ravel_multi_index(samples, p.shape), minlength=p.size)
    return 0.5 * np.abs(counts / len(samples[0]) - p.ravel()).sum(), _threshold(p, len(samples[0]))


def _processors(prompt_length, temperature=1.0, top_k=0, top_p=1.0,
                repetition_penalty=1.0, no_repeat_ngram_size=0, min_new_tokens=0,
                stop=None):
    """transformers' processors and warpers, in ``generate``'s order."""
    steps = []
    if repetition_penalty != 1.0:
        steps.append(hf.RepetitionPenaltyLogitsProcessor(repetition_penalty))
    if no_repeat_ngram_size:
        steps.append(hf.NoRepeatNGramLogitsProcessor(no_repeat_ngram_size))
    if min_new_tokens:
        steps.append(hf.MinNewTokensLengthLogitsProcessor(prompt_length, min_new_tokens, stop))
    if temperature != 1.0:
        steps.append(hf.TemperatureLogitsWarper(temperature))
    if top_k:
        steps.append(hf.TopKLogitsWarper(top_k))
    if top_p < 1.0:
        steps.append(hf.TopPLogitsWarper(top_p))
    return hf.LogitsProcessorList(steps)


def _next_probabilities(model, rows, prompt_length, settings):
    """float64 ``[rows, vocabulary]``: transformers' processed next-token
    distribution after each row."""
    ids = torch.tensor(rows)
    with torch.no_grad():
        logits = model(ids).logits[:, -1].float()
        scores = _processors(prompt_length, **settings)(ids, logits)
    return torch.softmax(scores, dim=-1).double().numpy()


def _two_token_distributions(model, prompt, settings):
    """(first-token probabilities ``[V]``, joint of the first two ``[V, V]``)."""
    first = _next_probabilities(model, [prompt], len(prompt), settings)[0]
    vocabulary = len(first)
    second = _next_probabilities(model, [prompt + [t] for t in range(vocabulary)],
                                 len(prompt), settings)
    return first, first[:, None] * second


def _generate_scores(model, prompt, settings):
    """The first step's processed distribution inside transformers' ``generate``."""
    kwargs = {"temperature": settings.get("temperature", 1.0),
              "top_k": settings.get("top_k", 0), "top_p": settings.get("top_p", 1.0),
              "repetition_penalty": settings.get("repetition_penalty", 1.0),
              "no_repeat_ngram_size": settings.get("no_repeat_ngram_size", 0),
              "min_new_tokens": settings.get("min_new_tokens", 0)}
    stop = settings.get("stop")
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), do_sample=True, max_new_tokens=2,
                             output_scores=True, return_dict_in_generate=True,
                             eos_token_id=stop, pad_token_id=controls.EOS, **kwargs)
    return torch.softmax(out.scores[0].float(), dim=-1)[0].double().numpy()


_KZOO_CONTROLS = ("repetition_penalty", "no_repeat_ngram_size", "min_new_tokens")

# (kzoo sampler, transformers' settings, a wrong sampler's settings)
CASES = {
    "random_temperature": (
        lambda: samplers.RandomSampler(temperature=0.5, seed=11),
        {"temperature": 0.5}, {"temperature": 1.0}),
    "top_k_temperature": (
        lambda: samplers.TopKSampler(k=6, temperature=1.5, seed=12),
        {"top_k": 6, "temperature": 1.5}, {"top_k": 5, "temperature": 1.5}),
    "top_p_temperature": (
        lambda: samplers.TopPSampler(p=0.3, temperature=0.7, seed=13),
        {"top_p": 0.3, "temperature": 0.7}, "one_token_fewer"),
    "top_k_repetition_penalty": (
        lambda: samplers.TopKSampler(k=10, seed=14),
        {"top_k": 10, "repetition_penalty": 3.0}, {"top_k": 10}),
    "top_p_all_controls": (
        lambda: samplers.TopPSampler(p=0.8, temperature=0.8, seed=15),
        {"top_p": 0.8, "temperature": 0.8, "repetition_penalty": 1.5,
         "no_repeat_ngram_size": 2, "min_new_tokens": 2, "stop": "likeliest"},
        {"top_p": 0.8, "repetition_penalty": 1.5, "no_repeat_ngram_size": 2,
         "min_new_tokens": 2, "stop": "likeliest"}),
}


def _resolve(model, prompt, settings):
    """``stop: "likeliest"`` becomes the prompt's likeliest next token, so
    that ``min_new_tokens`` holds back real probability mass."""
    if settings.get("stop") != "likeliest":
        return settings
    with torch.no_grad():
        likeliest = int(model(torch.tensor([prompt])).logits[0, -1].argmax())
    return {**settings, "stop": likeliest}


@pytest.mark.parametrize("case", sorted(CASES))
def test_sampling_draws_from_transformers_distribution(models, case):
    model, lm = models
    make_sampler, settings, wrong = CASES[case]
    settings = _resolve(model, PROMPT, settings)
    first, joint = _two_token_distributions(model, PROMPT, settings)
    # The reference is what transformers' generate samples from.
    np.testing.assert_allclose(first, _generate_scores(model, PROMPT, settings),
                               rtol=0, atol=1e-6)
    stop = settings.get("stop")
    rows = np.asarray(lm.generate_token_ids(
        [PROMPT], max_new_tokens=2, stop_token_ids=None if stop is None else [stop],
        num_return_sequences=DRAWS, sampler=make_sampler(),
        **{k: v for k, v in settings.items() if k in _KZOO_CONTROLS}))
    assert rows.shape == (DRAWS, len(PROMPT) + 2)
    assert (rows[:, :len(PROMPT)] == PROMPT).all()
    t1, t2 = rows[:, len(PROMPT)], rows[:, len(PROMPT) + 1]
    statistics = {"first": ((t1,), first), "second": ((t2,), joint.sum(axis=0)),
                  "both": ((t1, t2), joint)}
    for name, (samples, p) in statistics.items():
        tv, threshold = _tv_to(samples, p)
        assert tv <= threshold, (name, tv, threshold)
    # The same draws reject a wrong sampler.
    kept = int((first > 0).sum())
    if wrong == "one_token_fewer":  # a p between the last two kept tokens' cuts
        plain = _next_probabilities(model, [PROMPT], len(PROMPT),
                                    {**settings, "top_p": 1.0})[0]
        q = np.sort(plain)[::-1]
        wrong = {**settings, "top_p": float(q[:kept - 2].sum() + q[kept - 2] / 2)}
    wrong_first, wrong_joint = _two_token_distributions(model, PROMPT,
                                                        _resolve(model, PROMPT, wrong))
    if "top_p" in wrong and wrong["top_p"] != settings.get("top_p"):
        assert (wrong_first > 0).sum() == kept - 1
    rejected = [name for name, (samples, p) in {
        "first": ((t1,), wrong_first), "both": ((t1, t2), wrong_joint)}.items()
        if np.greater(*_tv_to(samples, p))]
    assert rejected, f"{case}: the draws do not tell {wrong} from {settings}"


def test_num_return_sequences_draws_independently_in_prompt_order(models):
    """Each prompt's N rows come together, in prompt order (transformers'
    ``repeat_interleave`` layout); every row draws its own tokens: the
    pairs (row i, row i + 1) of one prompt and (row i of one prompt, row i
    of the other) are distributed as independent draws, which copies or
    shared noise are not. The prompts differ in length, so the longer one's
    new token is drawn a step after the shorter one's."""
    model, lm = models
    other = [42, 17]
    n = DRAWS // 2
    settings = {"top_k": 4}
    rows = lm.generate_token_ids([PROMPT, other], max_new_tokens=1, stop_token_ids=None,
                                 num_return_sequences=n,
                                 sampler=samplers.TopKSampler(k=4, seed=21))
    with torch.no_grad():  # transformers' layout of the same request
        reference = model.generate(torch.tensor([PROMPT, [42, 17, 99, 3]]), do_sample=True,
                                   top_k=4, max_new_tokens=1, num_return_sequences=3,
                                   pad_token_id=controls.EOS).tolist()
    assert [r[:4] for r in reference] == [PROMPT] * 3 + [[42, 17, 99, 3]] * 3
    assert [r[:-1] for r in rows] == [PROMPT] * n + [other] * n
    a = np.asarray([r[-1] for r in rows[:n]])
    b = np.asarray([r[-1] for r in rows[n:]])
    pa = _next_probabilities(model, [PROMPT], len(PROMPT), settings)[0]
    pb = _next_probabilities(model, [other], len(other), settings)[0]
    assert not np.allclose(pa, pb)
    checks = {"first prompt": ((a,), pa), "second prompt": ((b,), pb),
              "neighbours": ((a[0::2], a[1::2]), np.outer(pa, pa)),
              "across prompts": ((a, b), np.outer(pa, pb))}
    for name, (samples, p) in checks.items():
        tv, threshold = _tv_to(samples, p)
        assert tv <= threshold, (name, tv, threshold)
    # Copies of one draw would be rejected by the same check.
    tv, threshold = _tv_to((a[0::2], a[0::2]), np.outer(pa, pa))
    assert tv > threshold
