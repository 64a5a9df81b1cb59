import string

import numpy as np
import pytest
import tensorflow as tf
from keras import ops
from transformers import BertTokenizer
from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

from kzoo.testing.test_case import assert_all_equal, run_preprocessing_layer_test
from kzoo.tokenizers.word_piece_tokenizer import WordPieceTokenizer

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHARS = list(string.ascii_letters + string.digits + string.punctuation
             + "éèçñüößαβγσςοδ東京タワー😀¿¡«»—…")
WORDS = ["the", "quick", "brown", "fox", "jump", "##s", "##ed", "##ing", "over",
         "lazy", "dog", "un", "##aff", "##able", "cafe", "café", "Café", "CAFE",
         "hello", "world", "Hello", "don", "naive", "naïve", "resume", "résumé",
         "3", "##.", "##14", "14", "οδος", "οδοσ"]
VOCABULARY = list(dict.fromkeys(SPECIAL + CHARS + ["##" + c for c in CHARS] + WORDS))

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello,world!! (un-affable) [x]",
    "café CAFÉ Café naïve résumé",
    "東京タワー is 東京",
    "  multiple   spaces\tand\ttabs\nnewlines  ",
    "",
    " ",
    "xyzzy§ ±∞ unknownword",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101,
    "é" * 101,
    "don't can't it's",
    "3.14 and 1,000,000",
    "emoji 😀😀 here",
    "zero\u200bwidth joiner\u200d here",
    "nbsp\u00a0here line\u2028sep",
    "ctrl\x07char\x00nul",
    "[CLS] hello [SEP] world[MASK]",
    "[cls] [UNK]",
    "ﬁ ß ǅ Ⅻ ①",
    "\u0301alone !\u0301",
    "a\u00adb soft hyphen, tab\u3000ideographic space",
    "𠀀 supplementary cjk \ufeffbom",
]
# Where Hugging Face's legacy (pure Python) tokenizer differs from its
# tokenizers-backed one, which kzoo follows: it applies NFC before splitting
# and lowercases a final capital sigma to "ς".
LEGACY_DIFFERS = ["ΟΔΟΣ", "e\u0301", "Cafe\u0301"]


@pytest.fixture(scope="module")
def vocabulary_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    return str(path)


def _byte_offsets(text, char_offsets):
    return [(len(text[:a].encode()), len(text[:b].encode())) for a, b in char_offsets]


@pytest.mark.parametrize("lowercase", [True, False])
@pytest.mark.parametrize("strip_accents", [None, True, False])
def test_matches_hugging_face(vocabulary_file, lowercase, strip_accents):
    reference = BertTokenizer(vocabulary_file, do_lower_case=lowercase,
                              strip_accents=strip_accents)
    legacy = BertTokenizerLegacy(vocabulary_file, do_lower_case=lowercase,
                                 strip_accents=strip_accents)
    tokenizer = WordPieceTokenizer(vocabulary_file, lowercase=lowercase,
                                   strip_accents=strip_accents,
                                   special_tokens_in_strings=True)
    texts = SENTENCES + LEGACY_DIFFERS
    outputs = tokenizer.tokenize_with_offsets(tf.constant(texts))
    # Plain `tokenize` takes a faster path (whole-string normalization).
    fast_ids = tokenizer(tf.constant(texts))
    for i, text in enumerate(texts):
        expected = reference(text, add_special_tokens=False,
                             return_offsets_mapping=True)
        assert outputs["token_ids"][i] == expected["input_ids"], text
        assert fast_ids[i] == expected["input_ids"], text
        assert (list(zip(outputs["start_offsets"][i], outputs["end_offsets"][i]))
                == _byte_offsets(text, expected["offset_mapping"])), text
        if text not in LEGACY_DIFFERS:
            ids = legacy(text, add_special_tokens=False)["input_ids"]
            assert outputs["token_ids"][i] == ids, text


def test_special_tokens_not_in_strings(vocabulary_file):
    reference = BertTokenizer(vocabulary_file)
    tokenizer = WordPieceTokenizer(vocabulary_file)
    text = "[CLS] hello [SEP] world[MASK]"
    expected = reference(text, add_special_tokens=False,
                         split_special_tokens=True)["input_ids"]
    assert_all_equal(tokenizer(text), expected)
    assert tokenizer.cls_token_id not in expected


def test_offsets_point_at_the_original_text():
    tokenizer = WordPieceTokenizer(VOCABULARY)
    text = "  The CAFÉ's ÉCLAT fox-jumps!"
    outputs = tokenizer.tokenize_with_offsets(text)
    starts, ends = (np.asarray(ops.convert_to_numpy(outputs[k])).tolist()
                    for k in ("start_offsets", "end_offsets"))
    pieces = [text.encode()[a:b].decode() for a, b in zip(starts, ends)]
    assert pieces == ["The", "CAFÉ", "'", "s", "É", "C", "L", "A", "T", "fox", "-",
                      "jump", "s", "!"]
    ids = ops.convert_to_numpy(outputs["token_ids"]).tolist()
    assert [tokenizer.id_to_token(i) for i in ids] == [
        "the", "cafe", "'", "s", "e", "##c", "##l", "##a", "##t", "fox", "-",
        "jump", "##s", "!"]


