"""bf16 and int8 GPT against float32 on a really pretrained model (the
reduced-precision bound): held-out perplexity within 1%, greedy continuations equal for 20
tokens on most prompts. Large: it pretrains examples/pretrain_gpt.py's model
for 120 s first (run with -m large)."""

import os
import sys

import keras
import numpy as np
import pytest

import kzoo
from kzoo.models.gpt.gpt_causal_lm import GPTCausalLM
from kzoo.models.gpt.gpt_pretraining import perplexity, token_blocks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import pretrain_gpt
    finally:
        sys.path.pop(0)
    folder = tmp_path_factory.mktemp("gpt") / "preset"
    pretrain_gpt.main(["--seconds", "120", "--output", str(folder)])
    # The example's held-out articles (its seed 0, 8 articles).
    articles = kzoo.datasets.enwiki_excerpt()
    held_out = [articles[i] for i in np.random.default_rng(0).permutation(len(articles))[:8]]
    prompts = [" ".join(line.split()[:5]) for article in held_out
               for line in article.split("\n") if len(line.split()) > 8][:24]
    return str(folder), held_out, prompts


def _variant(folder, variant):
    if variant == "bfloat16":
        return GPTCausalLM.from_preset(folder, dtype="bfloat16")
    model = GPTCausalLM.from_preset(folder)
    model.backbone.quantize("int8")
    return model


@pytest.mark.large
@pytest.mark.parametrize("variant", ["bfloat16", "int8"])
def test_perplexity_and_greedy_continuations_stay_with_float32(pretrained, variant):
    folder, held_out, prompts = pretrained
    reference = GPTCausalLM.from_preset(folder)
    tokenizer = reference.preprocessor.tokenizer
    blocks = token_blocks(tokenizer, held_out, 128)[0][:96]
    model = _variant(folder, variant)
    expected, found = perplexity(reference, blocks)[0], perplexity(model, blocks)[0]
    assert expected < 2000  # it did learn (4096 ids: ~4000 untrained)
    assert abs(found / expected - 1) < 0.01, (found, expected)

    def greedy(m):
        texts = m.generate(prompts, max_length=48)
        return [[int(t) for t in tokenizer(text)] for text in texts]

    same = 0
    for a, b, prompt in zip(greedy(reference), greedy(model), prompts):
        start = len(tokenizer(prompt))
        same += a[start:start + 20] == b[start:start + 20] and len(a) >= start + 20
    assert same >= 0.75 * len(prompts), (same, len(prompts))
    assert keras.backend.standardize_dtype(
        model.backbone.token_embedding.compute_dtype) == (
        "bfloat16" if variant == "bfloat16" else "float32")
