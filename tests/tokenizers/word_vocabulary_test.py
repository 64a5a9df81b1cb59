import collections
import os

import gensim
import pytest
import tensorflow as tf

from kzoo.tokenizers.word_tokenizer import WordTokenizer
from kzoo.tokenizers.word_vocabulary import compute_word_vocabulary

LEE = os.path.join(
    os.path.dirname(gensim.__file__), "test", "test_data", "lee_background.cor"
)


def lee_lines(n=60):
    with open(LEE, encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(n)]


def python_vocabulary(lines, min_count, max_size=None, lowercase=False):
    """By hand: specials first, then (-count, first occurrence), cut."""
    words = [w for line in lines for w in (line.lower() if lowercase else line).split()]
    counter = collections.Counter(words)
    kept = [w for w, n in counter.items() if n >= min_count]
    kept.sort(key=lambda w: -counter[w])
    if max_size is not None:
        kept = kept[: max_size - 1]
    oov = len(words) - sum(counter[w] for w in kept)
    return ["[UNK]"] + kept, [oov] + [counter[w] for w in kept]


@pytest.mark.parametrize("min_count, max_size, lowercase",
                         [(1, None, False), (3, None, True), (2, 50, False)])
def test_matches_a_python_count_of_real_text(min_count, max_size, lowercase):
    lines = lee_lines()
    expected = python_vocabulary(lines, min_count, max_size, lowercase)
    actual = compute_word_vocabulary(
        lines, min_count=min_count, max_size=max_size, lowercase=lowercase)
    assert actual == expected
    assert sum(actual[1]) == sum(len(line.split()) for line in lines)


def test_file_and_dataset_give_the_same_result(tmp_path):
    lines = lee_lines(30)
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = compute_word_vocabulary(lines, min_count=2)
    assert compute_word_vocabulary(str(path), min_count=2) == expected
    assert compute_word_vocabulary(path, min_count=2) == expected
    ds = tf.data.Dataset.from_tensor_slices(lines)
    assert compute_word_vocabulary(ds, min_count=2) == expected
    assert compute_word_vocabulary(ds.batch(7), min_count=2) == expected


def test_ties_keep_first_occurrence_and_specials_come_first():
    vocabulary, counts = compute_word_vocabulary(
        ["b a c [PAD]", "c a b d"], special_tokens=("[PAD]", "[UNK]"),
        max_size=5)
    assert vocabulary == ["[PAD]", "[UNK]", "b", "a", "c"]
    assert counts == [1, 1, 2, 2, 2]  # [UNK] counts the cut word "d"


def test_invalid_utf8_is_counted_as_the_tokenizer_sees_it(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"caf\xe9 caf\xe9 ok\n")
    vocabulary, counts = compute_word_vocabulary(str(path))
    assert vocabulary == ["[UNK]", "caf\ufffd", "ok"] and counts == [0, 2, 1]
    tokenizer = WordTokenizer(vocabulary=vocabulary)
    assert tokenizer(tf.constant([b"caf\xe9 ok"])) == [[1, 2]]


def test_errors_say_what_to_change(tmp_path):
    with pytest.raises(ValueError, match="occurs 2 times; lower `min_count` to <= 2"):
        compute_word_vocabulary(["a a b"], min_count=3)
    with pytest.raises(ValueError, match="contains no words"):
        compute_word_vocabulary(["", "  "])
    with pytest.raises(FileNotFoundError, match="is not a file"):
        compute_word_vocabulary(str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="`max_size`"):
        compute_word_vocabulary(["a"], max_size=1)
    with pytest.raises(ValueError, match="`oov_token`"):
        compute_word_vocabulary(["a"], special_tokens=("[PAD]",))
    with pytest.raises(TypeError, match="`data`"):
        compute_word_vocabulary(tf.data.Dataset.range(3))