@pytest.mark.parametrize("sequence_length", [None, 6])
def test_preprocessing_layer(sequence_length):
    run_preprocessing_layer_test(
        WordPieceTokenizer,
        {"vocabulary": VOCABULARY, "sequence_length": sequence_length,
         "special_tokens_in_strings": True},
        ["The quick fox!", "", "café [SEP] 東京", "a b c d e f g h"],
    )


def test_tf_data_offsets_match_eager():
    tokenizer = WordPieceTokenizer(VOCABULARY, sequence_length=8)
    texts = ["The quick fox!", "", "naïve CAFÉ"]
    eager = tokenizer.tokenize_with_offsets(texts)
    batch = next(iter(tf.data.Dataset.from_tensor_slices(texts).batch(3)
                      .map(tokenizer.tokenize_with_offsets)))
    assert_all_equal(batch, eager)


def test_dense_output_pads_and_truncates():
    tokenizer = WordPieceTokenizer(VOCABULARY, sequence_length=4)
    the, fox = VOCABULARY.index("the"), VOCABULARY.index("fox")
    quick, dot = VOCABULARY.index("quick"), VOCABULARY.index(".")
    assert_all_equal(tokenizer(["the fox", "the quick fox. the", ""]),
                     [[the, fox, 0, 0], [the, quick, fox, dot], [0, 0, 0, 0]])
    assert_all_equal(tokenizer("fox"), [fox, 0, 0, 0])


def test_detokenize_round_trip():
    tokenizer = WordPieceTokenizer(VOCABULARY, sequence_length=12)
    texts = ["The quick fox jumped!", "unaffable café", ""]
    ids = tokenizer(texts)
    assert tokenizer.detokenize(ids) == ["the quick fox jumped !", "unaffable cafe", ""]
    ragged = WordPieceTokenizer(VOCABULARY)(texts)
    assert tokenizer.detokenize(ragged) == tokenizer.detokenize(ids)
    assert tokenizer.detokenize(ragged[0]) == "the quick fox jumped !"
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(3).map(tokenizer)
    batch = next(iter(dataset.map(tokenizer.detokenize)))
    assert [t.decode() for t in batch.numpy()] == tokenizer.detokenize(ids)


def test_scalar_and_empty_inputs():
    tokenizer = WordPieceTokenizer(VOCABULARY)
    assert_all_equal(tokenizer("fox"), [VOCABULARY.index("fox")])
    assert tokenizer([]) == []
    assert tokenizer([""]) == [[]]
    assert tokenizer.detokenize([[]]) == [""]


def test_invalid_utf8_is_replaced(vocabulary_file):
    tokenizer = WordPieceTokenizer(VOCABULARY)
    # Invalid bytes become U+FFFD, which BERT deletes.
    expected = BertTokenizer(vocabulary_file)("caf\ufffd fox", add_special_tokens=False)
    assert_all_equal(tokenizer(tf.constant([b"caf\xff fox"])), [expected["input_ids"]])


def test_vocabulary_accessors(vocabulary_file):
    tokenizer = WordPieceTokenizer()
    tokenizer.set_vocabulary(vocabulary_file)
    assert tokenizer.get_vocabulary() == VOCABULARY
    assert tokenizer.vocabulary_size() == len(VOCABULARY)
    assert tokenizer.token_to_id("fox") == VOCABULARY.index("fox")
    assert tokenizer.id_to_token(VOCABULARY.index("##s")) == "##s"
    ids = (tokenizer.pad_token_id, tokenizer.oov_token_id, tokenizer.cls_token_id,
           tokenizer.sep_token_id, tokenizer.mask_token_id)
    assert ids == (0, 1, 2, 3, 4)
    small = WordPieceTokenizer(["[UNK]", "a"])
    assert (small.pad_token_id, small.cls_token_id, small.oov_token_id) == (
        None, None, 0)
    padded = WordPieceTokenizer(["[UNK]", "a"], sequence_length=3)("a")
    assert_all_equal(padded, [1, 0, 0])  # no [PAD]: padded with 0


def test_errors():
    with pytest.raises(ValueError, match=r"oov_token '\[UNK\]'"):
        WordPieceTokenizer(["a", "b"])
    with pytest.raises(ValueError, match="duplicate"):
        WordPieceTokenizer(["[UNK]", "a", "a"])
    with pytest.raises(TypeError, match="`lowercase`"):
        WordPieceTokenizer(VOCABULARY, lowercase="yes")
    with pytest.raises(ValueError, match="No vocabulary"):
        WordPieceTokenizer()(["a"])
    tokenizer = WordPieceTokenizer(VOCABULARY)
    with pytest.raises(TypeError, match="`inputs` must be strings"):
        tokenizer.tokenize(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="1-D batch"):
        tokenizer(tf.constant([["a"]]))
    with pytest.raises(TypeError, match="Item 2 of the text batch is NoneType None"):
        tokenizer(["a", "b", None])
    with pytest.raises(TypeError, match="Item 0 of the text batch is int 7"):
        tokenizer([7, "b"])
    with pytest.raises(tf.errors.InvalidArgumentError, match="vocabulary size"):
        tokenizer.detokenize([[len(VOCABULARY)]])
