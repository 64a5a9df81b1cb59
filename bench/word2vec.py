"""Benchmark kzoo's word2vec against gensim: training words/s and quality.

Skip-gram (or CBOW with --cbow), dim 100, window 5, negative 5, sample 1e-3,
min_count 5, alpha 0.025, on gensim's Wikipedia excerpt + the Lee corpus
(examples/train_word2vec.py writes it: ~540k words, one paragraph a line).
Rows:

    kzoo-tf  kzoo-jax  kzoo-torch     Word2VecSkipGram.fit on the corpus file
    gensim                            gensim.models.Word2Vec, workers=2

kzoo's rows preprocess with TensorFlow (tf.data) by default; `--engine
python` runs them on the Python preprocessing engine (numpy in a background
thread, no TensorFlow), `--engine tensorflow,python` gives one row each.

Each row runs in its own process (Keras reads its backend once), prints one
JSON line, and the driver prints one table. The rows take turns epoch by
epoch (one epoch of each row per round, only one row computing at a time;
gensim trains one epoch per `train` call, its learning rate decaying over all
of them as in one call), so that a machine whose speed drifts moves every
row alike; `--sequential` runs the rows one after another instead. The
table: training words/s (corpus words x epochs / training seconds, the sum
of the epochs' turns, vocabulary building excluded; kzoo's first epoch
includes `fit`'s setup and compilation, so the steady speed of the later
epochs is shown too),
the ratio to gensim, and WordSim-353 / SimLex-999 Spearman and analogy
accuracy (30k words) of the trained vectors, all computed by kzoo's
WordVectors (equal to gensim's own evaluations).

    .venv/bin/python bench/word2vec.py                  # 4 rows, 5 epochs
    .venv/bin/python bench/word2vec.py --quick          # 1 epoch per row
    .venv/bin/python bench/word2vec.py --cbow --only kzoo-jax,gensim
    .venv/bin/python bench/word2vec.py --batch-size 1024,4096 --only kzoo-jax
    .venv/bin/python bench/word2vec.py --cores 1        # pinned, 1 thread each
    .venv/bin/python bench/word2vec.py --only kzoo-jax,gensim --engine tensorflow,python

Never imported by the tests.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
import _results  # noqa: E402
import _timing  # noqa: E402

BACKENDS = {"tf": "tensorflow", "jax": "jax", "torch": "torch"}
ROWS = (("kzoo", "tf"), ("kzoo", "jax"), ("kzoo", "torch"), ("gensim", ""))
CORPUS = os.path.join(REPO_ROOT, "runs", "word2vec", "enwiki_lee.txt")


def worker_main(args):
    _timing.pin_cores(args.cores)
    # Read by kzoo when it first preprocesses (before any import here).
    os.environ["KZOO_PREPROCESSING"] = args.engine
    import train_word2vec as example

    words = example.write_corpus(args.corpus)
    hyper = argparse.Namespace(
        cbow=args.cbow, dim=100, window=5, negative=5, sample=1e-3, min_count=5,
        epochs=args.epochs, alpha=0.025, batch_size=args.batch_size,
        workers=args.workers, seed=1, verbose=0)
    # Each epoch is one turn (`_timing.begin_turn` / `end_turn`): where the
    # driver interleaves the rows, an epoch waits for its go first.
    if args.worker == "gensim":
        from gensim.models.word2vec import LineSentence

        from kzoo.models import WordVectors

        model = example.gensim_model(args.corpus, hyper)
        # gensim's own linear decay over all the epochs, a piece a call
        # (`train` keeps the rates it was given as the model's new ones).
        alpha, min_alpha = model.alpha, model.min_alpha
        walls = []
        for epoch in range(args.epochs):
            rates = [alpha - (alpha - min_alpha) * e / args.epochs
                     for e in (epoch, epoch + 1)]
            begun = _timing.begin_turn()
            model.train(LineSentence(args.corpus), total_examples=model.corpus_count,
                        epochs=1, start_alpha=rates[0], end_alpha=rates[1])
            walls.append(_timing.end_turn(begun)[0])
        wv = WordVectors(model.wv.vectors, model.wv.index_to_key)
        info, steady = {"train_s": sum(walls)}, None
    else:
        import keras

        import kzoo

        class EpochTurns(keras.callbacks.Callback):
            def __init__(self, begun):
                super().__init__()
                self.begun, self.walls = begun, []

            def on_epoch_end(self, epoch, logs=None):
                self.walls.append(_timing.end_turn(self.begun)[0])
                if epoch + 1 < args.epochs:
                    self.begun = _timing.begin_turn()

        cls = kzoo.models.Word2VecCBOW if args.cbow else kzoo.models.Word2VecSkipGram
        model = cls.from_corpus(args.corpus, hidden_dim=100, min_count=5, window=5,
                                negative=5, sample=1e-3, seed=1)
        model.compile(alpha=0.025)
        # The first turn includes fit's setup (its input pipeline, and
        # compilation in the first epoch).
        turns = EpochTurns(_timing.begin_turn())
        history = model.fit(args.corpus, epochs=args.epochs,
                            batch_size=args.batch_size, verbose=0, callbacks=[turns])
        info = {"train_s": sum(turns.walls), "loss": history.history["loss"]}
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
          f"| SimLex-999 | analogy | final loss | others |")
    print(f"|{'-' * 24}|--------:|---------------:|---------:|------------:"
          f"|-----------:|--------:|-----------:|-------:|")
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
              f"| {r['analogy']:>7.3f} | {loss:>10} |{_timing.load_cell(r)} |")


def driver_main(args, argv):
    import train_word2vec as example

    words = example.write_corpus(args.corpus)
    print(f"word2vec benchmark: {'CBOW' if args.cbow else 'skip-gram'}, dim 100, "
          f"window 5, negative 5, sample 1e-3, min_count 5, {args.epochs} "
          f"epoch(s) on {args.corpus} ({words:,} words); "
          f"{f'{args.cores} core(s) per worker, ' if args.cores else ''}"
          f"machine {_timing.machine_info()}", flush=True)
    rows = []
    only = args.only.split(",") if args.only else None
    for library, short in ROWS:
        name = _row_name(library, short)
        if only and library not in only and name not in only:
            continue
        sizes = args.batch_size.split(",") if library == "kzoo" else ["1024"]
        engines = args.engine.split(",") if library == "kzoo" else ["tensorflow"]
        for size, engine in [(s, e) for e in engines for s in sizes]:
            label = name + ((f" b{size}" if size != "auto" else "")
                            if library == "kzoo" else f" (workers={args.workers})")
            if library == "kzoo" and (len(engines) > 1 or engine != "tensorflow"):
                label += f" {engine}"
            rows.append((label, [
                os.path.abspath(__file__), "--worker", library,
                "--backend", short or "tf", "--epochs", str(args.epochs),
                "--batch-size", size, "--corpus", args.corpus,
                "--workers", str(args.workers), "--engine", engine,
                *(["--cbow"] if args.cbow else []),
                *(["--cores", str(args.cores)] if args.cores else [])],
                {"KERAS_BACKEND": BACKENDS[short or "tf"], "TF_CPP_MIN_LOG_LEVEL": "2"}))
    # The rows take turns epoch by epoch (bench/README.md), unless --sequential.
    results = _timing.run_commands([rows], args.timeout,
                                   interleave=not args.sequential)
    print()
    print_table(results, args)
    print(_timing.LOAD_LEGEND)
    print(f"load average after: {_timing.machine_info()['load_avg']}")
    print("command: python bench/word2vec.py " + " ".join(argv))
    if args.json:
        _results.write(args.json, f"word2vec {'CBOW' if args.cbow else 'skip-gram'}",
                       __file__, argv, results,
                       order=_results.order(args))


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
    parser.add_argument("--engine", default="tensorflow",
                        help="kzoo's preprocessing engine: tensorflow (tf.data), "
                             "python, or both comma-separated (a row each)")
    parser.add_argument("--corpus", default=CORPUS)
    parser.add_argument("--cores", type=int, default=None,
                        help="pin each worker to this many cores and threads")
    parser.add_argument("--timeout", type=int, default=1800, help="s per worker")
    parser.add_argument("--json", default=None,
                        help="also write the results here (bench/_results.py)")
    _timing.add_sequential_argument(parser)
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
