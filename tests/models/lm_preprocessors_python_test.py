"""The masked-LM, pretraining, causal-LM and classifier preprocessors on the
Python engine against the TensorFlow engine, on fuzzed text."""

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kzoo
from kzoo.models import (
    BertClassifierPreprocessor,
    BertMaskedLMPreprocessor,
    BertPretrainerPreprocessor,
    BertTokenizer,
    GPTCausalLMPreprocessor,
    GPTClassifierPreprocessor,
    GPTTokenizer,
)
from kzoo.preprocessing.engine import engine_scope
from kzoo.testing import to_numpy
from kzoo.testing.without_tensorflow import check_without_tensorflow

BERT_VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",
                   "dog", "sat", "ran", "on", "mat", "a", "big", "red", "##s",
                   ".", ","]
WORDS = ["the", "cat", "cats", "dog", "sat", "ran", "on", "mat", "a", "big",
         "red", ".", ",", "zebra", "Café", "ÉTÉ", "  ", "\t"]
TEXT = st.lists(st.sampled_from(WORDS), max_size=14).map(" ".join)
BATCH = st.lists(TEXT, min_size=1, max_size=5)
CORPUS = ["the cat sat on the mat", "a dog sat on a log", "the cat is not a dog"]
GPT_VOCABULARY, GPT_MERGES = kzoo.tokenizers.compute_byte_pair_merges(
    CORPUS * 3, vocabulary_size=280)


def _numpy(value):
    if isinstance(value, dict):
        return {k: _numpy(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_numpy(v) for v in value)
    if isinstance(value, (str, int, float)) or value is None:
        return value
    return to_numpy(value)


def _assert_same(actual, expected, path="output"):
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), path
        for key in expected:
            _assert_same(actual[key], expected[key], f"{path}[{key!r}]")
    elif isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected)):
            _assert_same(a, e, f"{path}[{i}]")
    elif isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray), path
        assert actual.dtype == expected.dtype, (path, actual.dtype, expected.dtype)
        assert actual.shape == expected.shape, (path, actual.shape, expected.shape)
        np.testing.assert_array_equal(actual, expected, err_msg=path)
    else:
        assert actual == expected, path


def _both(make, call):
    """``call(make())`` on each engine (a fresh layer each), as numpy."""
    with engine_scope("tensorflow"):
        expected = _numpy(call(make()))
    with engine_scope("python"):
        actual = _numpy(call(make()))
    return actual, expected


def _bert_tokenizer():
    return BertTokenizer(vocabulary=BERT_VOCABULARY)


def _gpt_tokenizer():
    return GPTTokenizer(GPT_VOCABULARY, GPT_MERGES)


def _gpt1_tokenizer():
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=len(GPT_VOCABULARY), num_layers=1, num_heads=2,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=16)
    return kzoo.models.gpt.add_fine_tuning_tokens(backbone, _gpt_tokenizer())[1]


GPT1_TOKENIZER = None


@settings(max_examples=25)
@given(BATCH, st.integers(0, 2), st.integers(3, 24),
       st.sampled_from(["round_robin", "waterfall"]),
       st.sampled_from([(1.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.8, 0.1)]),
       st.sampled_from([None, 3]))
def test_bert_masked_lm_preprocessor_matches_tensorflow(
        texts, form, sequence_length, truncate, rates, selection_length):
    """Settings that draw nothing visible: every output equal."""
    x = {0: texts, 1: (texts, texts[::-1]), 2: texts[0]}[form]
    selection, mask_rate, random_rate = rates
    if selection_length is not None and selection == 1.0:
        selection_length = max(selection_length, sequence_length)

    def make():
        return BertMaskedLMPreprocessor(
            _bert_tokenizer(), sequence_length=sequence_length,
            truncate=truncate, mask_selection_rate=selection,
            mask_selection_length=selection_length, mask_token_rate=mask_rate,
            random_token_rate=random_rate, seed=3)

    actual, expected = _both(make, lambda pre: pre(x))
    _assert_same(actual, expected)


