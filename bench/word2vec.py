"""Benchmark kzoo's word2vec against gensim: training words/s and quality.

Skip-gram (or CBOW with --cbow), dim 100, window 5, negative 5, sample 1e-3,
min_count 5, alpha 0.025, on gensim's Wikipedia excerpt + the Lee corpus
(examples/train_word2vec.py writes it: ~540k words, one paragraph a line).
Rows:

    kzoo-tf  kzoo-jax  kzoo-torch     Word2VecSkipGram.fit on the corpus file
    gensim                            gensim.models.Word2Vec, workers=2

Each row runs in its own process (Keras reads its backend once), prints one
JSON line, and the driver prints one table: training words/s (corpus words x
epochs / training seconds, vocabulary building excluded; kzoo's first epoch
includes compilation, so the steady speed of the later epochs is shown too),
the ratio to gensim, and WordSim-353 / SimLex-999 Spearman and analogy
accuracy (30k words) of the trained vectors, all computed by kzoo's
WordVectors (equal to gensim's own evaluations).

    .venv/bin/python bench/word2vec.py                  # 4 rows, 5 epochs
    .venv/bin/python bench/word2vec.py --quick          # 1 epoch per row
    .venv/bin/python bench/word2vec.py --cbow --only kzoo-jax,gensim
    .venv/bin/python bench/word2vec.py --batch-size 1024,4096 --only kzoo-jax
    .venv/bin/python bench/word2vec.py --cores 1        # pinned, 1 thread each

Never imported by the tests.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
import _timing  # noqa: E402

BACKENDS = {"tf": "tensorflow", "jax": "jax", "torch": "torch"}
ROWS = (("kzoo", "tf"), ("kzoo", "jax"), ("kzoo", "torch"), ("gensim", ""))
CORPUS = os.path.join(REPO_ROOT, "runs", "word2vec", "enwiki_lee.txt")


def worker_main(args):
    _timing.pin_cores(args.cores)
    import train_word2vec as example

    words = example.write_corpus(args.corpus)
    hyper = argparse.Namespace(
        cbow=args.cbow, dim=100, window=5, negative=5, sample=1e-3, min_count=5,
        epochs=args.epochs, alpha=0.025, batch_size=args.batch_size,
        workers=args.workers, seed=1, verbose=0)
    if args.worker == "gensim":
        wv, info = example.train_gensim(args.corpus, hyper)
        steady = None
    else:
        import kzoo

        cls = kzoo.models.Word2VecCBOW if args.cbow else kzoo.models.Word2VecSkipGram
        model = cls.from_corpus(args.corpus, hidden_dim=100, min_count=5, window=5,
                                negative=5, sample=1e-3, seed=1)
        model.compile(alpha=0.025)
        start = time.perf_counter()
        history = model.fit(args.corpus, epochs=args.epochs,
                            batch_size=args.batch_size, verbose=0)
        info = {"train_s": time.perf_counter() - start,
                "loss": history.history["loss"]}
        per_epoch = history.history["words_per_sec"]
        steady = (sum(per_epoch[1:]) / len(per_epoch[1:]) if len(per_epoch) > 1
                  else None)
        wv = model.wv
    result = {
        "words": words, "epochs": args.epochs,
        "words_per_sec": words * args.epochs / info["train_s"],
        "steady_words_per_sec": steady, "train_s": info["train_s"],
        "vocabulary": len(wv), **example.evaluate(wv),
        "loss": info.get("loss"), "machine": _timing.machine_info(),
    }
    print(json.dumps(result))


def _row_name(library, short):
    return f"{library}-{short}" if short else library


def print_table(results, args):
    gensim = next((r for n, r in results
                   if n.startswith("gensim") and "error" not in r), None)
    print(f"| {'row':<22} | words/s | steady words/s | x gensim | WordSim-353 "
          f"| SimLex-999 | analogy | final loss |")
    print(f"|{'-' * 24}|--------:|---------------:|---------:|------------:"
          f"|-----------:|--------:|-----------:|")
    for name, r in results:
        if "error" in r:
            print(f"| {name:<22} | error: {r['error'][:300]}")
            continue
        ratio = (f"{r['words_per_sec'] / gensim['words_per_sec']:.2f}"
                 if gensim else "-")
        steady = (f"{r['steady_words_per_sec']:,.0f}"
                  if r.get("steady_words_per_sec") else "-")
        loss = f"{r['loss'][-1]:.3f}" if r.get("loss") else "-"
        print(f"| {name:<22} | {r['words_per_sec']:>7,.0f} | {steady:>14} | "
              f"{ratio:>8} | {r['wordsim353']:>11.3f} | {r['simlex999']:>10.3f} "
              f"| {r['analogy']:>7.3f} | {loss:>10} |")


def driver_main(args, argv):
    import train_word2vec as example

    words = example.write_corpus(args.corpus)
    print(f"word2vec benchmark: {'CBOW' if args.cbow else 'skip-gram'}, dim 100, "
          f"window 5, negative 5, sample 1e-3, min_count 5, {args.epochs} "
          f"epoch(s) on {args.corpus} ({words:,} words); "
          f"{f'{args.cores} core(s) per worker, ' if args.cores else ''}"
          f"machine {_timing.machine_info()}", flush=True)
    results = []
    only = args.only.split(",") if args.only else None
    for library, short in ROWS:
        name = _row_name(library, short)
        if only and library not in only and name not in only:
            continue
        sizes = args.batch_size.split(",") if library == "kzoo" else ["1024"]
        for size in sizes:
            label = name + ((f" b{size}" if size != "auto" else "")
                            if library == "kzoo" else f" (workers={args.workers})")
            print(f"  running {label} ...", end=" ", flush=True)
            result = _timing.run_worker(
                [os.path.abspath(__file__), "--worker", library,
                 "--backend", short or "tf", "--epochs", str(args.epochs),
                 "--batch-size", size, "--corpus", args.corpus,
                 "--workers", str(args.workers),
                 *(["--cbow"] if args.cbow else []),
                 *(["--cores", str(args.cores)] if args.cores else [])],
                env_overrides={"KERAS_BACKEND": BACKENDS[short or "tf"],
                               "TF_CPP_MIN_LOG_LEVEL": "2"},
                timeout=args.timeout)
            print("error" if "error" in result else "done", flush=True)
            results.append((label, result))
    print()
    print_table(results, args)
    print(f"load average after: {_timing.machine_info()['load_avg']}")
    print("command: python bench/word2vec.py " + " ".join(argv))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"argv": argv, "results": dict(results)}, f, indent=1)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", choices=("kzoo", "gensim"),
                        help="run one row in this process (internal)")
    parser.add_argument("--backend", choices=tuple(BACKENDS), default="tf")
    parser.add_argument("--only", default=None,
                        help="comma-separated libraries or rows: kzoo, "
                             "kzoo-jax, gensim, ...")
    parser.add_argument("--cbow", action="store_true")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="1 epoch per row")
    parser.add_argument("--batch-size", default="auto",
                        help="kzoo examples per step (auto: fit's default); a "
                             "comma-separated list gives one row each")
    parser.add_argument("--workers", type=int, default=2, help="gensim threads")
    parser.add_argument("--corpus", default=CORPUS)
    parser.add_argument("--cores", type=int, default=None,
                        help="pin each worker to this many cores and threads")
    parser.add_argument("--timeout", type=int, default=1800, help="s per worker")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.epochs is None:
        args.epochs = 1 if args.quick else 5
    if args.worker:
        args.batch_size = None if args.batch_size == "auto" else int(args.batch_size)
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.worker:
        worker_main(args)
    else:
        driver_main(args, argv)


if __name__ == "__main__":
    main()
