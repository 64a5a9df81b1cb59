"""`kzoo demo --smoke`: the real MiniLM fine-tuned for one epoch on 24
sentences, exported and served from a fresh process, equal to Keras."""

import re

import pytest

from kzoo import cli


# The demo's work (fit, evaluate, export, serve) is tested on every backend
# elsewhere; its real-MiniLM export through TF takes minutes on JAX and torch.
@pytest.mark.backends("tensorflow")
def test_demo_smoke_serves_what_keras_predicts(tmp_path, capsys):
    assert cli.main(["demo", "--smoke", "--output", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "24 to train on, 8 held out" in out
    assert "served from a fresh process" in out
    diff = float(re.search(r"probability difference: (\S+)", out).group(1))
    assert diff < 1e-4
