import hashlib
import os
import shutil

import h5py
import keras
import numpy as np
import pytest

import kzoo
from kzoo.analysis.compare.training import (
    budget_options,
    split_corpus,
    train_family,
)
from kzoo.models.family import get_family
from kzoo.testing.without_tensorflow import check_without_tensorflow

#: tiny sizes, so that a few steps of each family take seconds
TINY = {
    "word2vec": {"hidden_dim": 8, "min_count": 1, "batch_size": 64},
    "gpt": {"hidden_dim": 16, "num_layers": 1, "num_heads": 2, "sequence_length": 16,
            "vocabulary_size": 300, "batch_size": 4},
    "bert": {"hidden_dim": 16, "num_layers": 1, "num_heads": 2, "sequence_length": 24,
             "vocabulary_size": 200, "batch_size": 4},
    "elmo": {"hidden_dim": 16, "projection_dim": 8, "num_layers": 2,
             "sequence_length": 12, "vocabulary_size": 100, "batch_size": 4},
}
WORDS = ("the cat dog bird sat ran on under a mat tree house big small red "
         "green saw heard quickly slowly river bank money boat").split()


def _write_corpus(path, documents=20, seed=0):
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(documents):
        lines = []
        for _ in range(3):
            sentences = [" ".join(rng.choice(WORDS, size=rng.integers(4, 9))) + "."
                         for _ in range(2)]
            lines.append(" ".join(s.capitalize() for s in sentences))
        docs.append("\n".join(lines))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join(docs) + "\n")
    return [d.split("\n") for d in docs]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    path = os.path.join(folder, "corpus.txt")
    _write_corpus(path)
    return split_corpus([path], os.path.join(folder, "split"))


def test_split_corpus_holds_out_the_last_documents(tmp_path):
    path = str(tmp_path / "corpus.txt")
    documents = _write_corpus(path, documents=20)
    corpus = split_corpus([path], str(tmp_path / "split"))
    assert corpus.documents == 20
    train = kzoo.training.read_documents(corpus.train_files)
    held = kzoo.training.read_documents(corpus.held_out_files)
    assert train == documents[:18] and held == documents[18:]
    words = [sum(len(line.split()) for d in part for line in d)
             for part in (documents[:18], documents[18:])]
    assert (corpus.train_words, corpus.held_out_words) == tuple(words)
    with open(path, "rb") as f:
        assert corpus.sha256 == hashlib.sha256(f.read()).hexdigest()