@settings(max_examples=12)
@given(BATCH, st.booleans(), st.integers(0, 2**20))
def test_bert_masked_lm_random_masks_keep_the_rules(texts, pairs, seed):
    x = (texts, texts[::-1]) if pairs else texts

    def make():
        return BertMaskedLMPreprocessor(_bert_tokenizer(), sequence_length=16,
                                        seed=seed)

    (ax, ay, aw), (ex, ey, ew) = _both(make, lambda pre: pre(x))
    for key in ("segment_ids", "padding_mask"):
        _assert_same(ax[key], ex[key], key)
    for a, e in [(ax["mask_positions"], ex["mask_positions"]), (ay, ey), (aw, ew)]:
        assert a.shape == e.shape and a.dtype == e.dtype
    # Count per row: floor(0.15 k + u), the same floor on both engines.
    special = np.isin(ex["token_ids"], [0, 2, 3])
    selectable = (~special & ex["padding_mask"]).sum(axis=1)
    assert np.all(np.abs(aw.sum(axis=1) - ew.sum(axis=1)) <= 1)
    assert np.all(aw.sum(axis=1) <= np.ceil(0.15 * selectable))
    with engine_scope("tensorflow"):
        unmasked = _numpy(BertMaskedLMPreprocessor(
            _bert_tokenizer(), sequence_length=16, mask_selection_rate=0.0)(x))
    original = unmasked[0]["token_ids"]
    rows = np.arange(len(original))[:, None]
    changed = np.zeros(original.shape, bool)
    changed[np.broadcast_to(rows, ax["mask_positions"].shape)[aw > 0],
            ax["mask_positions"][aw > 0]] = True
    np.testing.assert_array_equal(ax["token_ids"][~changed], original[~changed])
    np.testing.assert_array_equal(ay[aw > 0], original[changed])
    assert not special[changed].any()


@settings(max_examples=20)
@given(st.lists(st.lists(st.sampled_from(WORDS + ["[MASK]"] * 4), max_size=10)
                .map(" ".join), min_size=1, max_size=4),
       st.booleans(), st.sampled_from([None, 2, 6]))
def test_fill_mask_inputs_match_tensorflow(texts, pairs, selection_length):
    x = (texts, texts[::-1]) if pairs else texts

    def make():
        return BertMaskedLMPreprocessor(_bert_tokenizer(), sequence_length=12,
                                        mask_selection_length=selection_length)

    try:
        with engine_scope("tensorflow"):
            expected = _numpy(make().fill_mask_inputs(x))
    except Exception as error:  # more masks than the width
        assert "mask_selection_length" in str(error)
        with engine_scope("python"), pytest.raises(
                ValueError, match="larger `mask_selection_length`"):
            make().fill_mask_inputs(x)
        return
    with engine_scope("python"):
        actual = _numpy(make().fill_mask_inputs(x))
    _assert_same(actual, expected)
    actual, expected = _both(make, lambda pre: pre.fill_mask_tokens(
        np.array([[4, 5, 17], [0, 1, 2]])))
    assert actual == expected == [["[MASK]", "the", ","], ["[PAD]", "[UNK]", "[CLS]"]]


@settings(max_examples=20)
@given(st.lists(st.lists(TEXT, max_size=5), max_size=5), st.integers(5, 20),
       st.sampled_from([0.0, 1.0]))
def test_bert_pretrainer_preprocessor_matches_tensorflow(docs, length, selection):
    """No random next sentences and all-or-nothing masking: equal outputs."""
    def make():
        return BertPretrainerPreprocessor(
            _bert_tokenizer(), sequence_length=length, random_next_rate=0.0,
            mask_selection_rate=selection, mask_token_rate=1.0,
            random_token_rate=0.0, mask_selection_length=length, seed=1)

    actual, expected = _both(make, lambda pre: pre(docs))
    _assert_same(actual, expected)
    a = [t for doc in docs for t in doc[:-1]]
    b = [t for doc in docs for t in doc[1:]]
    if not a:
        return  # (TensorFlow reads an empty `y` list as strings)
    labels = [i % 2 for i in range(len(a))]
    actual, expected = _both(make, lambda pre: pre((a, b), labels))
    _assert_same(actual, expected)


def test_bert_pretrainer_random_pairs_and_errors():
    docs = [[f"the {w} sat" for w in ("cat", "dog", "mat", "a")] for _ in range(30)]

    def make():
        return BertPretrainerPreprocessor(_bert_tokenizer(), sequence_length=12,
                                          seed=4)

    (ax, ay, aw), (ex, ey, ew) = _both(make, lambda pre: pre(docs))
    assert ay["nsp_logits"].shape == ey["nsp_logits"].shape == (90,)
    assert ay["nsp_logits"].dtype == ey["nsp_logits"].dtype == np.int32
    assert abs(ay["nsp_logits"].mean() - 0.5) < 4 * np.sqrt(0.25 / 90)
    _assert_same(aw["nsp_logits"], ew["nsp_logits"])
    for key in ("segment_ids", "padding_mask", "mask_positions"):
        assert ax[key].shape == ex[key].shape and ax[key].dtype == ex[key].dtype
    pre = make()
    for bad, message in [((["a"],), "got 1 segments"),
                         (["a", "b"], "string of rank 1"),
                         ((["a"], ["b"]), "labels")]:
        for name in ("tensorflow", "python"):
            with engine_scope(name), pytest.raises(ValueError, match=message):
                pre(bad)
    with engine_scope("python"), pytest.raises(ValueError, match="y=None"):
        pre(docs, [0])


