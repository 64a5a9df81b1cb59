"""`kzoo finetune` on a labelled file, then evaluate, embed and export."""

import os

import keras
import numpy as np

from kzoo import cli


def test_finetune_evaluate_export(pretrained, labelled, tmp_path, capsys):
    bert = pretrained("bert")
    capsys.readouterr()
    output = str(tmp_path / "sentiment")
    assert cli.main(["finetune", "--model", bert, "--train", labelled,
                     "--validation", labelled, "--output", output, "--epochs", "2",
                     "--batch-size", "16", "--sequence-length", "16",
                     "--learning-rate", "1e-3"]) == 0
    assert "string labels mapped to ids: 'neg' -> 0, 'pos' -> 1" in capsys.readouterr().out
    assert os.path.exists(os.path.join(output, "task.weights.h5"))
    assert os.path.getsize(os.path.join(f"{output}.run", "curves.png")) > 1000
    assert cli.main(["evaluate", "--model", output, "--data", labelled]) == 0
    assert "accuracy" in capsys.readouterr().out
    if keras.config.backend() != "torch":  # torch exports through a TF subprocess: slow
        assert cli.main(["export", "--model", output, "--output",
                         str(tmp_path / "served"), "--version", "3"]) == 0
        assert os.path.exists(tmp_path / "served" / "3" / "saved_model.pb")


def test_wrong_columns_name_found_and_needed(pretrained, tmp_path, capsys):
    data = tmp_path / "bad.tsv"
    data.write_text("sentence\tclass\na film\t1\n")
    assert cli.main(["finetune", "--model", pretrained("bert"), "--train", str(data),
                     "--output", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "['sentence', 'class']" in err and "needs 'text' and 'label'" in err


def test_sentence_embeddings(pretrained, capsys):
    model = pretrained("bert")
    capsys.readouterr()  # the session fixture's pretraining output, if it ran now
    assert cli.main(["embed", "--model", model, "--text", "a good film",
                     "--sequence-length", "8"]) == 0
    assert np.loadtxt(capsys.readouterr().out.splitlines()).shape == (16,)
