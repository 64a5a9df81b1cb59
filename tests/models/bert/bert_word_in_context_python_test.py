"""BertWordInContext on the Python preprocessing engine: the same pieces,
positions and vectors as on TensorFlow's, and no TensorFlow needed."""

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.models.bert.bert_word_in_context import BertWordInContext
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.preprocessing.engine import engine_scope
from kzoo.testing import check_without_tensorflow

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "river",
              "bank", "un", "##aff", "##able", "cafe", "by", "money", "of", "lend",
              "##s", ",", ".", "play", "##ed", "北", "京"]
WORDS = ["the", "The", "bank", "banks", "river", "café", "unaffable", "lends",
         "played", "北京", "🙂", "xyzzy", ",", ".", "naïve", "a" * 120, "\u00ad"]
SEPARATORS = [" ", "  ", "\t", "\u3000", "\xa0", ""]


def backbone():
    keras.utils.set_random_seed(0)
    return BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=2, num_heads=2,
                        hidden_dim=8, intermediate_dim=16, max_sequence_length=16)


_wic = []


def word_in_context():
    if not _wic:
        _wic.append(BertWordInContext(backbone(), BertTokenizer(VOCABULARY)))
    return _wic[0]


@st.composite
def sentences_and_spans(draw):
    """Sentences of a few words and the span of one of them (or of any
    non-empty character range, which may hold no word piece)."""
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        parts = draw(st.lists(st.tuples(st.sampled_from(WORDS),
                                        st.sampled_from(SEPARATORS)),
                              min_size=1, max_size=6))
        sentence, spans = "", []
        for word, separator in parts:
            spans.append((len(sentence), len(sentence) + len(word)))
            sentence += word + separator
        if draw(st.booleans()):  # a word's span
            span = draw(st.sampled_from(spans))
        else:  # any range
            start = draw(st.integers(0, len(sentence) - 1))
            span = (start, draw(st.integers(start + 1, len(sentence))))
        rows.append((sentence, span))
    return rows


def _pack(rows):
    try:
        token_ids, padding_mask, positions = word_in_context()._pack(
            [s for s, _ in rows], [span for _, span in rows])
    except ValueError as error:
        return str(error)
    return token_ids.tolist(), padding_mask.tolist(), positions


@settings(max_examples=30, deadline=None)
@given(rows=sentences_and_spans())
def test_pieces_and_positions_equal_tensorflow(rows):
    with engine_scope("tensorflow"):
        expected = _pack(rows)
    with engine_scope("python"):
        actual = _pack(rows)
    assert actual == expected


def test_vectors_without_tensorflow(tmp_path):
    sentences = ["the bank of the river", "a café by the unaffable bank .",
                 "the bank lends money , the bank"]
    targets = [("bank", None), ("unaffable", None), ("bank", 1)]
    wic = word_in_context()
    with engine_scope("tensorflow"):
        expected = np.stack([wic.word_vectors(s, w, i)
                             for s, (w, i) in zip(sentences, targets)])
    with engine_scope("python"):
        python = np.stack([wic.word_vectors(s, w, i)
                           for s, (w, i) in zip(sentences, targets)])
    np.testing.assert_array_equal(python, expected)
    weights = str(tmp_path / "bert.weights.h5")
    wic.backbone.save_weights(weights)
    np.save(tmp_path / "expected.npy", expected)
    check_without_tensorflow(f"""
        import numpy as np
        from kzoo.models.bert.bert_word_in_context import BertWordInContext
        from kzoo.models.bert.bert_backbone import BertBackbone
        from kzoo.models.bert.bert_tokenizer import BertTokenizer

        backbone = BertBackbone(vocabulary_size={len(VOCABULARY)}, num_layers=2,
                                num_heads=2, hidden_dim=8, intermediate_dim=16,
                                max_sequence_length=16)
        backbone.load_weights({weights!r})
        wic = BertWordInContext(backbone, BertTokenizer({VOCABULARY!r}))
        got = np.stack([wic.word_vectors(s, w, i)
                        for s, (w, i) in zip({sentences!r}, {targets!r})])
        np.testing.assert_allclose(got, np.load({str(tmp_path / "expected.npy")!r}),
                                   atol=1e-6)
    """)


def test_no_piece_error_is_the_same_on_both_engines():
    wic = word_in_context()
    messages = []
    for name in ("tensorflow", "python"):
        with engine_scope(name), pytest.raises(ValueError) as info:
            wic.vectors_at(["the \u00ad bank"], [(4, 5)])  # a deleted character
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "covers characters 4-5" in messages[0]
