"""The Python engine of the question-answering, token-classification and
multiple-choice preprocessors equals TensorFlow's, on fuzzed input.

Each property draws texts (multi-byte letters, CJK, emoji, unknown and
over-long words, odd whitespace), word lists, labels, answer spans inside
(and outside) contexts and sequence lengths short enough to force
truncation, and compares every output, dtype included, of the two engines.
"""

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.models.bert.bert_multiple_choice_preprocessor import (
    BertMultipleChoicePreprocessor,
)
from kzoo.models.bert.bert_question_answerer_preprocessor import (
    BertQuestionAnswererPreprocessor,
)
from kzoo.models.bert.bert_token_classifier_preprocessor import (
    BertTokenClassifierPreprocessor,
)
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.gpt.gpt_multiple_choice_preprocessor import (
    GPTMultipleChoicePreprocessor,
)
from kzoo.models.gpt.gpt_tokenizer import DELIMITER_TOKEN, EXTRACT_TOKEN, START_TOKEN
from kzoo.preprocessing.engine import engine_scope
from kzoo.testing import check_without_tensorflow
from kzoo.testing import on_both_engines

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", START_TOKEN,
              DELIMITER_TOKEN, EXTRACT_TOKEN, "the", "where", "is", "cafe", "?",
              ".", ",", "!", "le", "est", "a", "pa", "##ris", "uber", "北", "京",
              "city", "what", "big", "play", "##ing", "##s", "un", "##aff",
              "##able", "u", "s", "naive", "john", "in", "ab", "##b", "1", "##2",
              "e", "##e", "dog", "sat", "down"]

WORDS = ["the", "The", "café", "Paris", "北京", "Über", "playing", "plays",
         "unaffable", "U.S.", "naïve", "John", "in", "?", ".", ",", "!", "big",
         "city", "xyzzy", "abbb", "é", "🙂", "日本", "12", "[SEP]", "dog", "sat",
         "down", "a" * 120, "\u00ad", "e\u0301", "ß"]
SEPARATORS = [" ", " ", "  ", "\t", "\n", "", "\u3000", "\xa0", "\x0b", "\x1c"]
WORD = st.one_of(st.sampled_from(WORDS), st.text(max_size=4))
TEXT = st.lists(st.tuples(WORD, st.sampled_from(SEPARATORS)), max_size=10).map(
    lambda parts: "".join(w + s for w, s in parts))

_tokenizer = []


def tokenizer():
    if not _tokenizer:
        _tokenizer.append(BertTokenizer(vocabulary=VOCABULARY))
    return _tokenizer[0]


def both_engines(fn):
    """``(fn() on the Python engine, fn() on the TensorFlow engine)``."""
    tensorflow, python = on_both_engines(fn)
    return python, tensorflow


