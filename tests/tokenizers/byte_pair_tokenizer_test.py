import json
import random

import pytest
import tensorflow as tf
from tokenizers import ByteLevelBPETokenizer
from transformers import GPT2Tokenizer

from kzoo.testing.test_case import assert_all_equal, run_preprocessing_layer_test
from kzoo.tokenizers.byte_pair_tokenizer import BytePairTokenizer, bytes_to_unicode

CORPUS = [
    "The quick brown fox jumps over the lazy dog. Don't stop!",
    "I'm here, you're there; we've 123 4567 numbers.",
    "café naïve résumé 東京 😀🎉 emoji",
    "tabs\tand\nnewlines\n\n  spaces   here",
    "Hello world hello World HELLO",
] * 20
TEXTS = [
    "", " ", "  ", "a", " a", "hello world", "hello  world", "hello   world",
    "hello\nworld", "hello \nworld", "hello\n\nworld", "hello \n world", "x \t y",
    "end ", "end  ", "end\n", " lead", "  lead", "don't", "DON'T",
    "I'll we'd 'tis '' ''s", "a  's", "a  'sam", "!!'s", "'s's", "a1b2 123abc",
    "100,000.50$", "café", "東京タワー", "😀 😀😀", "hi!!! ...", "a\u00a0b",
    "a \u00a0b", "a\u2003b", "a \u2003 b", "a\x0bb", "a\x0cb", "x\u2028y", "a\x85b",
    "६ a ६", " ६x", "ĴA ĴB", "a\r\nb", "a  \n  b", "Hello\u3000world",
    "word\u202f word", "\u2009x", "x\u2009", "a\x00b", "\x00\x00 \x00", " \x00",
    "aaaaaaaa", "     ", "x   \x00y", "\x01", "<|endoftext|>hello<|endoftext|>",
    "hello <|endoftext|> world",
]


def _random_texts(count, seed=0):
    rng = random.Random(seed)
    alphabet = list("ab 's\n\t\u00a0!1é😀\x00'")
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            for _ in range(count)]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """vocab.json and merges.txt trained by Hugging Face's tokenizers library."""
    folder = tmp_path_factory.mktemp("bpe")
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(CORPUS, vocab_size=400, min_frequency=1,
                                special_tokens=["<|endoftext|>"], show_progress=False)
    trainer.save_model(str(folder))
    return str(folder / "vocab.json"), str(folder / "merges.txt")


@pytest.mark.parametrize("add_prefix_space", [False, True])
def test_matches_gpt2(files, add_prefix_space):
    reference = GPT2Tokenizer(vocab=files[0], merges=files[1],
                              add_prefix_space=add_prefix_space)
    tokenizer = BytePairTokenizer(*files, add_prefix_space=add_prefix_space,
                                  unsplittable_tokens=("<|endoftext|>",))
    texts = TEXTS + _random_texts(200)
    outputs = tokenizer(tf.constant(texts))
    for text, ids in zip(texts, outputs):
        expected = reference(text)["input_ids"] if text else []
        assert ids == expected, repr(text)


def test_detokenize_round_trips_bytes(files):
    tokenizer = BytePairTokenizer(*files)
    texts = TEXTS + _random_texts(100, seed=1)
    assert tokenizer.detokenize(tokenizer(tf.constant(texts))) == texts
    assert tokenizer.detokenize(tokenizer("naïve 😀")) == "naïve 😀"
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(len(texts))
    batch = next(iter(dataset.map(tokenizer).map(tokenizer.detokenize)))
    assert [t.decode() for t in batch.numpy()] == texts
    # Invalid UTF-8 is replaced by U+FFFD, then encoded like any text.
    assert tokenizer.detokenize(tokenizer(tf.constant([b"a\xffb"]))) == ["a\ufffdb"]


def test_unsplittable_tokens(files):
    end = json.load(open(files[0], encoding="utf-8"))["<|endoftext|>"]
    plain = BytePairTokenizer(*files)
    hi, pieces = plain(["hi", "<|endoftext|>"])
    assert end not in pieces
    tokenizer = BytePairTokenizer(*files, unsplittable_tokens=("<|endoftext|>",))
    assert tokenizer(["hi<|endoftext|>", "<|endoftext|>"]) == [hi + [end], [end]]


@pytest.mark.parametrize("sequence_length", [None, 5])
def test_preprocessing_layer(files, sequence_length):
    run_preprocessing_layer_test(
        BytePairTokenizer,
        {"vocabulary": files[0], "merges": files[1],
         "sequence_length": sequence_length},
        ["The quick fox!", "", "café 😀", "a b c d e f g"],
    )


def test_dense_output_and_scalar_input(files):
    tokenizer = BytePairTokenizer(*files, sequence_length=4)
    ragged = BytePairTokenizer(*files)(["hello world", "", "a b c d e f"])
    expected = [(row + [0] * 4)[:4] for row in ragged]
    assert_all_equal(tokenizer(["hello world", "", "a b c d e f"]), expected)
    assert_all_equal(tokenizer("hello world"), expected[0])
    assert tokenizer([]).shape[0] == 0


def test_vocabulary_accessors_and_assets(files, tmp_path):
    vocabulary = json.load(open(files[0], encoding="utf-8"))
    tokenizer = BytePairTokenizer(*files)
    assert tokenizer.vocabulary_size() == len(vocabulary)
    assert tokenizer.get_vocabulary() == sorted(vocabulary, key=vocabulary.get)
    assert tokenizer.token_to_id("Ġ") == vocabulary["Ġ"]
    assert tokenizer.id_to_token(vocabulary["Ġ"]) == "Ġ"
    tokenizer.save_assets(str(tmp_path))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["merges.txt", "vocabulary.json"]
    restored = BytePairTokenizer()
    restored.load_assets(str(tmp_path))
    assert restored.merges == tokenizer.merges
    assert restored.vocabulary == vocabulary


def test_errors(files):
    vocabulary = {c: i for i, c in enumerate(bytes_to_unicode().values())}
    with pytest.raises(ValueError, match="256 byte symbols"):
        BytePairTokenizer({"a": 0}, [])
    with pytest.raises(ValueError, match="not in `vocabulary`"):
        BytePairTokenizer(vocabulary, ["a b"])
    with pytest.raises(ValueError, match="'a b'"):
        BytePairTokenizer(vocabulary, ["a b c"])
    with pytest.raises(ValueError, match="0 .. n-1"):
        BytePairTokenizer({**vocabulary, "ab": 300}, ["a b"])
    with pytest.raises(ValueError, match="unsplittable_tokens"):
        BytePairTokenizer(vocabulary, [], unsplittable_tokens=("<|endoftext|>",))
    with pytest.raises(ValueError, match="both"):
        BytePairTokenizer(vocabulary)
    with pytest.raises(ValueError, match="No vocabulary"):
        BytePairTokenizer()(["a"])
    with pytest.raises(TypeError, match="`inputs` must be strings"):
        BytePairTokenizer(*files).tokenize(tf.constant([1]))
