"""bench/accelerator.py's smoke run: every row of this backend, TensorFlow
blocked in its workers, on the CPU; the JSON and the markdown table."""

import json
import subprocess
import sys
from pathlib import Path

import keras
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "accelerator.py"

pytestmark = [pytest.mark.without_tensorflow, pytest.mark.backends("jax", "torch")]


def test_accelerator_smoke_run(tmp_path):
    backend = keras.config.backend()
    # A budget and row time limits generous for a loaded machine: a smoke run
    # checks that every row runs, not how fast.
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path), "--smoke",
         "--backends", backend, "--jobs", "2", "--budget", "1500",
         "--timeout-scale", "10"],
        capture_output=True, text=True, cwd=ROOT, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads((tmp_path / "accelerator.json").read_text())
    rows = data["rows"]
    expected = {f"{model}/kzoo-{backend}" for model in
                ("bert-minilm", "bert-base", "gpt2", "word2vec")}
    if backend == "torch":  # the references run on PyTorch
        expected |= {"bert-minilm/transformers", "bert-base/transformers",
                     "gpt2/transformers"}
    assert set(rows) == expected
    for name, row in rows.items():
        assert "error" not in row, (name, row["error"])
        assert row["tensorflow_imported"] is False, name
    speeds = [(name, key, value) for name, row in rows.items()
              for key, value in row.items()
              if key.endswith("_per_s") or key.startswith("tokens_per_s_")
              or key == "words_per_sec"]
    assert {name for name, _, _ in speeds} == expected
    assert all(value > 0 for _, _, value in speeds), speeds
    table = data["table"]
    assert len(table) == 2 * 2 + 2 + 1  # BERT: 2 shapes x 2; GPT: 2 batches; word2vec
    assert all(line["kzoo"] > 0 for line in table), table
    if backend == "torch":
        assert all(line["reference_value"] > 0 for line in table
                   if line["reference"] == "transformers eager"), table
    markdown = (tmp_path / "accelerator.md").read_text()
    assert "| measure | kzoo row | kzoo |" in markdown
    # Each kzoo row: its lines of the table, then its line of the status list.
    assert markdown.count(f"/kzoo-{backend} |") == len(table) + 4
    assert "blocked in every worker" in markdown or "installed: no" in markdown
