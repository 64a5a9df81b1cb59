"""Generation controls and streaming against transformers' ``generate`` on
one converted tiny random GPT-2 (token ids compared exactly)."""

import json

import numpy as np
import pytest

import kzoo
from kzoo import samplers
from kzoo.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

CORPUS = ["The cat sat on the mat.", "Dogs don't sit; cats do!",
          "  spaces   and\nnew lines 123"] * 4
VOCABULARY, MERGES = kzoo.tokenizers.compute_byte_pair_merges(CORPUS, vocabulary_size=300)
EOS = VOCABULARY["<|endoftext|>"]
PROMPT = [5, 7, 9, 11]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """(transformers' model, kzoo's GPTCausalLM loaded from its folder). The
    weights are drawn wider than GPT-2's default (0.2, not 0.02), so that the
    next-token distribution is random but not flat: the controls change the
    tokens."""
    path = tmp_path_factory.mktemp("gpt2")
    with open(path / "vocab.json", "w", encoding="utf-8") as f:
        json.dump(VOCABULARY, f)
    (path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n",
                                     encoding="utf-8")
    config = transformers.GPT2Config(
        vocab_size=len(VOCABULARY), n_positions=64, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=EOS, eos_token_id=EOS, initializer_range=0.2)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    model.save_pretrained(path)
    return model, kzoo.models.GPTCausalLM.from_preset(str(path))


def _hf(model, prompt=PROMPT, stop=None, **kwargs):
    """transformers' sequences, each cut after its first stop token."""
    kwargs.setdefault("do_sample", False)
    with torch.no_grad():
        rows = model.generate(torch.tensor([prompt]), eos_token_id=stop,
                              pad_token_id=EOS if stop is None else stop,
                              **kwargs).tolist()
    if stop is not None:
        rows = [r[:r.index(stop, len(prompt)) + 1] if stop in r[len(prompt):] else r
                for r in rows]
    return rows


@pytest.mark.parametrize("controls", [
    {"repetition_penalty": 1.5}, {"repetition_penalty": 0.7},
    {"no_repeat_ngram_size": 2}, {"no_repeat_ngram_size": 3},
    {"repetition_penalty": 1.3, "no_repeat_ngram_size": 2}],
    ids=["penalty", "reward", "ngram2", "ngram3", "both"])
def test_greedy_controls_match_transformers(models, controls):
    model, lm = models
    expected = _hf(model, max_new_tokens=20, **controls)
    assert expected != _hf(model, max_new_tokens=20)  # the control matters
    found = lm.generate_token_ids([PROMPT], max_new_tokens=20, stop_token_ids=None,
                                  **controls)
    assert found == expected


def test_min_new_tokens_and_max_new_tokens_match_transformers(models):
    model, lm = models
    free = _hf(model, max_new_tokens=20)[0]
    stop = free[len(PROMPT) + 2]  # greedy would stop after 3 new tokens
    expected = _hf(model, stop=stop, max_new_tokens=20, min_new_tokens=6)
    assert len(expected[0]) > len(PROMPT) + 6
    assert expected != _hf(model, stop=stop, max_new_tokens=20)
    assert lm.generate_token_ids([PROMPT], max_new_tokens=20, stop_token_ids=[stop],
                                 min_new_tokens=6) == expected
    # Rows of different lengths each get max_new_tokens, as one at a time.
    prompts = [PROMPT, [3, 1, 4, 1, 5, 9, 2], [42]]
    rows = lm.generate_token_ids(prompts, max_new_tokens=9, stop_token_ids=None,
                                 repetition_penalty=1.2)
    for prompt, row in zip(prompts, rows):
        assert row == _hf(model, prompt, max_new_tokens=9, repetition_penalty=1.2)[0]


