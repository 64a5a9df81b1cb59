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


# The examples that fine-tune all-MiniLM-L6-v2 by default run their smoke on
# this tiny BERT preset: a smoke checks that the example runs end to end, and
# bert_features_ner and polysemy still run theirs on the real MiniLM.
TINY_BERT_WORDS = ("[PAD] [UNK] [CLS] [SEP] [MASK] the a an and of to is it in "
                   "that film movie story but not good bad , . ' s").split()


@pytest.fixture(scope="module")
def tiny_bert_preset(tmp_path_factory):
    import keras

    import kzoo

    keras.utils.set_random_seed(0)
    path = tmp_path_factory.mktemp("tiny_bert") / "preset"
    kzoo.BertBackbone(vocabulary_size=len(TINY_BERT_WORDS), num_layers=1, num_heads=2,
                      hidden_dim=16, intermediate_dim=32,
                      max_sequence_length=64).save_to_preset(path)
    kzoo.BertTokenizer(vocabulary=list(TINY_BERT_WORDS)).save_to_preset(path)
    return str(path)


def _argv(name, tmp_path, tiny_bert_preset=None):
    return {
        "pretrain_gpt": ["--output", str(tmp_path / "gpt")],
        "pretrain_bert": ["--output", str(tmp_path / "bert")],
        "pretrain_elmo": ["--output", str(tmp_path / "elmo")],
        "train_word2vec": ["--corpus", str(tmp_path / "corpus.txt")],
        "elmo_sentiment": [],
        "polysemy": ["--output", str(tmp_path / "plots")],
        "distributed_finetune": ["--preset", tiny_bert_preset],
        "bert_features_ner": [],
        "domain_transfer": ["--preset", tiny_bert_preset],
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
def test_example_smoke(name, tmp_path, capsys, request):
    needs_bert = name in ("distributed_finetune", "domain_transfer")
    argv = _argv(name, tmp_path, request.getfixturevalue("tiny_bert_preset")
                 if needs_bert else None)
    smoke = ["--smoke", str(tmp_path / "elmo")] if name == "elmo_sentiment" else ["--smoke"]
    _main(name)(smoke + argv)
    assert SMOKE[name] in capsys.readouterr().out
