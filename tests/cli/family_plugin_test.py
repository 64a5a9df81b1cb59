"""A model family kzoo does not know, through the whole ``kzoo`` command.

``tests/families/tinyconv`` defines a backbone, a masked LM, a classifier,
a word-in-context adapter and one ``register_family`` call; here it is
pretrained, fine-tuned, evaluated, exported and scored by ``kzoo polysemy``
with ``KZOO_FAMILIES=tinyconv`` and no change to kzoo.
"""

import os
import sys

import keras
import numpy as np
import pytest

from kzoo import cli

FAMILIES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "families")


@pytest.fixture
def tinyconv(monkeypatch):
    monkeypatch.syspath_prepend(FAMILIES)
    # The export subprocess (JAX, PyTorch) imports the family too.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [FAMILIES] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("KZOO_FAMILIES", "tinyconv")


def test_a_sixth_family_runs_through_every_command(tinyconv, corpus, labelled,
                                                   tmp_path, capsys):
    pretrained = str(tmp_path / "tinyconv")
    assert cli.main(["pretrain", "tinyconv", "--corpus", corpus, "--output",
                     pretrained, "--epochs", "1"]) == 0
    assert "saved the preset" in capsys.readouterr().out
    assert "TinyConvMaskedLM" in open(os.path.join(pretrained, "task.json")).read()

    finetuned = str(tmp_path / "sentiment")
    assert cli.main(["finetune", "--model", pretrained, "--train", labelled,
                     "--output", finetuned, "--epochs", "1", "--batch-size", "8",
                     "--sequence-length", "16", "--learning-rate", "1e-2"]) == 0
    assert "model: TinyConvClassifier" in capsys.readouterr().out
    assert cli.main(["evaluate", "--model", finetuned, "--data", labelled]) == 0
    assert "accuracy" in capsys.readouterr().out

    assert cli.main(["polysemy", "--model", pretrained, "--word", "bank",
                     "the river bank", "a bank loan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["embeddings", "layer", "layer"]
    cosines = [float(line.split("cosine")[1]) for line in lines]
    # The embeddings layer sees no context: the same word, the same vector.
    assert cosines[0] == pytest.approx(1.0, abs=1e-5)
    assert all(-1 <= c <= 1 for c in cosines)

    served = tmp_path / "served"
    assert cli.main(["export", "--model", finetuned, "--output", str(served)]) == 0
    assert (served / "saved_model.pb").exists()
    if keras.config.backend() == "tensorflow":
        import tensorflow as tf

        outputs = tf.saved_model.load(str(served)).signatures["serving_default"](
            text=tf.constant(["a good film", "a bad one"]))
        assert outputs["probabilities"].shape == (2, 2)
        np.testing.assert_allclose(tf.reduce_sum(outputs["probabilities"], -1), 1,
                                   rtol=1e-5)


def test_the_family_is_in_the_commands_help(tinyconv, capsys):
    with pytest.raises(SystemExit):
        cli.main(["pretrain", "--help"])
    assert "kzoo pretrain tinyconv --corpus a.txt" in capsys.readouterr().out
    assert "tinyconv" in sys.modules
