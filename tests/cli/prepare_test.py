"""`kzoo prepare` and `kzoo pretrain --data`: the commands, and what they refuse."""

import json
import os

import pytest

from kzoo import cli
from kzoo.testing.corpus import write_corpus

TINY_GPT = ["--num-layers", "1", "--hidden-dim", "16", "--num-heads", "2",
            "--sequence-length", "8", "--batch-size", "8", "--epochs", "1"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    write_corpus(path, documents=40)
    return str(path)


def test_prepare_then_pretrain_from_the_shards(tmp_path, corpus, capsys):
    data = str(tmp_path / "data")
    assert cli.main(["prepare", "gpt", "--corpus", corpus, "--output", data,
                     "--vocabulary-size", "300"]) == 0
    out = capsys.readouterr().out
    assert "prepared" in out and "MB/s" in out
    manifest = json.load(open(os.path.join(data, "manifest.json")))
    assert manifest["family"] == "gpt" and manifest["vocabulary_size"] == 300
    output = str(tmp_path / "gpt")
    assert cli.main(["pretrain", "gpt", "--data", data, "--output", output, *TINY_GPT]) == 0
    assert "300 BPE tokens" in capsys.readouterr().out
    assert os.path.exists(os.path.join(output, "config.json"))
    recorded = json.load(open(os.path.join(output + ".run", "data.json")))
    assert recorded["tokenizer_sha256"] == manifest["tokenizer_sha256"]
    # Data of one family is refused to another.
    assert cli.main(["pretrain", "bert", "--data", data, "--output",
                     str(tmp_path / "bert")]) == 2
    assert "prepared for gpt, not bert" in capsys.readouterr().err


def test_a_resumed_run_refuses_other_data(tmp_path, corpus, capsys):
    output = str(tmp_path / "gpt")
    assert cli.main(["pretrain", "gpt", "--corpus", corpus, "--output", output,
                     "--vocabulary-size", "300", *TINY_GPT]) == 0
    assert os.path.exists(os.path.join(output + ".run", "data", "manifest.json"))
    capsys.readouterr()
    # Another vocabulary size for the same run: refused before preparing.
    assert cli.main(["pretrain", "gpt", "--corpus", corpus, "--output", output,
                     "--vocabulary-size", "280", *TINY_GPT]) == 2
    assert "resume with the same options" in capsys.readouterr().err
    other = str(tmp_path / "other")
    assert cli.main(["prepare", "gpt", "--corpus", corpus, "--output", other,
                     "--vocabulary-size", "290"]) == 0
    capsys.readouterr()
    assert cli.main(["pretrain", "gpt", "--data", other, "--output", output,
                     *TINY_GPT]) == 2
    assert "whose vocabulary differs" in capsys.readouterr().err


def test_a_tampered_vocabulary_and_a_binary_corpus_are_named(tmp_path, corpus, capsys):
    data = tmp_path / "data"
    assert cli.main(["prepare", "gpt", "--corpus", corpus, "--output", str(data),
                     "--vocabulary-size", "300"]) == 0
    merges = data / "tokenizer" / "assets" / "tokenizer" / "merges.txt"
    merges.write_text(merges.read_text() + "x y\n")
    capsys.readouterr()
    assert cli.main(["pretrain", "gpt", "--data", str(data), "--output",
                     str(tmp_path / "gpt"), *TINY_GPT]) == 2
    assert "not the vocabulary" in capsys.readouterr().err
    binary = tmp_path / "weights.bin"
    binary.write_bytes(bytes(range(256)) * 64)
    assert cli.main(["prepare", "bert", "--corpus", str(binary), "--output",
                     str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert str(binary) in err and "binary" in err
    assert not (tmp_path / "b").exists()
