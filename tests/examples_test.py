"""Every script in examples/ runs in its --smoke mode (tiny data and steps),
in this process, on the backend under test."""

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _main(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}",
                                                  EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


def _argv(name, tmp_path):
    return {
        "pretrain_gpt": ["--output", str(tmp_path / "gpt")],
        "pretrain_bert": ["--output", str(tmp_path / "bert")],
        "pretrain_elmo": ["--output", str(tmp_path / "elmo")],
        "train_word2vec": ["--corpus", str(tmp_path / "corpus.txt")],
        "elmo_sentiment": [],
        "polysemy": ["--output", str(tmp_path / "plots")],
        "distributed_finetune": [],
        "bert_features_ner": [],
        "domain_transfer": [],
    }[name]


# What each prints at its end, when all went well.
SMOKE = {
    "pretrain_gpt": "top-p 0.9",
    "pretrain_bert": "reloaded preset (held out)",
    "pretrain_elmo": 'cosine similarity of "bank"',
    "train_word2vec": "| kzoo (",
    "elmo_sentiment": "ELMo at the output: mix weights",
    "polysemy": 'cosine of "bank"',
    "distributed_finetune": "held-out accuracy",
    "bert_features_ner": "concat_last_four   width    32  held-out entity F1",
    "domain_transfer": "adapted backbone",
}


def test_every_example_has_a_smoke_test():
    assert {p.stem for p in EXAMPLES.glob("*.py")} == set(SMOKE)


@pytest.mark.parametrize("name", SMOKE)
def test_example_smoke(name, tmp_path, capsys):
    argv = _argv(name, tmp_path)
    smoke = ["--smoke", str(tmp_path / "elmo")] if name == "elmo_sentiment" else ["--smoke"]
    _main(name)(smoke + argv)
    assert SMOKE[name] in capsys.readouterr().out
