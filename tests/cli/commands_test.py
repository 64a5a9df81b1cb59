"""What every subcommand shares: help, suggestions, backends, presets, bench."""

import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest

from kzoo import cli


def test_unknown_subcommand_and_option_suggest_the_nearest(capsys):
    with pytest.raises(SystemExit):
        cli.main(["pretrian"])
    assert "did you mean 'pretrain'?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["generate", "--model", "m", "--prompt", "a", "--max-lenght", "3"])
    assert "did you mean '--max-length'?" in capsys.readouterr().err


def test_another_backend_after_keras_is_imported(capsys):
    other = next(b for b in ("jax", "torch", "tensorflow") if b != keras.config.backend())
    assert cli.main(["presets", "--backend", other]) == 2
    assert "run kzoo in a new process" in capsys.readouterr().err


def test_presets_say_whether_installed(capsys):
    assert cli.main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "minilm_l6_en_uncased  [bert]" in out
    assert "installed" in out


def test_bench_lists_the_scripts(capsys):
    assert cli.main(["bench", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert "bert" in listed and "report" not in listed  # report.py measures nothing
    assert cli.main(["bench", "bertt"]) == 2
    assert "did you mean 'bert'?" in capsys.readouterr().err


def test_the_command_sets_the_backend_and_stays_quiet():
    script = Path(sys.executable).with_name("kzoo")
    if not script.exists():
        pytest.skip("the kzoo console script is not installed (pip install -e .)")
    backend = keras.config.backend()
    env = {k: v for k, v in os.environ.items()
           if k not in ("KERAS_BACKEND", "TF_CPP_MIN_LOG_LEVEL")}
    result = subprocess.run([str(script), "presets", "--backend", backend],
                            capture_output=True, text=True, env=env, timeout=1800)
    assert result.returncode == 0, result.stderr
    assert f"on the {backend} backend" in result.stdout
    assert result.stderr == "", result.stderr  # no TensorFlow / XLA start-up lines


def test_help_explains_with_an_example(capsys):
    with pytest.raises(SystemExit):
        cli.main(["pretrain", "--help"])
    out = capsys.readouterr().out
    assert "--backend {tensorflow,jax,torch}" in out
    assert "kzoo pretrain gpt --corpus" in out


def test_registered_glove_vectors_answer_analogies(tmp_path, capsys):
    assert cli.main(["similar", "--model", "glove_6b_50d_en", "--analogy",
                     "king", "man", "woman", "--topn", "1"]) == 0
    assert capsys.readouterr().out.split()[-1] == "queen"
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("king\tqueen\t8.0\ncat\tdog\t7.0\nriver\tmoney\t1.0\n")
    assert cli.main(["evaluate", "--model", "glove_6b_50d_en", "--pairs", str(pairs)]) == 0
    assert "400,000 words, 50 dimensions" in capsys.readouterr().out
    assert cli.main(["similar", "--model", "glove_6b_50d.txt", "--word", "a"]) == 2
    assert "glove_6b_50d.txt does not exist" in capsys.readouterr().err
