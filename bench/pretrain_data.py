"""Pretraining data at corpus scale: preparation speed, memory, time to the
first step, and whether the input pipeline keeps up with training.

    python bench/pretrain_data.py --families gpt,bert --corpus-mb 4,40 --json out.json
    python bench/pretrain_data.py --families gpt --corpus-mb 1024 --steps 0

For each family and corpus size (Jane Austen's six novels, a paragraph a
line, repeated to the size; gensim's test texts where R's janeaustenr is
not installed), ``kzoo pretrain FAMILY --corpus`` runs in a fresh process
until its first training step: the row records the preparation's MB/s (as
``kzoo prepare`` prints it), the process's peak resident memory and the
seconds from the command to the first step; then the same from the
prepared shards (``--data``). With ``--steps N``, a second
process then measures, on the prepared shards and the family's default
model, the batches/s of the stream alone and the training steps/s with the
stream and with one synthetic batch repeated (the data is not the
bottleneck when the two are within 5%); for word2vec, the words/s of an
epoch from the shards and from the text (the Python engine), taking turns.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import _results
import _timing

FAMILY_SIZES = {"gpt": [], "bert": [], "elmo": [], "word2vec": ["--min-count", "5"]}


def austen_paragraphs():
    """Jane Austen's novels as paragraphs (R's janeaustenr), else gensim's
    test texts' lines."""
    try:
        text = subprocess.run(
            ["Rscript", "-e", "library(janeaustenr); writeLines(austen_books()$text)"],
            capture_output=True, text=True, check=True, timeout=120).stdout
        paragraphs, current = [], []
        for line in text.splitlines():
            if line.strip():
                current.append(line.strip())
            elif current:
                paragraphs.append(" ".join(current))
                current = []
        return paragraphs + ([" ".join(current)] if current else [])
    except (OSError, subprocess.SubprocessError):
        import gensim

        folder = os.path.join(os.path.dirname(gensim.__file__), "test", "test_data")
        with open(os.path.join(folder, "lee_background.cor"), encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip()]


def make_corpus(megabytes, path):
    """A corpus of at least ``megabytes`` MB: the paragraphs repeated
    whole, a blank line between them (each a document)."""
    if os.path.exists(path) and 0 <= os.path.getsize(path) / 1e6 - megabytes < 5:
        return path
    text = "\n\n".join(austen_paragraphs()) + "\n\n"
    data = text.encode("utf-8")
    target = int(megabytes * 1e6)
    with open(path, "wb") as f:
        written = 0
        while written < target:
            f.write(data)
            written += len(data)
    return path


def _peak_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None


def first_step(family, source, output, backend, extra):
    """Runs ``kzoo pretrain`` (``source``: ``["--corpus", FILE]`` or
    ``["--data", DIR]``) until its first step: MB/s, peak MB, seconds."""
    command = [sys.executable, "-m", "kzoo.cli", "pretrain", family, *source,
               "--output", output, "--epochs", "1", "--backend", backend,
               *FAMILY_SIZES[family], *extra]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, bufsize=1)
    rate, peak, seconds, lines = None, None, None, []
    buffer = ""
    while True:
        chunk = process.stdout.read(1)
        if not chunk:
            break
        buffer += chunk
        if "loss:" in buffer:
            seconds = time.perf_counter() - start
            peak = _peak_mb(process.pid)
            process.kill()
            break
        if chunk == "\n":
            lines.append(buffer)
            found = re.search(r"\(([\d.,]+) MB/s\)", buffer)
            if found:
                rate = float(found.group(1).replace(",", ""))
            buffer = ""
    process.wait()
    if seconds is None:
        raise RuntimeError("kzoo pretrain did not reach a step:\n" + "".join(lines[-20:]))
    return {"prepare_mb_per_s": rate, "peak_mb": peak, "first_step_s": seconds}


