"""`kzoo pretrain`: every family writes a preset, curves and a checkpoint, and
the command's neighbours (generate, similar, embed, evaluate) use them."""

import csv
import json
import os

import numpy as np
import pytest

from kzoo import cli


def assert_curves_drawn_from_history(run_dir):
    """The run's curves.png holds the curves of its recorded history: the
    CSV of the plotted values beside it equals the checkpoint's history."""
    assert os.path.getsize(os.path.join(run_dir, "curves.png")) > 1000
    with open(os.path.join(run_dir, "checkpoint", "state.json"), encoding="utf-8") as f:
        history = json.load(f)["history"]
    with open(os.path.join(run_dir, "curves.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [int(row["epoch"]) for row in rows] == list(range(1, len(history["loss"]) + 1))
    plotted = [key for key in rows[0] if key != "epoch"]
    assert "loss" in plotted
    assert set(plotted) == {key for key in history
                            if key not in ("learning_rate", "words_per_sec")
                            and key.removeprefix("val_") in history}
    for key in plotted:
        assert [float(row[key]) for row in rows] == history[key], key


@pytest.mark.parametrize("family", ["word2vec", "elmo", "gpt", "bert"])
def test_pretrain_writes_a_preset_curves_and_a_checkpoint(family, pretrained):
    output = pretrained(family)
    assert os.path.exists(os.path.join(output, "config.json"))
    assert_curves_drawn_from_history(f"{output}.run")
    assert os.path.exists(os.path.join(f"{output}.run", "checkpoint", "state.json"))


def test_generate_and_perplexity(pretrained, corpus, capsys):
    gpt = pretrained("gpt")
    capsys.readouterr()
    assert cli.main(["generate", "--model", gpt, "--prompt", "the cat",
                     "--max-length", "8"]) == 0
    assert capsys.readouterr().out.startswith("the cat")
    assert cli.main(["evaluate", "--model", gpt, "--corpus", corpus]) == 0
    assert "perplexity" in capsys.readouterr().out


def test_similar_embed_and_evaluate_word_vectors(pretrained, tmp_path, capsys):
    w2v = pretrained("word2vec")
    capsys.readouterr()
    assert cli.main(["similar", "--model", w2v, "--word", "king", "--analogy",
                     "king", "man", "woman", "--topn", "3"]) == 0
    out = capsys.readouterr().out
    assert "king:" in out and "king - man + woman:" in out
    assert cli.main(["embed", "--model", w2v, "--text", "king", "--text", "queen"]) == 0
    assert np.loadtxt(capsys.readouterr().out.splitlines()).shape == (2, 8)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("king\tqueen\t8.0\ncat\tdog\t7.0\nriver\tmoney\t1.0\n")
    assert cli.main(["evaluate", "--model", w2v, "--pairs", str(pairs)]) == 0
    assert "Spearman" in capsys.readouterr().out
    assert cli.main(["similar", "--model", w2v, "--word", "zebra"]) == 2
    assert "not in the vocabulary: zebra" in capsys.readouterr().err


def test_elmo_embeddings_and_perplexity(pretrained, corpus, tmp_path, capsys):
    elmo = pretrained("elmo")
    capsys.readouterr()
    out = tmp_path / "vectors.npy"
    assert cli.main(["embed", "--model", elmo, "--text", "the cat sees the dog",
                     "--text", "a bank", "--output", str(out)]) == 0
    assert np.load(out).shape == (2, 16)
    assert cli.main(["evaluate", "--model", elmo, "--corpus", corpus]) == 0
    assert "perplexity forward" in capsys.readouterr().out


def test_missing_corpus_names_the_path(tmp_path, capsys):
    missing = str(tmp_path / "nowhere.txt")
    assert cli.main(["pretrain", "gpt", "--corpus", missing, "--output",
                     str(tmp_path / "out")]) == 2
    assert f"the corpus file {missing} does not exist" in capsys.readouterr().err