@pytest.mark.parametrize("length_penalty", [1.0, 0.0, 2.0, -1.0])
@pytest.mark.parametrize("early_stopping", [False, True, "never"])
def test_beam_search_matches_transformers(models, length_penalty, early_stopping):
    model, lm = models
    stop = _hf(model, max_new_tokens=20)[0][len(PROMPT) + 2]
    expected = _hf(model, stop=stop, num_beams=4, num_return_sequences=3,
                   max_new_tokens=12, length_penalty=length_penalty,
                   early_stopping=early_stopping)
    found = lm.generate_token_ids(
        [PROMPT], max_new_tokens=12, stop_token_ids=[stop], num_return_sequences=3,
        sampler=samplers.BeamSampler(num_beams=4, length_penalty=length_penalty,
                                     early_stopping=early_stopping))
    assert found == expected


def test_beam_controls_change_the_beams_as_in_transformers(models):
    model, lm = models
    stop = _hf(model, max_new_tokens=20)[0][len(PROMPT) + 2]
    found = {}
    for length_penalty in (2.0, -1.0):
        rows = lm.generate_token_ids(
            [PROMPT], max_new_tokens=12, stop_token_ids=[stop],
            sampler=samplers.BeamSampler(num_beams=4, length_penalty=length_penalty))
        found[length_penalty] = rows[0]
    assert found[2.0] != found[-1.0]  # the length penalty decides
    controls = {"repetition_penalty": 1.4, "no_repeat_ngram_size": 2, "min_new_tokens": 5}
    expected = _hf(model, stop=stop, num_beams=3, max_new_tokens=12, **controls)
    assert expected != _hf(model, stop=stop, num_beams=3, max_new_tokens=12)
    assert lm.generate_token_ids([PROMPT], max_new_tokens=12, stop_token_ids=[stop],
                                 sampler=samplers.BeamSampler(num_beams=3),
                                 **controls) == expected


def test_processed_logits_equal_transformers_processors():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 12, (3, 10))
    ids[0, 4:8] = ids[0, :4]  # repeated n-grams
    scores = rng.normal(0, 2, (3, 12)).astype("float32")
    prompt_mask = np.zeros((3, 10), "int32")
    prompt_mask[:, :6] = 1
    hf = transformers.generation.logits_process
    cases = [
        ({"repetition_penalty": 1.7}, hf.RepetitionPenaltyLogitsProcessor(1.7)),
        ({"no_repeat_ngram_size": 2}, hf.NoRepeatNGramLogitsProcessor(2)),
        ({"no_repeat_ngram_size": 3}, hf.NoRepeatNGramLogitsProcessor(3)),
        ({"min_new_tokens": 5, "stop_token_ids": (3, 7)},
         hf.MinNewTokensLengthLogitsProcessor(6, 5, [3, 7])),
    ]
    for controls, reference in cases:
        processor = samplers.LogitsProcessor(**controls)
        expected = reference(torch.tensor(ids), torch.tensor(scores)).numpy()
        assert not np.array_equal(expected, scores)
        # The buffer holds 4 more positions than are filled: never read.
        buffer = np.concatenate([ids, rng.integers(0, 12, (3, 4))], axis=1)
        mask = np.concatenate([prompt_mask, np.zeros((3, 4), "int32")], axis=1)
        found = to_numpy(processor(scores, buffer, 10, mask))
        np.testing.assert_allclose(found, expected, rtol=1e-6, atol=0)


def test_sampling_with_controls_draws_from_the_processed_distribution(models):
    """top-k sampling with a repetition penalty and several sequences per
    prompt: every drawn token is among the k best of transformers' processed
    logits at its step, and some are not among the k best unprocessed ones."""
    model, lm = models
    k, penalty = 3, 2.0
    rows = lm.generate_token_ids(
        [PROMPT, [42, 17]], max_new_tokens=10, stop_token_ids=None,
        num_return_sequences=4, repetition_penalty=penalty,
        sampler=samplers.TopKSampler(k=k, seed=1))
    assert len(rows) == 8
    assert all(row[:4] == PROMPT for row in rows[:4])
    assert all(row[:2] == [42, 17] for row in rows[4:])
    assert len({tuple(r) for r in rows[:4]}) > 1  # each copy draws its own
    processor = transformers.generation.logits_process.RepetitionPenaltyLogitsProcessor(
        penalty)
    outside_raw_top_k = 0
    for row in rows:
        start = 4 if row[:4] == PROMPT else 2
        with torch.no_grad():
            logits = model(torch.tensor([row])).logits[0]
        for i in range(start, len(row)):
            raw = logits[i - 1][None]
            processed = processor(torch.tensor([row[:i]]), raw.clone())[0]
            assert row[i] in torch.topk(processed, k).indices.tolist()
            outside_raw_top_k += row[i] not in torch.topk(raw[0], k).indices.tolist()
    assert outside_raw_top_k > 0


