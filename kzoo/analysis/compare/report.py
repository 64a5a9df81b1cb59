"""The comparison's files: ``results.json`` (every figure, schema 1) and
``report.md`` (one table of families x probes, the run's setting, the
figures), each written atomically."""

import json
import os

from kzoo.analysis.compare.plots import PROBES, _finite, probe_figures, write_plots
from kzoo.presets.atomic_files import atomic_file

SCHEMA = 1
RESULTS = "results.json"
REPORT = "report.md"

LIMITS = """\
What the numbers show: how far each family's own pretraining recipe gets on
this corpus in this budget on this machine, measured the same way for all.
What they do not show: how the families compare at the scale of their papers
(billions of words, days of accelerators): these are tiny models trained for
minutes on one small corpus, and a family that learns more per second on a
CPU is favoured. Word-similarity and analogy scores cover only the
evaluation words the corpus holds, and their best layer is picked on the
test pairs themselves (there is no held-out set for them). The sentiment
probes have 200 sentences: the spread over the 5 splits says how much a
difference between families can be trusted."""


def read_results(path):
    """A ``results.json`` (a file, or a folder holding one) as a dict."""
    if os.path.isdir(path):
        path = os.path.join(path, RESULTS)
    with open(path, encoding="utf-8") as f:
        results = json.load(f)
    if results.get("schema") != SCHEMA:
        raise ValueError(f"{path} has schema {results.get('schema')!r}; this kzoo "
                         f"reads schema {SCHEMA}.")
    return results


