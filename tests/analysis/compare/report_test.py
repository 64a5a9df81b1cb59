import json
import math
import os

import pytest

from kzoo.analysis.compare import report
from tests.analysis.compare.results_fixture import make_results

pytest.importorskip("matplotlib")


def _row(text, title):
    return next(line for line in text.splitlines() if line.startswith(f"| {title} |"))


def test_results_round_trip_and_report_shows_the_dicts_figures(tmp_path):
    results = make_results()
    paths = report.write_report(results, str(tmp_path))
    assert report.read_results(str(tmp_path)) == results
    assert json.load(open(paths["results"])) == results
    text = open(paths["report"], encoding="utf-8").read()
    header = next(line for line in text.splitlines() if line.startswith("| family |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    for name, entry in results["families"].items():
        cells = dict(zip(columns, [c.strip() for c in
                                   _row(text, entry["title"]).strip("|").split("|")]))
        words = entry["word_similarity"]
        best = max(range(len(words["layers"])), key=lambda i: words["wordsim353"][i])
        assert cells["WordSim-353 Spearman (best layer)"] == (
            f"{words['wordsim353'][best]:.3f} ({words['layers'][best]}, "
            f"n={words['pairs_scored'][best]['wordsim353']})")
        poly = entry["polysemy"]
        chosen = max(range(len(poly["layers"])), key=lambda i: poly["dev_auc"][i])
        assert cells["polysemy test AUC (layer best on dev)"] == (
            f"{poly['test_auc'][chosen]:.3f} ({poly['layers'][chosen]})")
        probe = entry["feature_probe"]
        assert cells["frozen-feature probe accuracy"] == (
            f"{probe['mean']:.3f} ± {probe['std']:.3f} ({probe['layer']})")
        tuned = entry["fine_tuning"]
        assert cells["fine-tuning accuracy"] == (
            "–" if tuned is None else f"{tuned['mean']:.3f} ± {tuned['std']:.3f}")
        assert cells["steps"] == str(entry["cost"]["steps"])
    assert results["command"] in text and "2-core test CPU" in text
    for png in ("polysemy_auc_per_layer.png", "probes.png", "pretraining_loss.png"):
        assert f"]({png})" in text and os.path.exists(tmp_path / png)


def test_one_row_per_family_in_the_results_order():
    results = make_results()
    rows = [line for line in report.table(results).splitlines()[2:]]
    assert [r.split("|")[1].strip() for r in rows] == ["word2vec", "ELMo", "GPT", "BERT"]


def test_missing_figures_show_as_a_dash():
    results = make_results(fine_tunes=())
    entry = results["families"]["elmo"]
    entry["word_similarity"]["analogy"] = [None, None, None]
    entry["polysemy"] = None
    row = _row(report.table(results), "ELMo").strip("|").split("|")
    assert row[7].strip() == "–" and row[8].strip() == "–" and row[10].strip() == "–"


def test_nan_is_refused_not_written(tmp_path):
    results = make_results()
    results["families"]["gpt"]["feature_probe"]["mean"] = math.nan
    with pytest.raises(ValueError):
        report.write_results(results, str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_another_schema_is_refused(tmp_path):
    results = make_results()
    results["schema"] = 2
    (tmp_path / "results.json").write_text(json.dumps(results))
    with pytest.raises(ValueError, match="schema 2"):
        report.read_results(str(tmp_path / "results.json"))