WORKER = r"""
import sys, time, types, json
import numpy as np, keras
family, data, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
from kzoo.data import TokenShards
from kzoo.models.family import get_family
record = get_family(family).pretraining
options = types.SimpleNamespace(**{"batch_size": None, **record.defaults}, dropout=0.1, seed=0, epochs=1,
                                projection_dim=128, cbow=False, window=5, negative=5)
shards = TokenShards(data)
model, fit = record.from_shards(shards, options)
if "batches_for_epoch" not in fit:  # word2vec: its own passes, shards against text
    from kzoo.preprocessing.engine import engine_scope
    corpus = sys.argv[4]
    words = {"shards": [], "text": []}
    for turn in range(2):  # taking turns, against the machine's drift
        for source in ("shards", "text"):
            keras.utils.set_random_seed(0)
            task, _ = record.from_shards(shards, options)
            with engine_scope("python"):  # the text path without TensorFlow
                history = task.fit(shards if source == "shards" else corpus,
                                   epochs=1, verbose=0)
            words[source].append(history.history["words_per_sec"][-1])
    print(json.dumps({"words_per_s_shards": float(np.median(words["shards"])),
                      "words_per_s_text": float(np.median(words["text"]))}))
    sys.exit(0)
stream = fit["batches_for_epoch"](0, 0)
stream.read_ahead = 0
count = min(steps, len(stream) - 1)
stream[0]  # the first batch builds the stream's layers
start = time.perf_counter()
for i in range(1, count + 1):
    stream[i]
batches = count / (time.perf_counter() - start)

class Timer(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 4:
            self.start = time.perf_counter()
        self.end = time.perf_counter()

def rate(data, epochs=1):
    timer = Timer()
    model.fit(data, epochs=1, steps_per_epoch=count, verbose=0, callbacks=[timer])
    return (count - 5) / (timer.end - timer.start)

one = stream[0]
class Synthetic(keras.utils.PyDataset):
    def __len__(self): return count
    def __getitem__(self, i): return one

rate(Synthetic())  # compiles
real, synthetic = [], []
for epoch in range(1, 4):  # taking turns, against the machine's drift
    real.append(rate(fit["batches_for_epoch"](epoch, 0)))
    synthetic.append(rate(Synthetic()))
real, synthetic = float(np.median(real)), float(np.median(synthetic))
print(json.dumps({"batches_per_s": batches, "steps_per_s_real": real,
                  "steps_per_s_synthetic": synthetic}))
"""


def throughput(family, data, backend, steps, corpus):
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([sys.executable, "-c", WORKER, family, data, str(steps), corpus],
                         env=env, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def benchmark_name(args):
    """``pretraining data, jax``; ``pretraining data at 1 GB, jax`` for a
    corpus of a GB or more."""
    large = max(float(m) for m in args.corpus_mb.split(",")) >= 1000
    return f"pretraining data{' at 1 GB' if large else ''}, {args.backend}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="gpt,bert")
    parser.add_argument("--corpus-mb", default="4,40")
    parser.add_argument("--backend", default="jax")
    parser.add_argument("--steps", default="60,elmo=15",
                        help="steps for the pipeline / training rates (0: skip), and "
                             "FAMILY=N for a family's own")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                          "kzoo-pretrain-data"))
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    steps = {}
    for item in args.steps.split(","):
        family, _, count = item.rpartition("=")
        steps[family] = int(count)
    os.makedirs(args.workdir, exist_ok=True)
    results = []
    for megabytes in [float(m) for m in args.corpus_mb.split(",")]:
        corpus = make_corpus(megabytes, os.path.join(args.workdir, f"corpus-{megabytes:g}mb.txt"))
        for family in args.families.split(","):
            output = os.path.join(args.workdir, f"{family}-{megabytes:g}mb")
            subprocess.run(["rm", "-rf", output, output + ".run", output + "-data",
                            output + "-data.run"], check=True)
            row = {"family": family, "corpus_mb": round(os.path.getsize(corpus) / 1e6, 1),
                   "backend": args.backend}
            cpu0, own0, wall0 = (_timing._cpu_seconds(), _timing._children_cpu_seconds(),
                                 time.time())
            row.update(first_step(family, ["--corpus", corpus], output, args.backend, []))
            again = first_step(family, ["--data", output + ".run/data"], output + "-data",
                               args.backend, [])
            row["first_step_prepared_s"] = again["first_step_s"]
            row["peak_prepared_mb"] = again["peak_mb"]
            count = steps.get(family, steps.get("", 0))
            if count:
                row.update(throughput(family, output + ".run/data", args.backend,
                                      count, corpus))
                if "steps_per_s_real" in row:
                    row["data_cost"] = 1 - row["steps_per_s_real"] / row["steps_per_s_synthetic"]
                    # The CPU time a batch takes to make, over a step's time:
                    # what the data costs at most where it overlaps nothing.
                    row["data_share"] = row["steps_per_s_real"] / row["batches_per_s"]
            cpu1, own1, wall = (_timing._cpu_seconds(), _timing._children_cpu_seconds(),
                                time.time() - wall0)
            row["load"] = {"other_cores": round(max(0.0, (cpu1[0] - cpu0[0]) - (own1 - own0))
                                                / wall, 2),
                           "stolen_cores": round((cpu1[1] - cpu0[1]) / wall, 2)}
            print(row, flush=True)
            results.append((f"{family} {row['corpus_mb']:g} MB {args.backend}", row))
    if args.json:
        _results.write(args.json, benchmark_name(args), __file__,
                       sys.argv[1:] if argv is None else argv, results)


if __name__ == "__main__":
    main()
