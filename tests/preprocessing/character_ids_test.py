import numpy as np
import pytest
import tensorflow as tf

from kzoo.preprocessing.character_ids import CharacterIds
from kzoo.testing.test_case import assert_all_equal
from kzoo.testing.test_case import run_preprocessing_layer_test


def reference_word(word, max_word_length=50):
    """AllenNLP's ELMoCharacterMapper.convert_word_to_char_ids, by hand."""
    ids = [260] * max_word_length
    ids[0] = 258
    if word in ("<S>", "</S>"):
        ids[1], ids[2] = (256 if word == "<S>" else 257), 259
    else:
        data = word.encode("utf-8")[: max_word_length - 2]
        ids[1:len(data) + 1] = list(data)
        ids[len(data) + 1] = 259
    return [i + 1 for i in ids]


def reference(sentences, max_word_length=50, boundaries=False, length=None):
    """bilm-tf's Batcher: tokens (+ <S>, </S>), padded with zero rows."""
    rows = [(["<S>"] + s + ["</S>"]) if boundaries else s for s in sentences]
    if length is not None and boundaries:
        rows = [(["<S>"] + s[: length - 2] + ["</S>"]) for s in sentences]
    t = length if length is not None else max([len(r) for r in rows] + [0])
    ids = np.zeros((len(rows), t, max_word_length), "int32")
    mask = np.zeros((len(rows), t), bool)
    for b, row in enumerate(rows):
        for i, word in enumerate(row[:t]):
            ids[b, i] = reference_word(word, max_word_length)
            mask[b, i] = True
    return {"character_ids": ids, "padding_mask": mask}


SENTENCES = [
    "The quick brown fox",
    "héllo wörld ✓ 日本語 " + "x" * 60,
    "",
    "a <S> b </S>",
    "€" * 20,  # 60 bytes: cut to 48, inside no character
    "a" + "é" * 30,  # 61 bytes: the cut splits a 2-byte character
]


def test_matches_the_reference_encoding():
    expected = reference([s.split() for s in SENTENCES])
    assert expected["character_ids"].shape == (6, 5, 50)
    layer = CharacterIds()
    assert_all_equal(layer(SENTENCES), expected)
    # Pre-split tokens are encoded as they are.
    tokens = [["two words", ""], ["x"]]
    assert_all_equal(layer(tokens), reference(tokens))
    assert_all_equal(layer(tf.ragged.constant(tokens)), reference(tokens))


def test_a_60_byte_word_is_cut_to_48_bytes():
    word = "abcdefghij" * 6
    ids = np.asarray(CharacterIds()([word])["character_ids"])[0, 0]
    assert ids.tolist() == [259] + [b + 1 for b in word.encode()[:48]] + [260]


@pytest.mark.parametrize("boundaries, length", [(True, None), (True, 4), (False, 3)])
def test_sentence_boundaries_and_sequence_length(boundaries, length):
    layer = CharacterIds(max_word_length=8, add_sentence_boundaries=boundaries,
                         sequence_length=length)
    expected = reference([s.split() for s in SENTENCES], 8, boundaries, length)
    assert_all_equal(layer(SENTENCES), expected)


def test_preprocessing_layer_checks():
    run_preprocessing_layer_test(
        CharacterIds,
        {"max_word_length": 10, "add_sentence_boundaries": True},
        ["one two", "three", ""],
        expected_output=reference([["one", "two"], ["three"], []], 10, True),
    )


def test_tf_data_on_every_backend():
    layer = CharacterIds(sequence_length=6)
    ds = tf.data.Dataset.from_tensor_slices(SENTENCES).batch(4).map(layer)
    batches = list(ds)
    expected = reference([s.split() for s in SENTENCES], length=6)
    for key in ("character_ids", "padding_mask"):
        actual = np.concatenate([b[key].numpy() for b in batches])
        np.testing.assert_array_equal(actual, expected[key])


def test_invalid_utf8_is_replaced_first():
    ids = np.asarray(CharacterIds()(tf.constant([b"ab\xffcd"]))["character_ids"])
    assert ids[0, 0].tolist() == reference_word("ab\ufffdcd")


def test_empty_inputs_give_well_shaped_outputs():
    layer = CharacterIds()
    out = layer(["", " "])
    assert tuple(out["character_ids"].shape) == (2, 0, 50)
    assert tuple(out["padding_mask"].shape) == (2, 0)
    assert tuple(layer([])["character_ids"].shape) == (0, 0, 50)
    assert tuple(CharacterIds(sequence_length=3)([])["character_ids"].shape) == (0, 3, 50)
    single = layer("hi")  # one sentence: no batch axis
    assert_all_equal(single, {k: v[0] for k, v in reference([["hi"]]).items()})


def test_bad_arguments_and_inputs():
    with pytest.raises(ValueError, match="`max_word_length` must be >= 3"):
        CharacterIds(max_word_length=2)
    with pytest.raises(ValueError, match="`sequence_length` must be >= 2"):
        CharacterIds(add_sentence_boundaries=True, sequence_length=1)
    with pytest.raises(TypeError, match="`add_sentence_boundaries`"):
        CharacterIds(add_sentence_boundaries=1)
    with pytest.raises(TypeError, match="`inputs` must be strings"):
        CharacterIds()(np.array([1, 2]))
