"""Finding the target word by character offsets."""

import pytest

from kzoo.analysis.targets import check_span, find_all, find_word, overlapping, split_tokens


def test_whole_words_only_and_case_ignored():
    sentence = "The riverbank, Bank-holiday, banking, river-bank: a BANK (bank's)."
    assert find_all(sentence, "bank") == [(52, 56), (58, 62)]
    assert sentence[52:56] == "BANK" and sentence[58:62] == "bank"
    assert find_word("I play.", "play") == (2, 6)
    assert find_word("a  bank ", " bank ") == (3, 7)


def test_absent_word_names_word_and_sentence():
    with pytest.raises(ValueError, match=r"'bank' is not in the sentence 'the riverbank'"):
        find_word("the riverbank", "bank")


def test_twice_needs_an_index():
    sentence = "the bank near the bank"
    with pytest.raises(ValueError, match=r"occurs 2 times .* pass an index \(0 to 1\)"):
        find_word(sentence, "bank")
    assert find_word(sentence, "bank", index=1) == (18, 22)
    assert find_word(sentence, "bank", index=-1) == (18, 22)
    with pytest.raises(ValueError, match="index=2 but 'bank' occurs 2 times"):
        find_word(sentence, "bank", index=2)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`word` is empty"):
        find_word("a bank", "  ")
    with pytest.raises(TypeError, match="must be str"):
        find_word(["a", "bank"], "bank")
    with pytest.raises(ValueError, match="not a non-empty character range"):
        check_span("a bank", (2, 9))


def test_tokens_and_overlaps():
    tokens = split_tokens("Café's bank, (river-side).")
    assert [t[0] for t in tokens] == ["Café's", "bank", ",", "(", "river-side", ")", "."]
    assert tokens[1][1:] == (7, 11)
    spans = [t[1:] for t in tokens]
    assert overlapping(spans, 7, 11) == [1]
    assert overlapping(spans, 5, 12) == [0, 1, 2]  # partial overlaps count
    assert overlapping(spans, 11, 11) == []
