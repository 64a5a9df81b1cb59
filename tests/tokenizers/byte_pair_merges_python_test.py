"""compute_byte_pair_merges on the Python engine against TensorFlow's."""

from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.preprocessing.engine import engine_scope
from kzoo.testing import on_both_engines as both
from kzoo.testing.without_tensorflow import check_without_tensorflow
from kzoo.tokenizers.byte_pair_merges import compute_byte_pair_merges

FRAGMENTS = ["the", "The", "lower", "lowest", "low", "hug", "hugs", "'s", "'t",
             "'re", " ", "  ", "\n", "\n\n", "\t", "\u00a0", "\u3000", "123",
             "4567", "!", "...", "café", "東京", "😀", "\x00", "<|endoftext|>",
             "<|end"]
CHARACTER = st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                          exclude_categories=("Cs",))
TEXT = st.lists(st.one_of(st.sampled_from(FRAGMENTS), CHARACTER),
                max_size=30).map("".join)



@settings(max_examples=25)
@given(st.lists(TEXT, min_size=1, max_size=8), st.integers(1, 3),
       st.sampled_from([(), ("<|endoftext|>",), ("<|endoftext|>", "<|end")]))
def test_merges_match_tensorflow(texts, repeat, special_tokens):
    expected, actual = both(lambda: compute_byte_pair_merges(
        texts * repeat, vocabulary_size=300, special_tokens=special_tokens))
    assert actual == expected


def test_file_and_bytes_inputs(tmp_path):
    path = tmp_path / "corpus.txt"
    lines = [f"line {i} lower lowest 😀\n" for i in range(3000)]  # 3 chunks
    path.write_bytes("".join(lines).encode() + b"caf\xff\n")  # not UTF-8
    expected, actual = both(lambda: compute_byte_pair_merges(
        str(path), vocabulary_size=330))
    assert actual == expected and len(actual[1]) == 330 - 257
    data = [b"caf\xc3\xa9 caf\xff", "café café"]
    expected, actual = both(lambda: compute_byte_pair_merges(
        data, vocabulary_size=270, min_frequency=1))
    assert actual == expected


def test_without_tensorflow():
    with engine_scope("tensorflow"):
        expected = compute_byte_pair_merges(["low lower lowest <|endoftext|>"] * 3,
                                            vocabulary_size=264)
    output = check_without_tensorflow("""
        from kzoo.tokenizers.byte_pair_merges import compute_byte_pair_merges
        from kzoo.tokenizers.byte_pair_tokenizer import BytePairTokenizer
        vocabulary, merges = compute_byte_pair_merges(
            ["low lower lowest <|endoftext|>"] * 3, vocabulary_size=264)
        print(vocabulary)
        print(merges)
    """, backend="jax")  # Keras on TensorFlow needs TensorFlow
    assert output.splitlines() == [str(expected[0]), str(expected[1])]