def test_split_corpus_of_one_article_a_line(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("".join(f"article {i} text.\n" for i in range(10)), encoding="utf-8")
    corpus = split_corpus([str(path)], str(tmp_path / "split"))
    assert corpus.documents == 10
    assert kzoo.training.read_documents(corpus.held_out_files) == [["article 9 text."]]
    assert len(kzoo.training.read_documents(corpus.train_files)) == 9


def test_split_corpus_errors(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        split_corpus([], str(tmp_path))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no text"):
        split_corpus([str(empty)], str(tmp_path / "split"))


def test_budget_options_are_alike_across_families_and_grow():
    for minutes in (1, 5, 30, 240):
        sizes = {name: budget_options(name, minutes) for name in TINY}
        width = sizes["gpt"]["hidden_dim"]
        assert sizes["bert"]["hidden_dim"] == width
        assert sizes["word2vec"]["hidden_dim"] == width
        assert 2 * sizes["elmo"]["projection_dim"] == width  # ELMo's vectors
        assert sizes["bert"]["num_layers"] == sizes["gpt"]["num_layers"]
    widths = [budget_options("gpt", m)["hidden_dim"] for m in (1, 5, 30, 240)]
    assert widths == sorted(widths) and widths[0] < widths[-1]
    with pytest.raises(ValueError, match="minutes"):
        budget_options("gpt", 0)


def _weights(preset):
    arrays = []
    for name in sorted(os.listdir(preset)):
        if name.endswith(".weights.h5"):
            with h5py.File(os.path.join(preset, name), "r") as f:
                f.visititems(lambda key, item: arrays.append((name, key, item[()]))
                             if isinstance(item, h5py.Dataset) else None)
    return arrays


@pytest.mark.parametrize("name", sorted(TINY))
def test_train_family_replays_steps_and_saves_a_usable_preset(name, corpus, tmp_path):
    family = get_family(name)
    first = train_family(name, corpus, 1, str(tmp_path / "run0"), seed=3, steps=3,
                         options=TINY[name], print_fn=lambda *a, **k: None)
    # The replay reads the same prepared data (kept, being up to date): in one
    # process, a second WordPiece vocabulary learned from the same text can
    # differ from the first, which is not what this test is about.
    shutil.copytree(tmp_path / "run0" / "data", tmp_path / "run1" / "data")
    second = train_family(name, corpus, 1, str(tmp_path / "run1"), seed=3, steps=3,
                          options=TINY[name], print_fn=lambda *a, **k: None)
    assert first.steps == second.steps == 3
    assert [row[1] for row in first.loss_curve] == [1, 2, 3]
    assert all(np.isfinite(row[2]) for row in first.loss_curve)
    assert [r[2] for r in first.loss_curve] == [r[2] for r in second.loss_curve]
    # A pass cut before its end counts by its length (word2vec's first pass
    # has none known, and counts nothing).
    assert 0 <= first.training_tokens <= 3 * corpus.train_words
    assert first.training_tokens > 0 or name == "word2vec"
    assert first.training_seconds > 0 and first.preparation_seconds > 0
    assert first.options["seed"] == 3
    assert first.options["hidden_dim"] == TINY[name]["hidden_dim"]
    # The same seed and steps: the same weights, array by array.
    a, b = _weights(first.preset), _weights(second.preset)
    assert len(a) == len(b) > 0
    for (file_a, key_a, x), (file_b, key_b, y) in zip(a, b):
        assert (file_a, key_a) == (file_b, key_b)
        np.testing.assert_array_equal(x, y, err_msg=f"{file_a}:{key_a}")
    assert first.parameters == sum(x.size for _, _, x in a)
    # What the probes load from the preset.
    wic = kzoo.analysis.load_word_in_context(first.preset)
    vectors = wic.vectors_at(["the cat sat on the mat ."], [(4, 7)])
    assert vectors.shape[:2] == (1, wic.num_layers) and np.isfinite(vectors).all()
    if family.pretraining.held_out is not None:
        assert first.held_out and all(np.isfinite(v) for v in first.held_out.values())
        assert first.held_out == second.held_out
    if family.tasks_of(kzoo.models.TextClassifier):
        classifier = family.task(kzoo.models.TextClassifier).from_preset(
            first.preset, num_classes=2)
        assert classifier.predict(["the cat sat .", "a big red boat"],
                                  verbose=0).shape == (2, 2)


def test_train_family_stops_at_the_time_budget(corpus, tmp_path):
    trained = train_family("word2vec", corpus, 0.02, str(tmp_path / "run"),
                           options=TINY["word2vec"], print_fn=lambda *a, **k: None)
    assert 1.2 <= trained.training_seconds < 30
    assert trained.steps == trained.loss_curve[-1][1] >= 1
    if len(trained.loss_curve) > 1:  # stopped at the first batch past the budget
        assert trained.loss_curve[-2][0] < 1.2


def test_train_family_errors(corpus, tmp_path):
    with pytest.raises(ValueError, match="minutes"):
        train_family("gpt", corpus, 0, str(tmp_path))
    with pytest.raises(ValueError, match="steps"):
        train_family("gpt", corpus, 1, str(tmp_path), steps=0)
    with pytest.raises(ValueError, match="no option"):
        train_family("gpt", corpus, 1, str(tmp_path), options={"hidden_size": 8})
    with pytest.raises(ValueError, match="No model family"):
        train_family("lstm", corpus, 1, str(tmp_path))


@pytest.mark.without_tensorflow
@pytest.mark.backends("jax", "torch")
def test_trains_without_tensorflow(tmp_path):
    path = tmp_path / "corpus.txt"
    _write_corpus(str(path))
    output = check_without_tensorflow(f"""
        from kzoo.analysis.compare.training import split_corpus, train_family
        corpus = split_corpus([{str(path)!r}], {str(tmp_path / "split")!r})
        for name, options in {{"gpt": {TINY["gpt"]!r},
                              "word2vec": {TINY["word2vec"]!r}}}.items():
            trained = train_family(name, corpus, 1, {str(tmp_path)!r} + "/" + name,
                                   steps=2, options=options)
            print("steps", trained.steps)
    """)
    assert output.count("steps 2") == 2
