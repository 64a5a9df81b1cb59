"""Writes the benchmarks page from the results files in ``bench/results/``.

    python bench/report.py                  # docs/benchmarks.md, docs/img/benchmark-ratios.png
    python bench/report.py --out /tmp/page  # elsewhere (the test's check)

For each benchmark and machine the page shows the latest run on an idle
machine (``date``, then ``time``), with its command and the ratio columns the
script prints, and lists every file of the benchmark as its history. The
chart is kzoo's best row over each reference library's best row, per
benchmark, measure and machine. The same files give the same page and the
same chart (no timestamps in the PNG). Needs no Keras; the chart needs
matplotlib.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _results  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO_ROOT, "bench", "results")
DOCS = os.path.join(REPO_ROOT, "docs")
CHART = "img/benchmark-ratios.png"

#: the reference libraries, in the chart's order: bar colour, legend
REFERENCES = {"transformers": ("#1f77b4", "transformers"),
              "keras-hub": ("#ff7f0e", "keras-hub"),
              "gensim": ("#2ca02c", "gensim"),
              "sentence-transformers": ("#d62728", "sentence-transformers (ONNX backend)")}


def library(name, row):
    """A row's library: its ``library`` field, else its name's first word
    (``kzoo-jax bf16`` -> ``kzoo``, ``gensim (workers=2)`` -> ``gensim``)."""
    if row.get("library"):
        return row["library"]
    word = name.split()[0]
    for known in ("kzoo", "keras-hub", "transformers", "gensim"):
        if word.startswith(known):
            return known
    return word


def _rows(data):
    return [(name, row) for name, row in data["results"].items() if "error" not in row]


def _table_rows(spec, data):
    return spec["rows"](data) if "rows" in spec else _rows(data)


def _best(data, key, which, same=None):
    """The largest ``key`` among rows whose library passes ``which`` (and
    whose ``same`` field equals the given row's, if ``same`` is a pair)."""
    values = [row[key] for name, row in _rows(data)
              if which(library(name, row)) and row.get(key)
              and (same is None or row.get(same[0]) == same[1])]
    return max(values) if values else None


def _ratio(value, other):
    return value / other if value and other else None


def _number(value, spec):
    return "-" if value is None else format(value, spec)


# ------------------------------------------------------------ benchmarks
# Each benchmark: a title, what it measures, its table's columns as
# (header, function(data, name, row) -> cell), and the measures the chart
# compares as (label, key, [(reference, function(data) -> ratio)]).


def _x_same(key, dtype_key):
    """bert.py's ``x same``: the row over the best keras-hub / transformers
    row in the same dtype."""
    def cell(data, name, row):
        other = _best(data, key, lambda lib: lib != "kzoo", (dtype_key, row.get(dtype_key)))
        return _number(_ratio(row.get(key), other), ".2f")
    return cell


def _x_best(key):
    """gpt.py's ``x best``: the row over the best non-kzoo row of any dtype."""
    def cell(data, name, row):
        return _number(_ratio(row.get(key), _best(data, key, lambda lib: lib != "kzoo")), ".2f")
    return cell


def _against(key, reference):
    """kzoo's best row over ``reference``'s best row (any dtype)."""
    def ratio(data):
        return _ratio(_best(data, key, lambda lib: lib == "kzoo"),
                      _best(data, key, lambda lib: lib == reference))
    return ratio


def _field(key, spec, default=None):
    def cell(data, name, row):
        value = row.get(key, default)
        return _number(value, spec) if not isinstance(value, str) else value
    return cell


def _jit(*keys):
    """y / n per phase; ``eager`` for transformers' uncompiled rows, which
    have no jit field; ``-`` where a transcribed row does not say."""
    def cell(data, name, row):
        if not any(k in row for k in keys):
            return "eager" if library(name, row) == "transformers" else "-"
        return "/".join("-" if k not in row else "y" if row[k] else "n" for k in keys)
    return cell


def _x_gensim(data, name, row):
    """word2vec.py's ``x gensim`` (a transcribed ``x_gensim`` where a run
    gave the ratio only)."""
    gensim = next((r for n, r in _rows(data) if library(n, r) == "gensim"), None)
    ratio = _ratio(row.get("words_per_sec"), gensim and gensim.get("words_per_sec"))
    return _number(ratio if ratio is not None else row.get("x_gensim"), ".2f")


def _language_model_rows(data):
    """elmo_language_model.py's table: one row per backend and vocabulary,
    full and sampled softmax side by side."""
    rows = []
    for name, result in _rows(data):
        by_size = {}
        for row in result.get("rows", []):
            entry = by_size.setdefault(row["vocabulary_size"], {})
            if row.get("num_sampled") is None:
                entry["full"] = row.get("steps_per_s")
            else:
                entry["num_sampled"] = row["num_sampled"]
                entry["sampled"] = row.get("steps_per_s")
                entry["x_full"] = row.get("x_full")
        for size, entry in sorted(by_size.items()):
            if entry.get("x_full") is None:
                entry["x_full"] = _ratio(entry.get("sampled"), entry.get("full"))
            rows.append((f"{name} {size:,} words", {"library": "kzoo", **entry}))
    return rows


def _tax(key):
    """raw_text_fit.py's ``tax``: raw minus tokenized seconds (as transcribed,
    or from a worker's ``raw`` and ``tokenized`` times)."""
    def cell(data, name, row):
        tax = (row.get("tax") or {}).get(key)
        raw, tokenized = (row.get("raw") or {}).get(key), (row.get("tokenized") or {}).get(key)
        if tax is None and raw is not None and tokenized is not None:
            tax = raw - tokenized
        return _number(tax, ".2f")
    return cell


def _x_onnx(key, reference, dtype=None):
    """onnx.py's ratios: a row over ``reference``'s row in ``dtype`` (every
    row), or with ``dtype`` None a kzoo row over ``reference``'s row of its
    own dtype (``-`` for the other rows)."""
    def cell(data, name, row):
        if dtype is None and library(name, row) != "kzoo":
            return "-"
        other = _best(data, key, lambda lib: lib == reference,
                      ("dtype", dtype or row.get("dtype")))
        return _number(_ratio(row.get(key), other), ".2f")
    return cell


def _agreement(data, name, row):
    """onnx.py's ``agree``: max |diff| from kzoo's Keras embedder (float32
    rows), the lowest cosine (the others)."""
    check = row.get("check") or {}
    if row.get("dtype") == "float32":
        return _number(check.get("max_abs_diff"), ".1e")
    return _number(check.get("min_cosine"), ".4f")


def _call_ms(shape):
    def cell(data, name, row):
        call = ((row.get("shapes") or {}).get(shape) or {}).get("call_median_s")
        return _number(call and call * 1e3, ".2f")
    return cell


def _lm_ratio(data, name, row):
    return _number(_ratio(row.get("keras_ms"), row.get("kzoo_ms")), ".2f")


_BERT_COLUMNS = [
    ("dtype inference / training",
     lambda d, n, r: f"{r.get('dtype_infer', '-')} / {r.get('dtype_train', '-')}"),
    ("jit", _jit("jit_infer", "jit_train")),
    ("inference seq/s", _field("infer_seq_per_s", ".1f")),
    ("x same", _x_same("infer_seq_per_s", "dtype_infer")),
    ("fine-tuning steps/s", _field("train_steps_per_s", ".3f")),
    ("x same", _x_same("train_steps_per_s", "dtype_train")),
]
_BERT_MEASURES = [
    (label, key, [(ref, _against(key, ref)) for ref in ("transformers", "keras-hub")])
    for label, key in (("inference", "infer_seq_per_s"),
                       ("fine-tuning", "train_steps_per_s"))]
_WORD2VEC_COLUMNS = [
    ("words/s", _field("words_per_sec", ",.0f")),
    ("steady words/s", _field("steady_words_per_sec", ",.0f")),
    ("x gensim", _x_gensim),
    ("WordSim-353", _field("wordsim353", ".3f")),
    ("SimLex-999", _field("simlex999", ".3f")),
    ("analogy", _field("analogy", ".3f")),
]
_WORD2VEC_MEASURES = [("training", "words_per_sec",
                       [("gensim", _against("words_per_sec", "gensim"))])]
_ELMO_COLUMNS = [
    ("dtype", _field("dtype", "s")),
    ("jit", _field("jit", "s")),
    ("sentences/s", _field("sentences_per_s", ".1f")),
]

_PRETRAINING_DATA = dict(
    chart="Pretraining data",
    title="Pretraining data: prepared shards, streamed",
    about="`kzoo pretrain FAMILY --corpus` on Jane Austen's novels repeated to the "
          "corpus size (default model sizes, 2 cores): `prepare MB/s` is the "
          "tokenizing pass as `kzoo prepare` prints it, `peak MB` the process's peak "
          "resident memory and `first step s` the time from the command to the first "
          "training step, preparation included; `--data:` the same from the prepared "
          "shards. `batches/s` is the stream alone (one thread); `steps/s` training "
          "on it and on one synthetic batch repeated (medians of three turns each); "
          "`data cost` the share of the step rate the data takes (within the VM's "
          "drift, which moves steps/s by 10-20% between turns), `data share` a "
          "batch's making time over a step's time (what the data could take at most "
          "were it not made in a background thread). word2vec: words/s of an epoch "
          "from the shards and from the text (Python engine), taking turns.",
    columns=[("prepare MB/s", _field("prepare_mb_per_s", ".1f")),
             ("peak MB", _field("peak_mb", ",.0f")),
             ("first step s", _field("first_step_s", ".1f")),
             ("--data: first step s", _field("first_step_prepared_s", ".1f")),
             ("--data: peak MB", _field("peak_prepared_mb", ",.0f")),
             ("batches/s", _field("batches_per_s", ".1f")),
             ("steps/s", _field("steps_per_s_real", ".2f")),
             ("synthetic steps/s", _field("steps_per_s_synthetic", ".2f")),
             ("data cost", _field("data_cost", ".1%")),
             ("data share", _field("data_share", ".1%")),
             ("word2vec words/s shards", _field("words_per_s_shards", ",.0f")),
             ("text", _field("words_per_s_text", ",.0f"))],
    measures=[])

BENCHMARKS = {
    "bert": dict(
        chart="BERT",
        title="BERT inference and fine-tuning",
        about="MiniLM-L6 shape (6 layers, hidden 384, 12 heads), random weights, batch "
              "32 x 128: inference is the backbone's forward pass, fine-tuning one "
              "training step of a 2-class classifier (Adam). `x same` is the row over "
              "the best keras-hub / transformers row in the same dtype.",
        columns=_BERT_COLUMNS, measures=_BERT_MEASURES),
    "bert compiled": dict(
        chart="BERT, torch.compile",
        title="BERT with torch.compile",
        about="As the BERT benchmark, PyTorch rows only, every model compiled "
              "(`--jit on` compiles transformers' model too).",
        columns=_BERT_COLUMNS, measures=_BERT_MEASURES),
    "gpt": dict(
        chart="GPT",
        title="GPT generation",
        about="GPT-2 architecture with 6 layers, hidden 512, 8 heads, vocabulary 50257, "
              "random weights; 32-token prompts, 128 new tokens, greedy. New tokens/s at "
              "batch 1 and 8; `x best` is the row over the best keras-hub / transformers "
              "row of any dtype; `first s` is the first call, compilation included.",
        columns=[
            ("dtype", _field("dtype", "s")),
            ("jit", _jit("jit")),
            ("batch 1 tokens/s", _field("tokens_per_s_1", ".1f")),
            ("x best", _x_best("tokens_per_s_1")),
            ("first s", lambda d, n, r: _number((r.get("batch_1") or {}).get("first_s"), ".1f")),
            ("batch 8 tokens/s", _field("tokens_per_s_8", ".1f")),
            ("x best", _x_best("tokens_per_s_8")),
            ("first s", lambda d, n, r: _number((r.get("batch_8") or {}).get("first_s"), ".1f")),
        ],
        measures=[(label, key, [(ref, _against(key, ref))
                                for ref in ("transformers", "keras-hub")])
                  for label, key in (("batch 1", "tokens_per_s_1"),
                                     ("batch 8", "tokens_per_s_8"))]),
    "elmo full": dict(
        chart="ELMo (published size)",
        title="ELMo inference, published size",
        about="The published ELMo (93.6M parameters), random weights, batch 32 x 20 "
              "words. AllenNLP cannot be installed beside this stack: its published "
              "figure, measured on another machine, is given below each table as a "
              "note, not as a ratio.",
        columns=_ELMO_COLUMNS, measures=[]),
    "elmo small": dict(
        chart="ELMo (small)",
        title="ELMo inference, small size",
        about="A 5.4M-parameter ELMo (LSTM 1024 / 128), as the published-size one.",
        columns=_ELMO_COLUMNS, measures=[]),
    "word2vec skip-gram": dict(
        chart="word2vec skip-gram",
        title="word2vec skip-gram training",
        about="gensim's Wikipedia excerpt + Lee corpus, dim 100, window 5, negative 5, "
              "5 epochs; words/s counts every epoch (setup included), `steady` leaves "
              "out the first; `x gensim` is words/s over gensim's (`workers=2`).",
        columns=_WORD2VEC_COLUMNS, measures=_WORD2VEC_MEASURES),
    "word2vec CBOW": dict(
        chart="word2vec CBOW",
        title="word2vec CBOW training",
        about="As skip-gram, with CBOW.",
        columns=_WORD2VEC_COLUMNS, measures=_WORD2VEC_MEASURES),
    "raw-text fit": dict(
        chart="raw-text tax",
        title="Raw-text tax",
        about="Seconds that raw strings add over the same batches given tokenized "
              "(MiniLM's WordPiece, a 2-layer backbone, batch 32 x 64): per epoch, a "
              "second `fit`, an `evaluate` and a `predict` call; `engine` is kzoo's "
              "preprocessing engine (tf.data or Python).",
        columns=[("engine", _field("engine", "s", "-")),
                 ("raw epoch s", lambda d, n, r: _number((r.get("raw") or {}).get("epoch_s"), ".3f")),
                 ("per epoch", _tax("epoch_s")), ("2nd fit", _tax("second_fit_s")),
                 ("evaluate", _tax("evaluate_s")), ("predict", _tax("predict_s"))],
        measures=[]),
    "elmo language model": dict(
        chart="ELMo LM",
        title="ELMo language-model training, full and sampled softmax",
        about="`ElmoLanguageModel.train_on_batch` at the size examples/pretrain_elmo.py "
              "trains, batch 64 x 32, steps/s with the full softmax and with sampled "
              "negatives; `x full` is sampled over full, in the same worker.",
        rows=_language_model_rows,
        columns=[("full steps/s", _field("full", ".2f")),
                 ("negatives", _field("num_sampled", "d")),
                 ("sampled steps/s", _field("sampled", ".2f")),
                 ("x full", lambda d, n, r: _number(r.get("x_full"),
                                                     ".2f" if r.get("full") else "g"))],
        measures=[]),
    "bert profile": dict(
        chart="BERT profile",
        title="Where a PyTorch BERT forward pass goes",
        about="`torch.profiler` over one forward pass of kzoo's `BertBackbone` and "
              "transformers' `BertModel`, bf16, batch 32 x 128, eager: self CPU "
              "milliseconds a pass per op or group of ops, as the run reported them.",
        columns=[("kzoo", _field("kzoo", "s")),
                 ("transformers", _field("transformers", "s"))],
        measures=[]),
    "onnx": dict(
        chart="MiniLM on ONNX Runtime",
        title="Sentence embeddings on ONNX Runtime",
        about="all-MiniLM-L6-v2 sentence embeddings (mean pooling, unit length) from the "
              "same token ids: onnxruntime on kzoo's ONNX export (`kzoo-onnx`), "
              "sentence-transformers' ONNX backend (`st-onnx`, optimum's export; int8 by "
              "`export_dynamic_quantized_onnx_model`) and transformers eager, sequences/s "
              "at batch 32 x 128 and 1 x 16, the same intra-op threads in every row. "
              "`agree` is the row's max |diff| from kzoo's Keras embedder on real "
              "sentences (fp32) or its lowest cosine (int8, bf16); `x st` is a kzoo row "
              "over the st-onnx row of its dtype, `x hf32` a row over transformers fp32.",
        columns=[
            ("dtype", _field("dtype", "s")),
            ("agree", _agreement),
            ("32x128 seq/s", _field("seq_per_s_32x128", ".1f")),
            ("x st", _x_onnx("seq_per_s_32x128", "sentence-transformers")),
            ("x hf32", _x_onnx("seq_per_s_32x128", "transformers", "float32")),
            ("1x16 ms", _call_ms("1x16")),
            ("x st", _x_onnx("seq_per_s_1x16", "sentence-transformers")),
            ("x hf32", _x_onnx("seq_per_s_1x16", "transformers", "float32")),
        ],
        measures=[(label, key, [(ref, _against(key, ref))
                                for ref in ("sentence-transformers", "transformers")])
                  for label, key in (("batch 32 x 128", "seq_per_s_32x128"),
                                     ("batch 1 x 16", "seq_per_s_1x16"))]),
    "pretraining data, jax": dict(_PRETRAINING_DATA, chart="Pretraining data, JAX",
                                  title="Pretraining data on JAX: shards, streamed"),
    "pretraining data, torch": dict(_PRETRAINING_DATA, chart="Pretraining data, PyTorch",
                                    title="Pretraining data on PyTorch: shards, streamed"),
    "pretraining data at 1 GB, jax": dict(
        _PRETRAINING_DATA, chart="Pretraining data at 1 GB, JAX",
        title="Pretraining data on JAX: a corpus of 1 GB"),
    "lm loss": dict(
        chart="LM loss",
        title="Language-model loss",
        about="Value and gradient of Keras' sparse cross-entropy on logits against "
              "kzoo's `SparseLogitsCrossEntropy`, milliseconds; `x` is Keras' time "
              "over kzoo's. On PyTorch Keras' own computation is used.",
        columns=[("Keras ms", _field("keras_ms", ".0f")),
                 ("kzoo ms", _field("kzoo_ms", ".0f")), ("x", _lm_ratio)],
        measures=[]),
}

#: columns of words, aligned left (numbers align right)
TEXT_COLUMNS = ("dtype inference / training", "dtype", "jit", "engine")

_REQUIRED = ("benchmark", "script", "command", "machine", "date", "idle", "results")


def load(folder):
    """Every ``*.json`` of ``folder`` as ``[(file name, data)]``, checked."""
    files = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name)) as f:
            data = json.load(f)
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise ValueError(f"{name} lacks {missing}: write results with a script's "
                             "--json (bench/_results.py) or add the fields by hand.")
        if data["benchmark"] not in BENCHMARKS:
            raise ValueError(f"{name}: unknown benchmark {data['benchmark']!r}; add it to "
                             f"BENCHMARKS in bench/report.py (known: {sorted(BENCHMARKS)}).")
        files.append((name, data))
    return files