@settings(max_examples=20)
@given(BATCH, st.booleans(), st.integers(2, 12), st.booleans(), st.booleans())
def test_gpt_causal_lm_preprocessor_matches_tensorflow(
        texts, scalar, length, add_start, add_end):
    x = texts[0] if scalar else texts

    def make():
        return GPTCausalLMPreprocessor(_gpt_tokenizer(), sequence_length=length,
                                       add_start_token=add_start,
                                       add_end_token=add_end)

    actual, expected = _both(make, lambda pre: pre(x))
    _assert_same(actual, expected)


def test_gpt_generate_preprocess_and_postprocess_match():
    prompts = ["the cat", "", "a dog sat on a log and the cat sat on the mat"]
    with pytest.warns(UserWarning, match="keeping its last"):
        actual, expected = _both(
            lambda: GPTCausalLMPreprocessor(_gpt_tokenizer(), sequence_length=8),
            lambda pre: pre.generate_preprocess(prompts, 6))
    assert actual == expected
    rows = [[0] + r for r in expected]
    actual, expected = _both(
        lambda: GPTCausalLMPreprocessor(_gpt_tokenizer(), sequence_length=8),
        lambda pre: pre.generate_postprocess(rows))
    assert actual == expected and expected[0] == "the cat"


@settings(max_examples=12)
@given(BATCH, st.integers(0, 2), st.integers(4, 16),
       st.sampled_from(["round_robin", "waterfall"]))
def test_classifier_preprocessors_match_tensorflow(texts, form, length, truncate):
    global GPT1_TOKENIZER
    if GPT1_TOKENIZER is None:
        GPT1_TOKENIZER = _gpt1_tokenizer()
    x = {0: texts, 1: (texts, texts[::-1]), 2: texts[0]}[form]
    y = np.arange(len(texts)) % 2
    weights = np.linspace(0.5, 1.0, len(texts)).astype("float32")
    for make in [
        lambda: BertClassifierPreprocessor(_bert_tokenizer(), sequence_length=length,
                                           truncate=truncate),
        lambda: GPTClassifierPreprocessor(GPT1_TOKENIZER, sequence_length=length,
                                          truncate=truncate),
        lambda: GPTClassifierPreprocessor(GPT1_TOKENIZER, sequence_length=length,
                                          truncate=truncate, num_segments=2,
                                          symmetric=True),
        lambda: GPTClassifierPreprocessor(GPT1_TOKENIZER, sequence_length=length,
                                          truncate=truncate, fine_tuning_tokens=False),
    ]:
        if form != 1 and getattr(make(), "symmetric", False):
            continue
        call = ((lambda pre: pre(x)) if form == 2
                else (lambda pre: pre(x, y, weights)))
        actual, expected = _both(make, call)
        _assert_same(actual, expected)


def test_without_tensorflow():
    out = check_without_tensorflow(f"""
        import numpy as np
        import kzoo
        from kzoo.testing import to_numpy

        vocabulary = {BERT_VOCABULARY!r}
        pre = kzoo.models.BertMaskedLMPreprocessor(
            kzoo.models.BertTokenizer(vocabulary=vocabulary), sequence_length=8,
            mask_selection_rate=1.0, mask_token_rate=1.0, random_token_rate=0.0,
            mask_selection_length=4, seed=1)
        x, y, w = pre(["the cat sat", "a dog"])
        print(to_numpy(x["token_ids"]).tolist(), to_numpy(y).tolist())
        x, w = pre.fill_mask_inputs(["the [MASK] sat"])
        print(to_numpy(x["mask_positions"]).tolist())
        pretrainer = kzoo.models.BertPretrainerPreprocessor(
            kzoo.models.BertTokenizer(vocabulary=vocabulary), sequence_length=8,
            seed=1)
        x, y, w = pretrainer([["the cat", "sat on", "a mat"], ["a dog", "ran"]])
        print(to_numpy(y["nsp_logits"]).shape)

        merges = {GPT_MERGES!r}
        gpt = kzoo.models.GPTCausalLMPreprocessor(
            kzoo.models.GPTTokenizer({GPT_VOCABULARY!r}, merges), sequence_length=6)
        x, y, w = gpt(["the cat", "a dog sat on a log"])
        print(to_numpy(w).tolist())
        rows = gpt.generate_preprocess(["the cat"], 16)
        print(gpt.generate_postprocess(rows))
    """)
    lines = out.split("\n")
    assert lines[0] == ("[[2, 4, 4, 4, 3, 0, 0, 0], [2, 4, 4, 3, 0, 0, 0, 0]] "
                        "[[5, 6, 8, 0], [12, 7, 0, 0]]")
    assert lines[1] == "[[2, 0, 0, 0]]"
    assert lines[2] == "(3,)"
    assert lines[3] == ("[[1.0, 1.0, 1.0, 0.0, 0.0, 0.0], "
                        "[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]")
    assert lines[4] == "['the cat']"