def write_results(results, output):
    """``output/results.json`` (atomically; NaN and infinities refused:
    JSON has none). Returns its path."""
    path = os.path.join(output, RESULTS)
    text = json.dumps(results, indent=1, allow_nan=False)
    with atomic_file(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    return path


def _number(value, digits=3):
    if not _finite(value):
        return "–"
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 1000:
        return f"{int(value):,}"
    return f"{value:.{digits}f}"


def _count(value):
    if not _finite(value):
        return "–"
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return str(int(value))


def cell(value, std=None, layer=None, count=None):
    """One table cell: ``0.612 ± 0.031``, the layer it comes from and the
    number of items scored."""
    if not _finite(value):
        return "–"
    text = _number(value)
    if _finite(std):
        text += f" ± {_number(std)}"
    notes = [str(layer)] if layer is not None else []
    if count is not None:
        notes.append(f"n={count}")
    return text + (f" ({', '.join(notes)})" if notes else "")


#: the held-out measures the table shows (all are in the sizes section)
HEADLINE = ("perplexity", "loss")


def _held_out(held, keys=HEADLINE):
    held = {k: v for k, v in (held or {}).items() if keys is None or k in keys}
    return ", ".join(f"{k} {_number(v, 2)}" for k, v in held.items()) or "–"


def table(results):
    """The markdown table: a row per family, the cost and each probe."""
    head = (["family", "parameters", "steps", "tokens seen", "held-out"]
            + [label.replace("\n", " ") for _, label in PROBES])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, entry in results["families"].items():
        cost = entry.get("cost") or {}
        figures = probe_figures(entry)
        row = [entry.get("title", name), _count(cost.get("parameters")),
               _number(cost.get("steps")), _count(cost.get("training_tokens")),
               _held_out(cost.get("held_out"))]
        row += [cell(*figures[key], count=figures["scored"].get(key)) for key, _ in PROBES]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def layer_table(entry):
    """A family's per-layer figures: word similarity, analogies, polysemy."""
    words = entry.get("word_similarity") or {}
    poly = entry.get("polysemy") or {}
    layers = list(dict.fromkeys(list(words.get("layers") or ())
                                + list(poly.get("layers") or ())))

    def at(block, key, layer):
        names = list(block.get("layers") or ())
        return block[key][names.index(layer)] if layer in names and block.get(key) else None

    lines = ["| layer | WordSim-353 | SimLex-999 | analogies | polysemy dev AUC | "
             "polysemy test AUC |", "|---|---|---|---|---|---|"]
    for layer in layers:
        values = [at(words, k, layer) for k in ("wordsim353", "simlex999", "analogy")]
        values += [at(poly, k, layer) for k in ("dev_auc", "test_auc")]
        lines.append(f"| {layer} | " + " | ".join(_number(v) for v in values) + " |")
    return "\n".join(lines)


def _options(options):
    return ", ".join(f"{k}={v}" for k, v in (options or {}).items()
                     if v is not None and k != "seed") or "–"


def _minutes(value):
    return f"{value:g} minute{'' if value == 1 else 's'}"


def _marker(edge, name):
    """A section marker (an HTML comment, invisible in the rendered report) by
    which a documentation page includes part of the report (mkdocs'
    ``pymdownx.snippets``: ``--8<-- "report.md:table"``)."""
    return f"<!-- --8<-- [{edge}:{name}] -->"


def render(results):
    """``report.md``'s text."""
    corpus = results.get("corpus") or {}
    files = corpus.get("train_files", []) + corpus.get("held_out_files", [])
    out = [
        "# The four generations on one corpus",
        "",
        f"`{results.get('command', '')}`",
        "",
        _marker("start", "setting"),
        f"- budget: {_minutes(results.get('minutes', 0))} of training per family "
        f"(plus preparation and probes), seed {results.get('seed')}",
        f"- machine: {results.get('machine')}; backend: {results.get('backend')}; "
        f"kzoo {results.get('kzoo')}",
        f"- corpus: {corpus.get('documents', '–')} documents "
        f"({_count(corpus.get('train_words'))} words trained on, "
        f"{_count(corpus.get('held_out_words'))} held out: the last 10% of the "
        f"documents), sha256 {str(corpus.get('sha256', ''))[:16]}…",
    ]
    if corpus.get("sources"):
        out.append(f"- corpus files: {', '.join(map(str, corpus['sources']))}")
    elif files:
        out.append(f"- corpus files: {len(files)}")
    out += [_marker("end", "setting"), "", "## Results", "",
            "Held-out: each family's own loss (and perplexity) on the held-out "
            "documents, not comparable across objectives. Word similarity and "
            "analogies: the best layer's score (its name and the pairs or "
            "questions scored in brackets). Polysemy: the test AUC of the layer with the best dev AUC. "
            "Sentiment (Pang & Lee, 200 sentences): mean accuracy ± std over 5 "
            "stratified splits.", "", _marker("start", "table"), table(results),
            _marker("end", "table"), ""]
    out += ["![Polysemy AUC per layer](polysemy_auc_per_layer.png)", "",
            "![The probes](probes.png)", "",
            "![Pretraining loss](pretraining_loss.png)", "",
            "## Sizes and training", ""]
    for name, entry in results["families"].items():
        cost = entry.get("cost") or {}
        out.append(f"- **{entry.get('title', name)}**: {_options(entry.get('options'))}; "
                   f"{_count(cost.get('parameters'))} parameters, "
                   f"{_number(cost.get('steps'))} steps in "
                   f"{_number(cost.get('training_seconds'), 1)} s after a first step of "
                   f"{_number(cost.get('first_step_seconds'), 1)} s "
                   f"(preparation {_number(cost.get('preparation_seconds'), 1)} s), "
                   f"{_count(cost.get('training_tokens'))} tokens seen; held out: "
                   f"{_held_out(cost.get('held_out'), keys=None)}")
    out += ["", "## Per layer", ""]
    for name, entry in results["families"].items():
        out += [f"### {entry.get('title', name)}", "", layer_table(entry), ""]
    out += ["## What the numbers do and do not show", "", LIMITS, ""]
    return "\n".join(out)


def write_report(results, output):
    """``results.json``, ``report.md`` and the three PNGs in folder ``output``.
    Returns ``{name: path}``."""
    os.makedirs(output, exist_ok=True)
    paths = {"results": write_results(results, output)}
    paths.update(write_plots(results, output))
    paths["report"] = os.path.join(output, REPORT)
    with atomic_file(paths["report"], "w", encoding="utf-8") as f:
        f.write(render(results))
    return paths