def assert_same(actual, expected, where="output"):
    """Equal structure, values and dtypes (outputs as numpy)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), where
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}[{key!r}]")
        return
    if isinstance(expected, (tuple, list)) and not isinstance(expected[0] if expected
                                                               else None, str):
        assert type(actual) is type(expected), where
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{where}[{i}]")
        return
    if isinstance(expected, (list, str)):
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"
        return
    actual = np.asarray(keras.ops.convert_to_numpy(actual))
    expected = np.asarray(keras.ops.convert_to_numpy(expected))
    assert actual.dtype == expected.dtype, f"{where}: {actual.dtype} != {expected.dtype}"
    np.testing.assert_array_equal(actual, expected, err_msg=where)


def assert_same_error(fn):
    """Both engines raise the same kind of error with the same message (up
    to what it says it got: a tensor on one engine, a list on the other)."""
    errors = []
    for name in ("tensorflow", "python"):
        with engine_scope(name):
            with pytest.raises((ValueError, TypeError)) as info:
                fn()
        errors.append(info.value)
    assert type(errors[1]) is type(errors[0]), errors
    assert str(errors[1]).split(", got")[0] == str(errors[0]).split(", got")[0], errors


# --- question answering ---
@st.composite
def qa_examples(draw):
    examples = []
    for _ in range(draw(st.integers(1, 8))):
        question, context = draw(TEXT), draw(TEXT)
        start = draw(st.integers(-1, len(context)))
        end = draw(st.integers(max(start, 0), len(context)))
        examples.append((question, context, max(start, 0), start, end))
    return examples


# A TensorFlow eager call is slow: fewer examples of larger
# batches.
@settings(max_examples=30)
@given(examples=qa_examples(), sequence_length=st.integers(4, 24),
       weighted=st.booleans())
def test_question_answerer_python_matches_tensorflow(examples, sequence_length,
                                                      weighted):
    pre = BertQuestionAnswererPreprocessor(tokenizer(),
                                           sequence_length=sequence_length)
    x = ([q for q, *_ in examples], [c for _, c, *_ in examples])
    y = {"answer_start": [s for *_, s, _ in examples],
         "text": [c[a:e] for _, c, a, _, e in examples]}
    weights = np.linspace(0.5, 1.5, len(examples)) if weighted else None
    actual, expected = both_engines(lambda: pre(x, y, weights))
    assert_same(actual, expected, "(x, y, w)")
    with engine_scope("python"):
        assert_same(pre(x), expected[0], "x")
    assert_same(*both_engines(lambda: pre.context_offsets(x)), "context_offsets")


def test_question_answerer_nested_answers_and_bad_inputs():
    pre = BertQuestionAnswererPreprocessor(tokenizer(), sequence_length=12)
    x = (["Where is the café?", "What?"], ["Le café est à Paris.", "北京 city"])
    # SQuAD's answers hold a list per example.
    y = {"answer_start": [[x[1][0].index("Paris")], [0]], "text": [["Paris"], ["北京"]]}
    actual, expected = both_engines(lambda: pre(x, y))
    assert_same(actual, expected)
    # Paris is cut off; [CLS] what ? [SEP] 北 京 city [SEP].
    assert keras.ops.convert_to_numpy(actual[1]["start_logits"]).tolist() == [0, 4]
    assert_same_error(lambda: pre(x[0]))
    assert_same_error(lambda: pre(("Where?", "Here.")))
    assert_same_error(lambda: pre(x, {"text": ["a", "b"]}))
    assert_same_error(lambda: pre(x, None, [1.0, 1.0]))


# --- token classification ---
WORD_LISTS = st.lists(st.lists(WORD, max_size=8), min_size=1, max_size=8)


@st.composite
def labelled_words(draw):
    words = draw(WORD_LISTS)
    labels = [draw(st.lists(st.sampled_from([-100, 0, 1, 2, 5]),
                            min_size=len(w), max_size=len(w))) for w in words]
    kind = draw(st.sampled_from(["none", "sentence", "word"]))
    if kind == "sentence":
        weights = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]),
                                min_size=len(words), max_size=len(words)))
    elif kind == "word":
        weights = [draw(st.lists(st.sampled_from([0.0, 0.25, 1.0, 3.0]),
                                 min_size=len(w), max_size=len(w))) for w in words]
    else:
        weights = None
    return words, labels, weights


@settings(max_examples=30)
@given(data=labelled_words(), sequence_length=st.integers(2, 20))
def test_token_classifier_python_matches_tensorflow(data, sequence_length):
    words, labels, weights = data
    pre = BertTokenClassifierPreprocessor(tokenizer(),
                                          sequence_length=sequence_length)
    actual, expected = both_engines(lambda: pre(words, labels, weights))
    assert_same(actual, expected, "(x, y, w)")
    with engine_scope("python"):
        assert_same(pre(words), expected[0], "x")
    assert_same(*both_engines(lambda: pre.word_ids(words)), "word_ids")


@settings(max_examples=30)
@given(sentences=st.lists(TEXT, min_size=1, max_size=8),
       sequence_length=st.integers(2, 20))
def test_token_classifier_sentences_split_on_whitespace_as_tensorflow(
        sentences, sequence_length):
    pre = BertTokenClassifierPreprocessor(tokenizer(),
                                          sequence_length=sequence_length)
    assert_same(*both_engines(lambda: pre.split_words(sentences)), "split_words")
    assert_same(*both_engines(lambda: pre.word_ids(sentences)), "word_ids")


def test_token_classifier_dense_inputs_empty_batches_and_bad_inputs():
    pre = BertTokenClassifierPreprocessor(tokenizer(), sequence_length=6)
    words = np.array([["John", "plays"], ["in", ""]])
    labels = np.array([[1, 2], [0, -100]])
    assert_same(*both_engines(lambda: pre(words, labels)))
    assert_same(*both_engines(lambda: pre([[], []], [[], []])))
    actual, expected = both_engines(lambda: pre([]))
    assert_same(actual, expected)
    assert tuple(actual["token_ids"].shape) == (0, 6)
    assert_same_error(lambda: pre([["a", "b"]], [[1]]))
    assert_same_error(lambda: pre([["a", "b"]], [1, 2]))
    assert_same_error(lambda: pre([["a"]], None, [1.0]))
    assert_same_error(lambda: pre("one sentence"))


# --- multiple choice ---
@st.composite
def choices(draw):
    batch = draw(st.integers(1, 6))
    num_choices = draw(st.integers(1, 4))
    contexts = draw(st.lists(TEXT, min_size=batch, max_size=batch))
    endings = [draw(st.lists(TEXT, min_size=num_choices, max_size=num_choices))
               for _ in range(batch)]
    if draw(st.booleans()):  # one [batch] batch per ending
        return (contexts,) + tuple([row[i] for row in endings]
                                   for i in range(num_choices))
    return contexts, endings


@settings(max_examples=30)
@given(x=choices(), sequence_length=st.integers(3, 20),
       truncate=st.sampled_from(["round_robin", "waterfall"]),
       family=st.sampled_from([BertMultipleChoicePreprocessor,
                               GPTMultipleChoicePreprocessor]))
def test_multiple_choice_python_matches_tensorflow(x, sequence_length, truncate,
                                                   family):
    pre = family(tokenizer(), sequence_length=sequence_length, truncate=truncate)
    labels = np.zeros(len(x[0]), "int32")
    actual, expected = both_engines(lambda: pre(x, labels))
    assert_same(actual, expected, "(x, y)")
    with engine_scope("python"):
        assert_same(pre(x), expected[0], "x")


def test_multiple_choice_bad_inputs():
    pre = BertMultipleChoicePreprocessor(tokenizer(), sequence_length=8,
                                         num_choices=2)
    assert_same_error(lambda: pre((["a", "b"], [["x", "y"], ["z"]])))
    assert_same_error(lambda: pre((["a"], [["x", "y", "z"]])))
    assert_same_error(lambda: pre((["a"],)))
    assert_same_error(lambda: pre(["a", "b", "c"]))


# --- no TensorFlow at all ---
def test_the_three_preprocessors_run_without_tensorflow():
    qa = (["Where is the café?", "What?"], ["Le café est à Paris.", "Über 北京!"])
    answers = {"answer_start": [qa[1][0].index("Paris"), qa[1][1].index("北京")],
               "text": ["Paris", "北京"]}
    words = [["John", "plays", "in", "Paris"], ["unaffable", "naïve"]]
    labels = [[1, 0, 0, 2], [1, -100]]
    mc = (["The dog", "She"], [["sat down", "is big"], ["sat", "is e"]])

    def run_all():
        q = BertQuestionAnswererPreprocessor(tokenizer(), sequence_length=12)
        t = BertTokenClassifierPreprocessor(tokenizer(), sequence_length=7)
        m = BertMultipleChoicePreprocessor(tokenizer(), sequence_length=8)
        x, y = q(qa, answers)
        return {
            "qa": {**x, **y, **q.context_offsets(qa)},
            "tc": dict(zip(("x", "y", "w"), t(words, labels)),
                       word_ids=t.word_ids(words)),
            "mc": m(mc),
        }

    with engine_scope("tensorflow"):
        expected = keras.tree.map_structure(
            lambda v: keras.ops.convert_to_numpy(v).tolist(), run_all())
    check_without_tensorflow(f"""
        import keras
        from kzoo.models.bert.bert_multiple_choice_preprocessor import (
            BertMultipleChoicePreprocessor)
        from kzoo.models.bert.bert_question_answerer_preprocessor import (
            BertQuestionAnswererPreprocessor)
        from kzoo.models.bert.bert_token_classifier_preprocessor import (
            BertTokenClassifierPreprocessor)
        from kzoo.models.bert.bert_tokenizer import BertTokenizer

        def tokenizer():
            return BertTokenizer(vocabulary={VOCABULARY!r})

        qa, answers = {qa!r}, {answers!r}
        words, labels, mc = {words!r}, {labels!r}, {mc!r}
        q = BertQuestionAnswererPreprocessor(tokenizer(), sequence_length=12)
        t = BertTokenClassifierPreprocessor(tokenizer(), sequence_length=7)
        m = BertMultipleChoicePreprocessor(tokenizer(), sequence_length=8)
        x, y = q(qa, answers)
        got = {{
            "qa": {{**x, **y, **q.context_offsets(qa)}},
            "tc": dict(zip(("x", "y", "w"), t(words, labels)),
                       word_ids=t.word_ids(words)),
            "mc": m(mc),
        }}
        got = keras.tree.map_structure(
            lambda v: keras.ops.convert_to_numpy(v).tolist(), got)
        assert got == {expected!r}, got
    """)


def test_question_answerer_answers_the_same_on_both_engines():
    from kzoo.models.bert.bert_backbone import BertBackbone
    from kzoo.models.bert.bert_question_answerer import BertQuestionAnswerer

    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1,
                            num_heads=2, hidden_dim=8, intermediate_dim=16,
                            max_sequence_length=16)
    task = BertQuestionAnswerer(backbone, preprocessor=BertQuestionAnswererPreprocessor(
        tokenizer(), sequence_length=16))
    questions = ["Where is the café?", "What?", "Big?"]
    contexts = ["Le café est à Paris.", "Über 北京, the big city!", ""]
    actual, expected = both_engines(lambda: task.answer(questions, contexts,
                                                        max_answer_length=4))
    assert actual == expected
    for answer, context in zip(actual, contexts):
        assert context[answer["start"]:answer["end"]] == answer["text"]