@pytest.mark.parametrize("kwargs, message", [
    ({"repetition_penalty": -1.0}, "repetition_penalty"),
    ({"repetition_penalty": 0}, "repetition_penalty"),
    ({"max_new_tokens": 0}, "max_new_tokens"),
    ({"max_new_tokens": 100}, "max_new_tokens <= 60"),
    ({"no_repeat_ngram_size": -2}, "no_repeat_ngram_size"),
    ({"min_new_tokens": 1.5}, "min_new_tokens"),
    ({"num_return_sequences": 3}, "needs a sampling sampler"),
    ({"num_return_sequences": 5, "sampler": samplers.BeamSampler(num_beams=4)},
     "pass num_beams >= 5"),
    ({"num_return_sequences": 0}, "num_return_sequences"),
])
def test_bad_values_are_clear_errors(models, kwargs, message):
    _, lm = models
    with pytest.raises(ValueError, match=message):
        lm.generate_token_ids([PROMPT], **kwargs)


def test_both_lengths_warn_and_max_new_tokens_wins(models):
    _, lm = models
    with pytest.warns(UserWarning, match="`max_new_tokens` takes precedence"):
        rows = lm.generate_token_ids([PROMPT], max_length=30, max_new_tokens=3,
                                     stop_token_ids=None)
    assert len(rows[0]) == len(PROMPT) + 3
    with pytest.raises(ValueError, match="early_stopping"):
        samplers.BeamSampler(early_stopping="always")


class _Recorder:
    """transformers' streamer protocol: ``put`` and ``end``."""

    def __init__(self):
        self.puts, self.ended = [], 0

    def put(self, value):
        assert self.ended == 0
        self.puts.append(np.asarray(value).tolist())

    def end(self):
        self.ended += 1


@pytest.mark.parametrize("sampler", ["greedy", samplers.TopPSampler(p=0.8, seed=5)],
                         ids=["greedy", "top_p"])
def test_streamer_receives_what_transformers_sends_and_the_same_tokens(models, sampler):
    model, lm = models
    stop = _hf(model, max_new_tokens=20)[0][len(PROMPT) + 6]
    controls = {"max_new_tokens": 12, "stop_token_ids": [stop],
                "repetition_penalty": 1.2}
    if isinstance(sampler, samplers.Sampler):  # the same noise stream twice
        plain_sampler = samplers.TopPSampler(p=0.8, seed=5)
    else:
        plain_sampler = sampler
    plain = lm.generate_token_ids([PROMPT], sampler=plain_sampler, **controls)[0]
    recorder = _Recorder()
    streamed = lm.generate_token_ids([PROMPT], sampler=sampler, streamer=recorder,
                                     **controls)[0]
    assert streamed == plain
    assert recorder.puts == [[PROMPT]] + [[t] for t in plain[len(PROMPT):]]
    assert recorder.ended == 1
    if sampler == "greedy":  # transformers' generate sends the same
        reference = _Recorder()
        with torch.no_grad():
            model.generate(torch.tensor([PROMPT]), do_sample=False, max_new_tokens=12,
                           eos_token_id=stop, pad_token_id=stop, repetition_penalty=1.2,
                           streamer=reference)
        assert reference.puts == recorder.puts