def _when(item):
    name, data = item
    return data["date"], data.get("time", ""), name


def latest_idle(files):
    """``{benchmark: [(machine, file name, data)]}``: per machine the latest
    idle run, machines in name order."""
    chosen = {}
    for name, data in sorted(files, key=_when):
        if data["idle"]:
            chosen.setdefault(data["benchmark"], {})[_results.result_machine(data)] = (
                name, data)
    return {bench: [(machine, *machines[machine]) for machine in sorted(machines)]
            for bench, machines in chosen.items()}


def _table(spec, data):
    headers = ["row"] + [h for h, _ in spec["columns"]]
    align = ["---" if h in TEXT_COLUMNS else "--:" for h, _ in spec["columns"]]
    lines = ["| " + " | ".join(headers) + " |", "|---|" + "|".join(align) + "|"]
    for name, row in _table_rows(spec, data):
        cells = [name] + [cell(data, name, row) for _, cell in spec["columns"]]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _published_figures(data):
    """A file's published reference figures (measured on other machines),
    as a labelled note: never divided into this machine's rows."""
    figures = data.get("reference_sentences_per_s") or {}
    return [line for reference, value in figures.items() if value for line in (
        "", f"{reference}'s published figure, measured on another machine and so "
        f"not comparable with the rows above: {value:,.1f} sentences/s.")]


