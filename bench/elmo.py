"""Benchmark kzoo's ELMo biLM inference (sentences/s) on each Keras backend.

Sizes (random weights, random words of 3-10 letters, every sentence 20
tokens, so 22 positions with <S> and </S>):

    full   the published ELMo: filters [[1,32],[2,32],[3,64],[4,128],[5,256],
           [6,512],[7,1024]], 2 highway layers, projection 512, 2 x 4096-cell
           LSTMs with 512 projections (93.6M parameters)
    small  LSTM 1024 cells / 128 projections, filters [[1,32],[2,32],[3,64],
           [4,128],[5,256]] (512), 1 highway layer

Reference: AllenNLP 2.10 (torch), whose published speed is ``REFERENCE``
(sentences/s, measured on another machine); AllenNLP cannot be installed
beside this stack (it pins torch < 1.13), so it is not a row here.

``--lstm-loop`` instead times one full-size LSTM layer (4096/512, batch 32 x
22 steps) run two ways on each backend: ``ProjectedLSTM`` (one input matmul
for all steps, then ``keras.ops.scan``) and ``keras.layers.RNN`` around the
same ``ProjectedLSTMCell``.

One worker process per backend (Keras reads its backend once); each prints a
JSON line and the driver prints the table. Run from the repository root:

    .venv/bin/python bench/elmo.py                  # full size, 3 backends
    .venv/bin/python bench/elmo.py --size small
    .venv/bin/python bench/elmo.py --quick          # batch 4, tiny sizes: smoke run
    .venv/bin/python bench/elmo.py --dtype float32,bfloat16   # a row per dtype
    .venv/bin/python bench/elmo.py --lstm-loop      # scan vs keras.layers.RNN

Never imported by the tests. See bench/README.md; the results are on
the benchmarks page, docs/benchmarks.md.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _results  # noqa: E402
import _timing  # noqa: E402

SIZES = {
    "full": dict(num_layers=2, hidden_dim=4096, projection_dim=512,
                 filters=[[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512],
                          [7, 1024]], num_highway_layers=2),
    "small": dict(num_layers=2, hidden_dim=1024, projection_dim=128,
                  filters=[[1, 32], [2, 32], [3, 64], [4, 128], [5, 256]],
                  num_highway_layers=1),
    "tiny": dict(num_layers=2, hidden_dim=64, projection_dim=16,
                 filters=[[1, 4], [2, 8], [3, 16]], num_highway_layers=1),
}
REFERENCE = {"full": 15.0, "small": 156.0}  # AllenNLP 2.10, sentences/s


def _sentences(batch, words, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return [" ".join("".join(rng.choice(letters, rng.integers(3, 11)))
                     for _ in range(words)) for _ in range(batch)]


def _elmo_worker(args):
    import keras
    import numpy as np

    import kzoo

    backend = keras.config.backend()
    size = "tiny" if args.quick else args.size
    dtype = None if args.dtype == "float32" else args.dtype
    backbone = kzoo.ElmoBackbone(**SIZES[size], dropout=0.0, dtype=dtype)
    chars = kzoo.preprocessing.CharacterIds(add_sentence_boundaries=True)
    x = {k: np.asarray(keras.ops.convert_to_numpy(v))
         for k, v in chars(_sentences(args.batch, args.words)).items()}
    x["padding_mask"] = x["padding_mask"].astype("int32")
    jit = {"auto": "auto", "on": True, "off": False}[args.jit]
    backbone.compile(jit_compile=jit)
    timing = _timing.time_calls(
        lambda: backbone.predict_on_batch(x), args.warmup, args.reps)
    return {"size": size, "backend": backend, "jit": args.jit, "dtype": args.dtype,
            "parameters": backbone.count_params(),
            "sentences_per_s": args.batch / timing["median_s"], "timing": timing}


def _lstm_loop_worker(args):
    import keras
    import numpy as np

    from kzoo.layers import ProjectedLSTM, ProjectedLSTMCell

    units, proj = (64, 16) if args.quick else (4096, 512)
    steps = args.words + 2
    x = np.random.default_rng(0).normal(size=(args.batch, steps, proj)).astype("float32")
    result = {"backend": keras.config.backend(), "units": units, "projection": proj}
    for name, layer in (
        ("scan", ProjectedLSTM(units, proj, cell_clip=3.0, projection_clip=3.0)),
        ("keras_rnn", keras.layers.RNN(
            ProjectedLSTMCell(units, proj, cell_clip=3.0, projection_clip=3.0),
            return_sequences=True)),
    ):
        inputs = keras.Input((None, proj))
        model = keras.Model(inputs, layer(inputs))
        timing = _timing.time_calls(
            lambda: model.predict_on_batch(x), args.warmup, args.reps)
        result[f"{name}_ms"] = 1000 * timing["median_s"]
        result[f"{name}_first_s"] = timing["first_s"]
    return result


def worker_main(args):
    import json

    result = _lstm_loop_worker(args) if args.lstm_loop else _elmo_worker(args)
    result["machine"] = _timing.machine_info()
    print(json.dumps(result))


def driver_main(args, argv):
    machine = _timing.machine_info()
    what = "one LSTM layer, scan vs keras.layers.RNN" if args.lstm_loop else (
        f"size {'tiny' if args.quick else args.size}")
    print(f"elmo benchmark: {what}, batch {args.batch} x {args.words} words, "
          f"{args.warmup} warmup + {args.reps} reps (median), machine {machine}",
          flush=True)
    dtypes = args.dtype.split(",")
    passthrough = ["--batch", str(args.batch), "--words", str(args.words),
                   "--warmup", str(args.warmup), "--reps", str(args.reps),
                   "--size", args.size, "--jit", args.jit]
    passthrough += ["--quick"] if args.quick else []
    passthrough += ["--lstm-loop"] if args.lstm_loop else []
    passthrough += ["--cores", str(args.cores)] if args.cores else []
    rows = _timing.run_rows(
        __file__, [("kzoo", short, dtype, len(dtypes) > 1)
                   for short in (args.backends or "tf,jax,torch").split(",")
                   for dtype in dtypes],
        passthrough, args.timeout, interleave=not args.sequential)
    print()
    if args.lstm_loop:
        print(f"{'row':<12} {'scan ms':>10} {'RNN ms':>10} {'RNN/scan':>9}")
        for name, r in rows:
            if "error" in r:
                print(f"{name:<12} error: {r['error'][:200]}")
                continue
            print(f"{name:<12} {r['scan_ms']:>10.1f} {r['keras_rnn_ms']:>10.1f} "
                  f"{r['keras_rnn_ms'] / r['scan_ms']:>9.2f}")
    else:
        reference = None if args.quick else REFERENCE.get(args.size)
        print(f"{'row':<17} {'sent/s':>9} {'first call s':>13} {'params':>11}"
              f" {'others':>6}")
        for name, r in rows:
            if "error" in r:
                print(f"{name:<17} error: {r['error'][:200]}")
                continue
            line = (f"{name:<17} {r['sentences_per_s']:>9.2f} "
                    f"{r['timing']['first_s']:>13.1f} {r['parameters']:>11,}")
            print(line + _timing.load_cell(r))
        print(_timing.LOAD_LEGEND)
        if reference:
            print(f"AllenNLP 2.10's published figure (another machine, not comparable "
                  f"with the rows): {reference} sentences/s")
    print(f"load average after: {_timing.machine_info()['load_avg']}")
    print("command: python bench/elmo.py " + " ".join(argv))
    if args.json:
        size = "tiny" if args.quick else args.size
        reference = {} if args.quick else {"AllenNLP 2.10": REFERENCE[args.size]}
        _results.write(args.json, f"elmo {size}", __file__, argv, rows,
                       order=_results.order(args), reference_sentences_per_s=reference)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    _timing.add_backend_arguments(parser)
    _timing.add_sequential_argument(parser)
    parser.add_argument("--size", choices=("full", "small"), default="full")
    parser.add_argument("--json", default=None,
                        help="also write the results here (bench/_results.py)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: tiny model, batch 4, 1 warmup, 2 reps")
    parser.add_argument("--lstm-loop", action="store_true",
                        help="time ProjectedLSTM (scan) vs keras.layers.RNN")
    parser.add_argument("--jit", choices=("auto", "on", "off"), default="auto",
                        help="jit_compile for predict (auto: Keras' default)")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--words", type=int, default=20)
    parser.add_argument("--dtype", default="float32",
                        help="float32, bfloat16, mixed_bfloat16 or a comma-separated "
                             "list (one row each); bf16 keeps every layer within "
                             "cosine 0.999 of float32 (the AllenNLP fixture test)")
    args = parser.parse_args(argv)
    if args.json and args.lstm_loop:
        parser.error("--json writes the sentences/s rows, which --lstm-loop does "
                     "not measure: drop one of them")
    _timing.split_dtypes(parser, "--dtype", args.dtype,
                         tuple(_timing.SHORT_DTYPES), args.worker)
    defaults = ({"batch": 4, "warmup": 1, "reps": 2} if args.quick
                else {"batch": 32, "warmup": 2, "reps": 5})
    _timing.fill_defaults(args, defaults)
    return args


def main(argv=None):
    _timing.main(parse_args, worker_main, driver_main, argv)


if __name__ == "__main__":
    main()