def test_text_streaming_equals_generate_and_keeps_characters_whole(models):
    _, lm = models
    prompt = "The café 🐈 sat"
    pieces = list(lm.generate_stream(prompt, max_new_tokens=15, stop_token_ids=None,
                                     no_repeat_ngram_size=2))
    assert prompt + "".join(pieces) == lm.generate(
        prompt, max_new_tokens=15, stop_token_ids=None, no_repeat_ngram_size=2)
    # A continuation with characters split across byte tokens.
    preprocessor = lm.preprocessor
    text = "é🐈 cat 日本 é"
    ids = preprocessor.generate_preprocess(text, 64)[0][1:]
    assert len(ids) > len(text)  # multi-byte characters come in several tokens
    pieces = list(preprocessor.generate_postprocess_stream(ids))
    assert "".join(pieces) == text
    assert all("\ufffd" not in piece for piece in pieces)
    assert any("🐈" in piece for piece in pieces)


def test_streaming_refuses_what_it_cannot_stream(models):
    _, lm = models
    with pytest.raises(ValueError, match="one prompt"):
        lm.generate_token_ids([PROMPT, PROMPT], streamer=_Recorder())
    with pytest.raises(ValueError, match="BeamSampler"):
        lm.generate_stream("a cat", sampler="beam")


@pytest.mark.parametrize("beams", [1, 3])
def test_stop_strings_end_where_the_text_first_holds_them(models, beams):
    """The row ends with the first token whose text completes the string
    (found here by searching the decoded text), and is otherwise the row
    generated without it."""
    _, lm = models
    sampler = "greedy" if beams == 1 else samplers.BeamSampler(num_beams=beams)
    free = lm.generate_token_ids([PROMPT], max_new_tokens=20, stop_token_ids=None,
                                 sampler=sampler)[0]
    decode = lm.preprocessor.generate_postprocess
    pieces = [decode([[t]])[0] for t in free]
    # A string across two whole-character tokens of the continuation.
    j = next(j for j in range(len(PROMPT), len(free) - 1)
             if pieces[j] and pieces[j + 1] and "\ufffd" not in pieces[j] + pieces[j + 1])
    stop = pieces[j][-1] + pieces[j + 1][0]
    end = next(p for p in range(len(PROMPT), len(free))
               if stop in decode([free[len(PROMPT):p + 1]])[0])
    assert end < len(free) - 1
    found = lm.generate_token_ids([PROMPT], max_new_tokens=20, stop_token_ids=None,
                                  sampler=sampler, stop_strings=[stop, "never there"])[0]
    if beams == 1:
        assert found == free[:end + 1]
        recorder = _Recorder()
        assert lm.generate_token_ids([PROMPT], max_new_tokens=20, stop_token_ids=None,
                                     stop_strings=stop, streamer=recorder)[0] == found
        assert recorder.puts[1:] == [[t] for t in found[len(PROMPT):]]
    else:  # the search goes on among the other beams: the best one holds it
        assert stop in decode([found[len(PROMPT):]])[0]
        assert stop not in decode([found[len(PROMPT):-1]])[0]


def test_stop_strings_table_walk_equals_the_text_rule():
    """The tensor check and the host rule agree on random token sequences."""
    token_bytes = [b"s", b"t", b"o", b"p", b"st", b"op", b"stop", b"las", b"topper",
                   b"x", b"pped", b"to", b"xstopy", b"opera"]
    checker = samplers.StopStrings(("stop", "pp"), token_bytes)
    rng = np.random.default_rng(0)
    rows = rng.integers(0, len(token_bytes), (400, 6))
    rows[:6, :2] = [[4, 5], [6, 0], [7, 8], [0, 11], [3, 10], [6, 9]]
    found = to_numpy(checker(rows[:, :2], 1))
    expected = [checker.first_stop(list(r[:2]), 1) == 1 for r in rows]
    assert found.tolist() == expected
    assert expected[:6] == [True, False, True, False, True, False]
    found = to_numpy(checker(rows, 5))
    expected = [checker.first_stop(list(r), 5) == 5 for r in rows]
    assert found.tolist() == expected and 0 < sum(expected) < 400
