"""Benchmark ElmoLanguageModel training: full vs sampled softmax, per backend.

Times ``train_on_batch`` (forward, backward, Adam) of the biLM language
model at the size ``examples/pretrain_elmo.py`` trains (char CNN with 256
filters, 1 highway layer, 2 x 512-cell LSTMs with 128 projections), batch
64 sentences x 32 positions, for each vocabulary size: once with the full
softmax and once with ``num_sampled`` log-uniform negatives. The ratio
column is sampled steps/s over full steps/s in the same worker. Neither
keras-hub nor transformers has ELMo, so there is no other library's row.

One worker process per backend; each prints a JSON line, the driver the
table. Run from the repository root:

    .venv/bin/python bench/elmo_language_model.py
    .venv/bin/python bench/elmo_language_model.py --vocabulary-sizes 20000,100000
    .venv/bin/python bench/elmo_language_model.py --quick    # smoke run

Never imported by the tests. See bench/README.md; the results are on
the benchmarks page, docs/benchmarks.md.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _results  # noqa: E402
import _timing  # noqa: E402

BACKENDS = _timing.BACKENDS
EXAMPLE_SIZE = dict(num_layers=2, hidden_dim=512, projection_dim=128,
                    filters=((1, 16), (2, 16), (3, 32), (4, 64), (5, 128)),
                    num_highway_layers=1, character_dim=16, dropout=0.1)
TINY_SIZE = dict(num_layers=1, hidden_dim=32, projection_dim=8,
                 filters=((1, 4), (2, 4)), num_highway_layers=1, character_dim=4)


def _batch(vocabulary_size, batch, length, seed=0):
    """Sentences of Zipf-distributed words from a vocabulary of that size."""
    import numpy as np

    from kzoo.models.elmo.elmo_language_model_preprocessor import (
        ElmoLanguageModelPreprocessor,
    )
    from kzoo.tokenizers import WordTokenizer

    words = [f"w{i}" for i in range(vocabulary_size - 3)]
    tokenizer = WordTokenizer(vocabulary=["<UNK>", "<S>", "</S>", *words],
                              oov_token="<UNK>")
    rng = np.random.default_rng(seed)
    ids = np.minimum(rng.zipf(1.1, size=(batch, length - 2)), len(words)) - 1
    sentences = [" ".join(words[i] for i in row) for row in ids]
    pre = ElmoLanguageModelPreprocessor(tokenizer, sequence_length=length)
    return pre(sentences)


def worker_main(args):
    import json

    import keras

    from kzoo.models.elmo.elmo_backbone import ElmoBackbone
    from kzoo.models.elmo.elmo_language_model import ElmoLanguageModel

    size = TINY_SIZE if args.quick else EXAMPLE_SIZE
    result = {"backend": keras.config.backend(), "rows": []}
    for vocabulary_size in args.vocabulary_sizes:
        x, y, w = _batch(vocabulary_size, args.batch, args.length)
        for num_sampled in (None, args.num_sampled):
            keras.utils.set_random_seed(0)
            model = ElmoLanguageModel(ElmoBackbone(**size), vocabulary_size=vocabulary_size,
                                      num_sampled=num_sampled)
            model.compile()
            timing = _timing.time_calls(
                lambda: model.train_on_batch(x, y, w), args.warmup, args.reps)
            result["rows"].append({
                "vocabulary_size": vocabulary_size, "num_sampled": num_sampled,
                "steps_per_s": 1 / timing["median_s"], "timing": timing})
    result["machine"] = _timing.machine_info()
    print(json.dumps(result))


def driver_main(args, argv):
    print(f"ElmoLanguageModel train_on_batch: batch {args.batch} x {args.length}, "
          f"{'tiny' if args.quick else 'example'} size, {args.warmup} warmup + "
          f"{args.reps} reps (median), machine {_timing.machine_info()}", flush=True)
    print(f"{'row':<12} {'vocabulary':>10} {'softmax':>14} {'steps/s':>9} "
          f"{'tokens/s':>10} {'first s':>8} {'x full':>7}")
    rows = []
    for short in (args.backends or "tf,jax,torch").split(","):
        passthrough = ["--batch", str(args.batch), "--length", str(args.length),
                       "--warmup", str(args.warmup), "--reps", str(args.reps),
                       "--num-sampled", str(args.num_sampled), "--vocabulary-sizes",
                       ",".join(map(str, args.vocabulary_sizes))]
        passthrough += ["--quick"] if args.quick else []
        passthrough += ["--cores", str(args.cores)] if args.cores else []
        result = _timing.run_worker(
            [os.path.abspath(__file__), "--worker", "--backend", short, *passthrough],
            env_overrides={"KERAS_BACKEND": BACKENDS[short], "TF_CPP_MIN_LOG_LEVEL": "2"},
            timeout=args.timeout)
        rows.append((f"kzoo-{short}", result))
        if "error" in result:
            print(f"kzoo-{short:<7} error: {result['error'][:300]}")
            continue
        full = {}
        for row in result["rows"]:
            sampled = row["num_sampled"]
            if sampled is None:
                full[row["vocabulary_size"]] = row["steps_per_s"]
            ratio = row["steps_per_s"] / full[row["vocabulary_size"]]
            print(f"kzoo-{short:<7} {row['vocabulary_size']:>10,} "
                  f"{'full' if sampled is None else f'sampled {sampled}':>14} "
                  f"{row['steps_per_s']:>9.2f} "
                  f"{row['steps_per_s'] * args.batch * args.length:>10.0f} "
                  f"{row['timing']['first_s']:>8.1f} {ratio:>7.2f}", flush=True)
    print(f"load average after: {_timing.machine_info()['load_avg']}")
    print("command: python bench/elmo_language_model.py " + " ".join(argv))
    if args.json:
        _results.write(args.json, "elmo language model", __file__, argv, rows,
                       order="rows one after another")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    _timing.add_backend_arguments(parser)
    parser.add_argument("--vocabulary-sizes", default="20000,100000",
                        type=lambda s: [int(v) for v in s.split(",")])
    parser.add_argument("--num-sampled", type=int, default=2048)
    parser.add_argument("--json", default=None,
                        help="also write the results here (bench/_results.py)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: tiny model, batch 4, 1 warmup, 2 reps")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--length", type=int, default=32, help="positions, <S> </S> included")
    args = parser.parse_args(argv)
    defaults = ({"batch": 4, "warmup": 1, "reps": 2} if args.quick
                else {"batch": 64, "warmup": 2, "reps": 5})
    _timing.fill_defaults(args, defaults)
    if args.quick:
        args.vocabulary_sizes = sorted({min(v, 500) for v in args.vocabulary_sizes})
        args.num_sampled = min(args.num_sampled, 64)
    return args


def main(argv=None):
    _timing.main(parse_args, worker_main, driver_main, argv)


if __name__ == "__main__":
    main()
