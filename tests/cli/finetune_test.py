"""`kzoo finetune` on a labelled file, then evaluate (its scores checked
against scikit-learn on the saved model's predictions), embed and export."""

import csv
import os
import re

import keras
import numpy as np
import pytest

from kzoo import cli
from tests.cli.finetune_tasks_test import assert_printed
from tests.cli.pretrain_test import assert_curves_drawn_from_history


def _predictions(output, labelled):
    """The saved classifier's class ids on the file, and its true ids."""
    import kzoo

    model = kzoo.models.TextClassifier.from_preset(output)
    with open(labelled, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    labels = np.array([model.label_names.index(r["label"]) for r in rows])
    logits = np.asarray(model.predict([r["text"] for r in rows], verbose=0))
    return labels, logits.argmax(-1)


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
    assert_curves_drawn_from_history(f"{output}.run")
    assert cli.main(["evaluate", "--model", output, "--data", labelled]) == 0
    found = re.search(r"accuracy ([\d.]+), macro F1 ([\d.]+) on 32 examples",
                      capsys.readouterr().out)
    assert found
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    labels, predicted = _predictions(output, labelled)
    assert_printed(found.groups(), [
        sklearn_metrics.accuracy_score(labels, predicted),
        sklearn_metrics.f1_score(labels, predicted, average="macro", labels=[0, 1])])
    # As GLUE tasks: each task's official metrics, GLUE's definitions.
    for task, pattern, reference in [
            ("sst2", r"accuracy ([\d.]+)", [sklearn_metrics.accuracy_score]),
            ("mrpc", r"accuracy ([\d.]+), F1 ([\d.]+)",
             [sklearn_metrics.accuracy_score, sklearn_metrics.f1_score]),
            ("CoLA", r"Matthews correlation (-?[\d.]+)", [sklearn_metrics.matthews_corrcoef])]:
        assert cli.main(["evaluate", "--model", output, "--data", labelled,
                         "--glue", task]) == 0
        found = re.search(rf"GLUE {task.lower()}: {pattern} \(32 examples\)",
                          capsys.readouterr().out)
        assert found, task
        assert_printed(found.groups(), [f(labels, predicted) for f in reference])
    if keras.config.backend() != "torch":  # torch exports through a TF subprocess: slow
        assert cli.main(["export", "--model", output, "--output",
                         str(tmp_path / "served"), "--version", "3"]) == 0
        assert os.path.exists(tmp_path / "served" / "3" / "saved_model.pb")


def test_glue_task_errors_name_the_fix(pretrained, labelled, tmp_path, capsys):
    output = str(tmp_path / "sentiment")
    assert cli.main(["finetune", "--model", pretrained("bert"), "--train", labelled,
                     "--output", output, "--epochs", "1", "--sequence-length", "8"]) == 0
    capsys.readouterr()
    assert cli.main(["evaluate", "--model", output, "--data", labelled,
                     "--glue", "squad"]) == 2
    assert "Unknown GLUE task 'squad': use one of cola, sst2" in capsys.readouterr().err
    assert cli.main(["evaluate", "--model", output, "--data", labelled,
                     "--glue", "stsb"]) == 2
    assert "GLUE's stsb is a regression task" in capsys.readouterr().err


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
