"""The whole evaluation and `kzoo polysemy`, on a tiny WordNet and tiny models."""

import numpy as np
import pytest

from kzoo import cli
from kzoo.analysis import run_polysemy_evaluation
from kzoo.models.elmo.elmo_word_in_context import ElmoWordInContext
from kzoo.analysis.static_word_in_context import StaticWordInContext
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.word2vec.word_vectors import WordVectors

DATA_NOUN = """\
00000001 06 n 01 bank 0 000 | a building; "the bank opened a branch"; "rob a bank at noon"
00000002 17 n 01 bank 0 000 | sloping land; "a grassy bank by the stream"
00000003 10 n 01 play 0 000 | a drama; "we saw a play at the theatre"; "the play ran for a year"
00000004 04 n 01 play 0 000 | a move in a game; "a clever play by the defence"
"""
DATA_VERB = """\
00000005 33 v 01 play 0 000 | take part in a game; "they play football"; "kids play chess"
00000006 36 v 01 play 0 000 | perform music; "she can play the piano"
"""
WORDS = ["bank", "play", "the", "a"]


@pytest.fixture(scope="module")
def wordnet(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wordnet")
    (folder / "data.noun").write_text(DATA_NOUN)
    (folder / "data.verb").write_text(DATA_VERB)
    (folder / "data.adj").write_text("")
    (folder / "data.adv").write_text("")
    return str(folder)


@pytest.fixture(scope="module")
def elmo():
    return ElmoBackbone(num_layers=2, hidden_dim=8, projection_dim=4,
                        filters=((1, 4), (2, 4)), character_dim=4)


def _is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_run_prints_the_table_and_writes_the_plots(wordnet, elmo, tmp_path):
    pytest.importorskip("matplotlib")
    wv = WordVectors(np.random.default_rng(0).normal(size=(4, 3)), WORDS)
    lines = []
    rows, paths = run_polysemy_evaluation(
        [("tiny static", StaticWordInContext(wv)), ("tiny elmo", ElmoWordInContext(elmo))],
        str(tmp_path), wordnet=wordnet, verbose=False, print_fn=lines.append)
    # bank (n) and play (n, v): one same and one different pair per lemma and
    # part of speech; the two lemmas go to different splits.
    assert sorted(r.pairs + r.dev_pairs for r in rows) == [6] * 4
    assert [r.layer for r in rows] == ["static vector", "token layer", "LSTM 1", "LSTM 2"]
    assert rows[0].auc == 0.5  # one word, one vector: every cosine ties
    assert sum("1 lemmas" in line for line in lines) == 2  # bank | play
    assert "| tiny elmo | LSTM 2 |" in "\n".join(lines)
    assert [p.split("/")[-1] for p in paths] == ["polysemy_auc_per_layer.png",
                                                 "polysemy_senses_play.png"]
    assert all(_is_png(p) for p in paths)


def test_cli_similarity_lines(tmp_path, capsys):
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("2 2\nbank 1 0\nriver 0 1\n")
    assert cli.main(["polysemy", "--model", str(vectors), "--word", "bank",
                     "the river bank", "the Bank lends"]) == 0
    assert capsys.readouterr().out.split() == ["vectors.txt", "static", "vector",
                                               "cosine", "1.000"]


@pytest.mark.parametrize("argv, message", [
    (["--word", "bank", "the river", "a bank"], "'bank' is not in the sentence 'the river'"),
    (["--word", "bank", "a bank or a bank", "a bank"], "pass an index"),
    (["--word", "bank", "only one sentence"], "pass --word WORD and two sentences"),
    (["--evaluate", "--wordnet", "/nonexistent"], "apt-get install -y wordnet-base"),
])
def test_cli_errors(tmp_path, capsys, argv, message):
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("1 2\nbank 1 0\n")
    assert cli.main(["polysemy", "--model", str(vectors)] + argv) == 2
    assert message in capsys.readouterr().err


def test_cli_evaluate(wordnet, elmo, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("2 2\nbank 1 0\nplay 0 1\n")
    elmo.save_to_preset(str(tmp_path / "elmo"))
    assert cli.main(["polysemy", "--evaluate", "--model", str(vectors), "--model",
                     str(tmp_path / "elmo"), "--wordnet", wordnet,
                     "--output", str(tmp_path / "plots")]) == 0
    out = capsys.readouterr().out
    assert out.count("| LSTM ") == 2 and "| static vector |" in out
    assert _is_png(tmp_path / "plots" / "polysemy_senses_play.png")


def test_cli_evaluate_with_gpt(wordnet, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    import kzoo

    texts = [line.split("|")[1] for line in (DATA_NOUN + DATA_VERB).splitlines()]
    vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
        texts, vocabulary_size=300)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=len(vocabulary), num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=32)
    preprocessor = kzoo.models.GPTCausalLMPreprocessor(
        kzoo.models.GPTTokenizer(vocabulary, merges), sequence_length=16)
    kzoo.models.GPTCausalLM(backbone, preprocessor).save_to_preset(str(tmp_path / "gpt"))
    assert cli.main(["polysemy", "--evaluate", "--model", str(tmp_path / "gpt"),
                     "--wordnet", wordnet, "--output", str(tmp_path / "plots")]) == 0
    out = capsys.readouterr().out
    assert "embedding the targets with gpt (3 layers)" in out
    for layer in ("embeddings", "layer 1", "layer 2"):
        assert f"| gpt | {layer} | " in out
    assert _is_png(tmp_path / "plots" / "polysemy_auc_per_layer.png")
    assert _is_png(tmp_path / "plots" / "polysemy_senses_play.png")