def chart_bars(files):
    """The chart's bars: ``[(label, reference, ratio)]`` from the latest idle
    runs, in the page's order."""
    bars = []
    latest = latest_idle(files)
    for bench, spec in BENCHMARKS.items():
        for machine, name, data in latest.get(bench, []):
            for label, _, references in spec["measures"]:
                for reference, ratio in references:
                    value = ratio(data)
                    if value is not None:
                        bars.append((f"{spec['chart']}, {label}\n{machine}",
                                     reference, value))
    return bars


def markdown(files, results_path="bench/results"):
    """The benchmarks page, as a string."""
    latest = latest_idle(files)
    out = [
        "# Benchmarks",
        "",
        "<!-- Generated by bench/report.py from bench/results/*.json: edit those, "
        "then run `python bench/report.py`. -->",
        "",
        "Speed of kzoo's models beside keras-hub, Hugging Face transformers and gensim, "
        "measured on CPUs by the scripts in `bench/`. Every figure below comes from a "
        f"results file in `{results_path}/`.",
        "",
        "## How to read this",
        "",
        "- Each table is the latest run on an idle machine (no row ran beside other "
        "work) for one benchmark and one machine, with the command that made it "
        "(by date, then time of day; a run without a recorded time counts as the "
        "day's earliest). Runs on a busy machine stay in the history but are not shown.",
        "- Figures from different machines, or from different runs, are not "
        "comparable: compare the rows of one table. Rows that *take turns* ran one "
        "timed call each in round robin, so a machine whose speed drifts moves them "
        "alike; *one after another* rows did not.",
        "- A ratio above 1 means kzoo is faster. The ratio columns are the ones the "
        "script prints; the chart divides kzoo's best row (any backend and dtype) by "
        "the reference library's best row in the same table. Files transcribed from "
        "earlier printed tables hold rounded figures, so a ratio computed from them "
        "can differ from the printed one in its last digit.",
        "",
        f"![kzoo's best row over each reference's best row]({CHART})",
        "",
        "## How to reproduce",
        "",
        "Run a script from the repository root with `--json`, save the file in "
        f"`{results_path}/` as `<date>-<benchmark>-<machine>.json`, then regenerate "
        "this page and its chart:",
        "",
        "```bash",
        "python bench/bert.py --dtype float32,bfloat16 --others-dtype bfloat16 \\",
        f"    --json {results_path}/$(date -u +%F)-bert-mymachine.json",
        "python bench/report.py",
        "```",
        "",
        "`bench/README.md` describes each script and its options.",
    ]
    for bench, spec in BENCHMARKS.items():
        history = sorted((item for item in files if item[1]["benchmark"] == bench),
                         key=_when)
        if not history:
            continue
        out += ["", f"## {spec['title']}", "", spec["about"]]
        if not latest.get(bench):
            out += ["", "No run of this benchmark is recorded as idle: its figures are "
                    "in the files below."]
        for machine, name, data in latest.get(bench, []):
            order = f", {data['order']}" if data.get("order") else ""
            out += ["", f"### {machine}, {data['date']}", "",
                    f"`{data['command']}` (idle{order}; `{results_path}/{name}`)", ""]
            out += _table(spec, data)
            out += _published_figures(data)
        out += ["", "History:", ""]
        for name, data in history:
            idle = "idle" if data["idle"] else data.get("idle_note") or "busy"
            source = "".join(f", {data[k]}" for k in ("kzoo_version", "source") if data.get(k))
            out.append(f"- `{results_path}/{name}`: {data['date']}, "
                       f"{_results.result_machine(data)}, "
                       f"{idle}{source}")
    return "\n".join(out) + "\n"


