"""What a finished ``kzoo compare`` run must hold: the four families, each
with word-similarity, per-layer polysemy and probe figures (fine-tuning
for the families that fine-tune), every number finite, the report's table
a row per family. The end-to-end test and CI's smoke stage both check a
run with it:

    python tests/analysis/compare/results_check.py OUTPUT
"""

import json
import math
import os
import sys

FAMILIES = {"word2vec", "elmo", "gpt", "bert"}


def finite(value):
    """Whether every float in a JSON-like value is finite."""
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, list):
        return all(finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


def _mean(values):
    return sum(values) / len(values)


def _std(values):
    mean = _mean(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def check(output):
    """Asserts the run in folder ``output`` is whole; returns its results."""
    from kzoo.models import TextClassifier
    from kzoo.models.family import get_family

    with open(os.path.join(output, "results.json"), encoding="utf-8") as f:
        results = json.load(f)
    assert set(results["families"]) == FAMILIES, sorted(results["families"])
    assert finite(results)
    for name, entry in results["families"].items():
        cost = entry["cost"]
        assert cost["steps"] > 0 and cost["parameters"] > 0 and cost["training_tokens"] > 0
        assert cost["training_seconds"] > 0 and cost["loss_curve"], name
        words, poly = entry["word_similarity"], entry["polysemy"]
        assert len(words["wordsim353"]) == len(words["layers"]) >= 1, name
        assert len(poly["test_auc"]) == len(poly["layers"]) >= 1, name
        assert all(a is None or 0 <= a <= 1 for a in poly["test_auc"]), name
        probe = entry["feature_probe"]
        assert len(probe["accuracies"]) == 5, name
        assert math.isclose(probe["mean"], _mean(probe["accuracies"]), abs_tol=1e-9), name
        fine_tunes = bool(get_family(name).tasks_of(TextClassifier))
        assert (entry["fine_tuning"] is not None) == fine_tunes, name
        if fine_tunes:
            tuned = entry["fine_tuning"]["accuracies"]
            assert len(tuned) == 5 and all(0 <= a <= 1 for a in tuned), name
            assert math.isclose(entry["fine_tuning"]["std"], _std(tuned), abs_tol=1e-9), name
    with open(os.path.join(output, "report.md"), encoding="utf-8") as f:
        text = f.read()
    assert all(f"| {e['title']} |" in text for e in results["families"].values())
    for plot in ("polysemy_auc_per_layer.png", "probes.png", "pretraining_loss.png"):
        with open(os.path.join(output, plot), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", plot
    return results


if __name__ == "__main__":
    done = check(sys.argv[1])
    print("kzoo compare's run is whole:", ", ".join(done["families"]))
