import json
import os

import numpy as np
import pytest

from kzoo.analysis.compare import compare, read_results
from kzoo.datasets import gensim_test_data_path
from tests.analysis.compare.results_check import finite

pytest.importorskip("gensim")
pytest.importorskip("matplotlib")
needs_wordnet = pytest.mark.skipif(not os.path.exists("/usr/share/wordnet/data.noun"),
                                   reason="WordNet missing: apt-get install wordnet-base")


def _corpus():
    return gensim_test_data_path("lee_background.cor")


@needs_wordnet
def test_word2vec_run_is_replayed_to_the_same_numbers(tmp_path):
    output = str(tmp_path / "out")
    lines = []
    first = compare(_corpus(), 0.05, output, families=["word2vec"], max_wordnet_pairs=60,
                    print_fn=lambda *a, **k: lines.append(" ".join(map(str, a))))
    assert list(first["families"]) == ["word2vec"]
    entry = first["families"]["word2vec"]
    assert entry["cost"]["steps"] > 0 and entry["fine_tuning"] is None
    assert finite(first) and read_results(output) == first
    assert any("word similarity" in line for line in lines)
    for name in ("report.md", "polysemy_auc_per_layer.png", "probes.png",
                 "pretraining_loss.png"):
        assert os.path.getsize(os.path.join(output, name)) > 0
    probe = entry["feature_probe"]
    assert probe["mean"] == pytest.approx(np.mean(probe["accuracies"]))
    assert probe["std"] == pytest.approx(np.std(probe["accuracies"], ddof=1))

    again = compare(_corpus(), 0.05, output, families=["word2vec"], max_wordnet_pairs=60,
                    print_fn=lambda *a, **k: None)
    assert again["plan"] == os.path.join(output, "results.json")
    for key in ("word_similarity", "polysemy", "feature_probe"):
        assert again["families"]["word2vec"][key] == entry[key]
    assert again["families"]["word2vec"]["cost"]["steps"] == entry["cost"]["steps"]


def test_bad_input_is_refused_before_training(tmp_path):
    output = tmp_path / "out"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        compare([str(tmp_path / "missing.txt")], 1, str(output))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="is empty"):
        compare([str(empty)], 1, str(output))
    small = tmp_path / "small.txt"
    small.write_text("one short document\n\nand another\n")
    with pytest.raises(ValueError, match="too small"):
        compare([str(small)], 1, str(output))
    with pytest.raises(ValueError, match="No model family 'bart'"):
        compare(_corpus(), 1, str(output), families=["bart"])
    with pytest.raises(ValueError, match="minutes"):
        compare(_corpus(), 0, str(output))
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="Cannot write to the output folder"):
        compare(_corpus(), 1, str(blocker / "out"))
    assert not any(p.is_dir() and p.name != "corpus" for p in output.iterdir()) \
        if output.exists() else True


def test_a_plan_of_another_run_is_refused(tmp_path):
    import hashlib

    sha256 = hashlib.sha256(open(_corpus(), "rb").read()).hexdigest()
    plan = tmp_path / "results.json"
    for seed, minutes, digest, match in ((3, 1, sha256, "seed 3"), (0, 2, sha256, "2 minutes"),
                                         (0, 1, "ab" * 32, "sha256 abababababab")):
        plan.write_text(json.dumps({"schema": 1, "seed": seed, "minutes": minutes,
                                    "corpus": {"sha256": digest}, "families": {}}))
        with pytest.raises(ValueError, match=match):
            compare(_corpus(), 1, str(tmp_path / "out"), plan=str(plan))
    output = tmp_path / "again"  # the results.json of an earlier run in OUTPUT
    output.mkdir()
    (output / "results.json").write_text(plan.read_text())
    with pytest.raises(ValueError, match="remove .*results.json or choose another --output"):
        compare(_corpus(), 1, str(output))


@needs_wordnet
@pytest.mark.large
# A shortened smoke for a developer's machine (PyTorch: the fastest here; the
# probes of four models take minutes on TensorFlow). CI's smoke stage runs the
# full 1-minute comparison on PyTorch and checks it with the same checker.
@pytest.mark.backends("torch")
def test_four_families_end_to_end(tmp_path):
    from tests.analysis.compare.results_check import check

    results = compare(_corpus(), 0.1, str(tmp_path / "out"), max_wordnet_pairs=100,
                      work=str(tmp_path / "work"), print_fn=lambda *a, **k: None)
    assert check(str(tmp_path / "out")) == json.loads(
        json.dumps(results))


def test_the_families_come_in_the_order_their_papers_appeared():
    from kzoo.analysis.compare.run import _families
    from kzoo.models.family import families

    chosen = _families(None)
    dated = sorted(f.published for f in families() if f.pretraining is not None)
    assert [f.published for f in chosen] == dated
    assert [f.name for f in chosen][:4] == ["word2vec", "elmo", "gpt", "bert"]
    assert [f.name for f in _families(["bert", "word2vec"])] == ["bert", "word2vec"]