def chart(files, path):
    """Writes the ratio chart to ``path`` (PNG, no timestamps)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = chart_bars(files)
    labels = list(dict.fromkeys(label for label, _, _ in bars))
    references = [r for r in REFERENCES if any(ref == r for _, ref, _ in bars)]
    height = 0.8 / max(1, max(sum(b[0] == label for b in bars) for label in labels))
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(labels) + 1.5))
    for reference in references:
        ys, values = [], []
        for label, ref, value in bars:
            if ref == reference:
                # the label's bars side by side around its tick
                refs = [r for lab, r, _ in bars if lab == label]
                offset = refs.index(ref) - (len(refs) - 1) / 2
                ys.append(labels.index(label) + offset * height)
                values.append(value)
        colour, legend = REFERENCES[reference]
        ax.barh(ys, values, height=height, color=colour, label=legend)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("kzoo's best row / the reference's best row (above 1: kzoo faster)")
    ax.set_ylabel("benchmark, measure and machine (latest idle run)")
    ax.set_title("kzoo against the reference libraries")
    ax.legend(title="reference", loc="lower right", fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", default=RESULTS, help="folder of results files")
    parser.add_argument("--out", default=DOCS,
                        help=f"folder for benchmarks.md and {CHART} (default: docs/)")
    parser.add_argument("--no-chart", action="store_true",
                        help="write the page only (no matplotlib needed)")
    args = parser.parse_args(argv)
    files = load(args.results)
    if not files:
        parser.error(f"no *.json results in {args.results}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "benchmarks.md"), "w") as f:
        f.write(markdown(files))
    if not args.no_chart:
        chart(files, os.path.join(args.out, CHART))
    print(f"wrote {os.path.join(args.out, 'benchmarks.md')}", file=sys.stderr)


if __name__ == "__main__":
    main()
