import pytest
import tensorflow as tf
from transformers.models.bert.tokenization_bert_legacy import BasicTokenizer

from kzoo.tokenizers.word_piece_tokenizer import WordPieceTokenizer
from kzoo.tokenizers.word_piece_vocabulary import compute_word_piece_vocabulary

RESERVED = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A café in Zürich serves naïve crêpes, doesn't it?",
    "Tokenizers split words into subword pieces: token-izers!",
    "東京 is a city; 北京 is another.",
    "Numbers like 3.14 and 42 appear too.",
] * 10


@pytest.mark.parametrize("lowercase", [True, False])
def test_trained_vocabulary_round_trips(lowercase):
    vocabulary = compute_word_piece_vocabulary(CORPUS, 120, lowercase=lowercase)
    assert tuple(vocabulary[:5]) == RESERVED
    assert len(vocabulary) <= 120
    assert len(set(vocabulary)) == len(vocabulary)
    tokenizer = WordPieceTokenizer(vocabulary, lowercase=lowercase)
    ids = tokenizer(CORPUS[:5])
    assert all(tokenizer.oov_token_id not in row for row in ids)
    # Hugging Face's basic tokenizer gives the reference words.
    basic = BasicTokenizer(do_lower_case=lowercase)
    expected = [" ".join(basic.tokenize(text)) for text in CORPUS[:5]]
    assert tokenizer.detokenize(ids) == expected


def test_same_normalization_as_the_tokenizer():
    vocabulary = compute_word_piece_vocabulary(["Café CAFÉ"] * 20, 30)
    assert "cafe" in vocabulary and "é" not in vocabulary and "C" not in vocabulary
    cased = compute_word_piece_vocabulary(["Café CAFÉ"] * 20, 30, lowercase=False)
    assert "É" in cased and "C" in cased


def test_dataset_and_file_inputs(tmp_path):
    expected = compute_word_piece_vocabulary(CORPUS, 100)
    dataset = tf.data.Dataset.from_tensor_slices(CORPUS)
    assert compute_word_piece_vocabulary(dataset, 100) == expected
    assert compute_word_piece_vocabulary(dataset.batch(7), 100) == expected
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    output = tmp_path / "vocab.txt"
    vocabulary = compute_word_piece_vocabulary(str(path), 100,
                                               vocabulary_output_file=str(output))
    assert vocabulary == expected
    assert output.read_text(encoding="utf-8").splitlines() == expected


def test_reserved_tokens_and_empty_corpus():
    vocabulary = compute_word_piece_vocabulary(["a b"], 10, reserved_tokens=("[UNK]",))
    assert vocabulary == ["[UNK]", "a", "b", "##a", "##b"]
    assert compute_word_piece_vocabulary([""], 10) == list(RESERVED)


def test_errors():
    with pytest.raises(ValueError, match="no file"):
        compute_word_piece_vocabulary("not a file.txt", 10)
    with pytest.raises(ValueError, match="`vocabulary_size`"):
        compute_word_piece_vocabulary(["a"], 5)
    with pytest.raises(TypeError, match="`data`"):
        compute_word_piece_vocabulary(42, 10)
