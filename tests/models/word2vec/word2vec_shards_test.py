"""word2vec from token shards: `kzoo prepare word2vec`'s vocabulary and ids,
training from shards equal to training from the text, and the command."""

import json

import keras
import numpy as np
import pytest

import kzoo
from kzoo import cli
from kzoo.data import TokenShards, prepare
from kzoo.models.family import get_family
from kzoo.models.word2vec.word2vec_cbow import Word2VecCBOW
from kzoo.models.word2vec.word2vec_preprocessor import _shard_chunks
from kzoo.models.word2vec.word2vec_skip_gram import Word2VecSkipGram
from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.preprocessing_layer import numpy_outputs
from kzoo.tokenizers import WordTokenizer, compute_word_vocabulary

ANIMALS = "cat dog cow horse sheep goat pig hen duck mouse".split()
TOOLS = "hammer saw drill wrench chisel file rasp vise clamp pliers".split()
# Words put in the first document's lines: once (under min_count 2: [UNK])
# or twice.
RARE = {5: "Zebra", 10: "ünïcode", 20: "aardvark", 900: "ünïcode"}
# Two documents of 1300 and 900 lines: with a small `shard_tokens` each is
# a shard, and neither holds a whole number of the 1024-line chunks.
DOCUMENTS = (1300, 900)
OPTIONS = dict(hidden_dim=8, window=3, negative=3, seed=7)


def topic_lines(count, seed):
    """Lines of 1 to 8 words of one topic each (and `RARE`'s words in the
    first document's)."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(count):
        words = list(rng.choice(ANIMALS if i % 2 else TOOLS, rng.integers(1, 9)))
        if seed == 0 and i in RARE:
            words.insert(int(rng.integers(len(words) + 1)), RARE[i])
        lines.append(" ".join(words))
    return lines


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two documents (a blank line between them) and their shards, and the
    same lines as one document (no blank line) and its shards."""
    folder = tmp_path_factory.mktemp("word2vec_corpus")
    documents = [topic_lines(n, seed) for seed, n in enumerate(DOCUMENTS)]
    two = folder / "two.txt"
    two.write_text("\n".join(documents[0]) + "\n\n" + "\n".join(documents[1]) + "\n")
    one = folder / "one.txt"
    one.write_text("\n".join(documents[0] + documents[1]) + "\n")
    return {
        "lines": documents[0] + documents[1],
        "two": str(two), "one": str(one),
        "two_shards": prepare("word2vec", [two], folder / "two", verbose=False,
                              options={"min_count": 2}, shard_tokens=1000),
        "one_shards": prepare("word2vec", [one], folder / "one", verbose=False,
                              options={"min_count": 2}),
    }


def test_prepare_counts_every_word_and_writes_each_lines_ids(corpus):
    shards = corpus["two_shards"]
    assert shards.family == "word2vec" and shards.manifest["options"] == {"min_count": 2}
    assert shards.num_documents == 2 and len(shards.manifest["shards"]) == 2
    assert shards.num_units == len(corpus["lines"]) == sum(DOCUMENTS)
    tokenizer = shards.tokenizer()
    with open(corpus["two"], encoding="utf-8") as f:
        file_lines = f.read().splitlines()
    vocabulary, counts = compute_word_vocabulary(
        file_lines, min_count=2, lowercase=False, special_tokens=("[UNK]",),
        oov_token="[UNK]")
    assert list(tokenizer.get_vocabulary()) == vocabulary
    assert list(tokenizer.counts) == counts
    assert "ünïcode" in vocabulary and "Zebra" not in vocabulary
    assert counts[0] == 2  # Zebra and aardvark are [UNK]
    assert shards.num_tokens == sum(counts)
    assert shards.dtype == np.uint8  # 21 words
    expected = WordTokenizer(vocabulary=vocabulary, counts=counts,
                             oov_token="[UNK]")
    with engine_scope("python"), numpy_outputs():
        rows = expected(corpus["lines"])
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(shards.unit(i), row)
    # The training chunks run across the shards' end, as the text's lines do.
    chunks = list(_shard_chunks(shards, 1024))
    assert [len(lengths) for _, lengths in chunks] == [1024, 1024, 152]
    ids = np.concatenate([ids for ids, _ in chunks])
    assert ids.dtype == np.int32
    np.testing.assert_array_equal(ids, np.concatenate(rows))


def _trained(cls, data, build):
    keras.utils.set_random_seed(OPTIONS["seed"])
    model = build()
    model.compile()
    history = model.fit(data, epochs=2, batch_size=512, verbose=0)
    assert len(history.history["loss"]) == 2
    assert all(v > 0 for v in history.history["words_per_sec"])
    return model.wv


@pytest.mark.parametrize("cls,text", [(Word2VecSkipGram, "file"),
                                      (Word2VecCBOW, "lines")])
def test_training_from_shards_equals_training_from_the_text(corpus, cls, text):
    # "file": the one-document file itself; "lines": the two-document file's
    # (non-blank) lines, as `kzoo pretrain --corpus` read them, from two
    # shards. (The text of a file with blank lines is chunked with them, so
    # its random draws differ.) The shards take the Python pipeline on every
    # engine; the text is given the Python engine to compare.
    shards = corpus["one_shards" if text == "file" else "two_shards"]
    data = corpus["one"] if text == "file" else corpus["lines"]
    from_shards = _trained(cls, shards, lambda: cls.from_tokenizer(
        shards.tokenizer(), **OPTIONS))
    with engine_scope("python"):
        from_text = _trained(cls, data, lambda: cls.from_corpus(
            data, min_count=2, **OPTIONS))
    assert from_shards.index_to_key == from_text.index_to_key
    assert not np.allclose(from_shards.vectors, 0)
    np.testing.assert_allclose(from_shards.vectors, from_text.vectors,
                               rtol=1e-6, atol=1e-7)


def test_prepare_and_pretrain_commands(corpus, tmp_path, capsys):
    data, output = tmp_path / "data", tmp_path / "w2v"
    assert cli.main(["prepare", "word2vec", "--corpus", corpus["two"],
                     "--output", str(data), "--min-count", "3"]) == 0
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["family"] == "word2vec" and manifest["options"] == {"min_count": 3}
    assert cli.main(["pretrain", "word2vec", "--data", str(data), "--output",
                     str(output), "--epochs", "1", "--hidden-dim", "8",
                     "--batch-size", "256"]) == 0
    assert "skip-gram" in capsys.readouterr().out
    vocabulary = TokenShards(data).tokenizer().get_vocabulary()[1:]  # no [UNK]
    for vectors in (kzoo.models.WordVectors.from_preset(str(output)),
                    get_family("word2vec").word_vectors(str(output))):
        assert vectors.index_to_key == list(vocabulary)
        assert vectors.vector_size == 8
        assert np.isfinite(vectors.vectors).all()
