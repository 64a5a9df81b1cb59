"""`kzoo pretrain FAMILY --from PRESET`: continued pretraining of a tiny
preset on new text, the held-out measure before and after, a preset out."""

import re

import numpy as np
import pytest

from kzoo import cli
from kzoo.models.bert.bert_masked_lm import BertMaskedLM
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_language_model import ElmoLanguageModel
from kzoo.models.gpt.gpt_causal_lm import GPTCausalLM
from kzoo.presets.preset_loader import load_backbone
from kzoo.testing import to_numpy

from tests.cli.conftest import write_corpus

TASKS = {"bert": BertMaskedLM, "gpt": GPTCausalLM, "elmo": ElmoLanguageModel}
LENGTH = {"bert": "16", "gpt": "16", "elmo": "10"}


@pytest.fixture(scope="module")
def new_text(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("new") / "new.txt", documents=6, seed=5)


def _continue(family, preset, corpus, output, *extra):
    return cli.main(["pretrain", family, "--from", preset, "--corpus", corpus,
                     "--output", str(output), "--epochs", "1", "--batch-size", "8",
                     "--sequence-length", LENGTH[family], "--learning-rate", "1e-3",
                     *extra])


@pytest.mark.parametrize("family", ["bert", "gpt", "elmo"])
def test_continues_from_a_preset(family, pretrained, new_text, tmp_path, capsys):
    base = pretrained(family)
    capsys.readouterr()
    extra = ["--whole-word-masking"] if family == "bert" else []
    assert _continue(family, base, new_text, tmp_path / "out", *extra) == 0
    out = capsys.readouterr().out
    before = re.search(r"held-out before: (.+)", out)
    after = re.search(r"held-out after: (.+)", out)
    assert before and after, out
    word = "masked-LM loss" if family == "bert" else "perplexity"
    assert word in before.group(1) and word in after.group(1)
    model = TASKS[family].from_preset(str(tmp_path / "out"))
    if family == "bert":
        assert model.preprocessor.get_config()["whole_word_masking"] is True
    start = load_backbone(base)
    # The same architecture and vocabulary, and weights that moved.
    assert model.backbone.get_config() == start.get_config()
    moved = [not np.array_equal(to_numpy(a), to_numpy(b))
             for a, b in zip(model.backbone.weights, start.weights)]
    assert any(moved)


def test_size_options_and_families_without_it_are_refused(pretrained, new_text,
                                                          tmp_path, capsys):
    base = pretrained("gpt")
    capsys.readouterr()
    assert _continue("gpt", base, new_text, tmp_path / "o", "--hidden-dim", "32") == 2
    assert "--hidden-dim cannot be used with --from" in capsys.readouterr().err
    assert _continue("gpt", base, new_text, tmp_path / "o",
                     "--sequence-length", "4096") == 2
    assert "positions of" in capsys.readouterr().err
    assert cli.main(["pretrain", "word2vec", "--from", base, "--corpus", new_text,
                     "--output", str(tmp_path / "w")]) == 2
    assert "cannot continue from a preset" in capsys.readouterr().err


@pytest.mark.large  # a second ELMo training run: minutes on a shared CPU
def test_elmo_without_a_softmax_gets_one_from_the_text(pretrained, new_text,
                                                       tmp_path, capsys):
    # A biLM without its softmax, as AllenNLP's weight files hold it.
    ElmoBackbone.from_preset(pretrained("elmo")).save_to_preset(tmp_path / "bilm")
    capsys.readouterr()
    assert _continue("elmo", str(tmp_path / "bilm"), new_text, tmp_path / "out",
                     "--vocabulary-size", "50") == 0
    out = capsys.readouterr().out
    assert "has no softmax" in out and "held-out after: perplexity" in out
    model = ElmoLanguageModel.from_preset(str(tmp_path / "out"))
    assert model.vocabulary_size <= 50
