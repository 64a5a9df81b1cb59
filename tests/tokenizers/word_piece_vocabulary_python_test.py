"""compute_word_piece_vocabulary on the Python engine: a vocabulary that
covers its corpus, the same on every call, without TensorFlow."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kzoo
from kzoo.preprocessing.engine import engine_scope
from kzoo.testing import check_without_tensorflow

RESERVED = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=30)
@given(st.lists(TEXT, min_size=1, max_size=12), st.integers(20, 120))
def test_covers_its_corpus_reserved_first(texts, size):
    with engine_scope("python"):
        vocabulary = kzoo.tokenizers.compute_word_piece_vocabulary(
            texts * 3, vocabulary_size=size)
        assert list(vocabulary[:5]) == list(RESERVED)
        assert len(vocabulary) == len(set(vocabulary)) <= size
        tokenizer = kzoo.tokenizers.WordPieceTokenizer(vocabulary)
        ids = tokenizer(texts)
    characters = [t for t in vocabulary[5:] if len(t) == 1]
    for c in characters:
        assert "##" + c in vocabulary or len(vocabulary) == size
    if len(vocabulary) < size:  # room for every piece: nothing unknown
        assert all(i != tokenizer.oov_token_id for row in ids for i in row)


def test_file_input_and_output_file(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\nthe dog sat on the log\n" * 50)
    with engine_scope("python"):
        vocabulary = kzoo.tokenizers.compute_word_piece_vocabulary(
            str(corpus), vocabulary_size=40,
            vocabulary_output_file=str(tmp_path / "vocab.txt"))
        with pytest.raises(ValueError, match="no file"):
            kzoo.tokenizers.compute_word_piece_vocabulary(
                str(tmp_path / "missing.txt"), vocabulary_size=40)
    assert (tmp_path / "vocab.txt").read_text().splitlines() == vocabulary
    assert {"the", "sat", "on"} <= set(vocabulary)


def test_without_tensorflow():
    out = check_without_tensorflow("""
        import kzoo
        vocabulary = kzoo.tokenizers.compute_word_piece_vocabulary(
            ["The cat sat.", "The bat sat!"] * 20, vocabulary_size=40)
        tokenizer = kzoo.tokenizers.WordPieceTokenizer(vocabulary)
        print(tokenizer.detokenize(tokenizer(["The bat sat."])))
    """)
    assert out.strip() == "['the bat sat .']"


def test_deterministic_within_and_across_processes():
    texts = ["Ein Café in Zürich; 東京 and 😀.", "The cat sat. The bat sat!",
             "Sub-word pieces: token-izers, tokens, tokenized."] * 5
    with engine_scope("python"):
        first = kzoo.tokenizers.compute_word_piece_vocabulary(texts, 60)
        assert kzoo.tokenizers.compute_word_piece_vocabulary(texts, 60) == first
    out = check_without_tensorflow(f"""
        import kzoo
        print(kzoo.tokenizers.compute_word_piece_vocabulary({texts!r}, 60))
    """)
    assert out.strip() == repr(first)
