"""Benchmark kzoo's GPT generation against keras-hub and transformers.

Config: GPT-2 architecture, 6 layers, hidden 512, 8 heads, FFN
2048, vocabulary 50257, context 1024, random weights; prompts of 32 random
tokens, 128 new tokens, greedy, no stop token (every row makes all 128), at
batch 1 and batch 8. Measures new tokens/s (batch x 128 / seconds per
``generate`` call, the median of ``--reps`` calls after one untimed call that
compiles) for:

    kzoo-tf  kzoo-jax  kzoo-torch            kzoo.models.GPTCausalLM.generate_token_ids
    keras-hub-tf  keras-hub-jax  keras-hub-torch   keras_hub.models.GPT2CausalLM.generate
    transformers-torch                       GPT2LMHeadModel.generate (KV cache)

One worker process per row (Keras reads its backend once per process), each
printing one JSON line; the driver prints one table with ratios to the best
non-kzoo row. TensorFlow rows use XLA (``jit_compile=True``; ``--tf-jit off``
for Keras' CPU default, plain tf.function), JAX rows jax.jit, torch rows run
eagerly (as Keras does by default). Run from the repository root:

    .venv/bin/python bench/gpt.py                 # full run
    .venv/bin/python bench/gpt.py --quick         # smoke run: 16 new tokens, 1 rep
    .venv/bin/python bench/gpt.py --only kzoo-jax,keras-hub-jax --cores 1
    .venv/bin/python bench/gpt.py --worker kzoo --backend torch   # one row, one JSON line

Never imported by the tests.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _results  # noqa: E402
import _timing  # noqa: E402


CONFIG = {
    "vocabulary_size": 50257,
    "num_layers": 6,
    "num_heads": 8,
    "hidden_dim": 512,
    "intermediate_dim": 2048,
    "max_sequence_length": 1024,
}
BACKENDS = _timing.BACKENDS
ROWS = (
    ("kzoo", "tf"), ("kzoo", "jax"), ("kzoo", "torch"),
    ("keras-hub", "tf"), ("keras-hub", "jax"), ("keras-hub", "torch"),
    ("transformers", "torch"),
)


def _prompts(batch, length, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.integers(1, CONFIG["vocabulary_size"], (batch, length)).astype("int32")


# ----------------------------------------------------------------- workers


def _policy(dtype):
    """The Keras dtype policy a row is built in: int8 rows are built in
    float32, then `quantize("int8")` (Keras' int8: int8 weights with
    per-channel scales, each layer's inputs quantized on the fly; the tied
    output embedding too). kzoo's int8 GPT keeps held-out perplexity within
    1% of float32 (tests/models/gpt/gpt_reduced_precision_test.py)."""
    return None if dtype in ("float32", "int8") else dtype


def _kzoo_generate(args):
    import keras

    import kzoo

    keras.utils.set_random_seed(0)
    backbone = kzoo.models.GPTBackbone(
        **CONFIG, dropout=0.0, dtype=_policy(args.dtype))
    if args.dtype == "int8":
        backbone.quantize("int8")
    total = args.prompt_length + args.new_tokens
    info = {}  # filled by make(), read after the timed calls

    def make(batch):
        # A task per batch size, so each compiles for its own shape, as a
        # user generating at one batch size sees: a shared one retraces
        # TensorFlow's function for a batch of unknown size at the second.
        lm = kzoo.models.GPTCausalLM(backbone)
        if keras.config.backend() == "tensorflow":
            lm.compile(jit_compile=args.tf_jit == "on")
        info["jit"] = bool(lm.jit_compile)
        prompts = _prompts(batch, args.prompt_length).tolist()

        def run():
            out = lm.generate_token_ids(prompts, max_length=total, stop_token_ids=None)
            assert all(len(row) == total for row in out)
        return run
    return make, info


def _keras_hub_generate(args):
    import keras
    import keras_hub
    import numpy as np

    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.GPT2Backbone(
        **CONFIG, dropout=0.0, dtype=_policy(args.others_dtype))
    if args.others_dtype == "int8":
        backbone.quantize("int8")
    jit = keras.config.backend() == "jax" or (
        keras.config.backend() == "tensorflow" and args.tf_jit == "on")
    total = args.prompt_length + args.new_tokens

    def make(batch):
        # A task per batch size (see _kzoo_generate).
        lm = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
        lm.compile(sampler="greedy", jit_compile=jit)
        token_ids = np.zeros((batch, total), "int32")
        token_ids[:, :args.prompt_length] = _prompts(batch, args.prompt_length)
        mask = np.zeros((batch, total), bool)
        mask[:, :args.prompt_length] = True
        inputs = {"token_ids": token_ids, "padding_mask": mask}

        def run():
            out = lm.generate(inputs, stop_token_ids=None)
            assert np.asarray(out["padding_mask"]).all()
        return run
    return make, {"jit": jit}


def _transformers_generate(args):
    import torch
    import transformers

    config = transformers.GPT2Config(
        vocab_size=CONFIG["vocabulary_size"], n_positions=CONFIG["max_sequence_length"],
        n_embd=CONFIG["hidden_dim"], n_layer=CONFIG["num_layers"],
        n_head=CONFIG["num_heads"], n_inner=CONFIG["intermediate_dim"])
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    if args.others_dtype == "bfloat16":
        model = model.to(torch.bfloat16)

    def make(batch):
        ids = torch.from_numpy(_prompts(batch, args.prompt_length)).long()

        def run():
            with torch.inference_mode():
                out = model.generate(
                    ids, attention_mask=torch.ones_like(ids),
                    max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                    do_sample=False, use_cache=True, pad_token_id=0, eos_token_id=None)
            assert out.shape[1] == args.prompt_length + args.new_tokens
        return run
    return make, {"attn_implementation": model.config._attn_implementation,
                  "torch_threads": torch.get_num_threads()}


def worker_main(args):
    make = {"kzoo": _kzoo_generate, "keras-hub": _keras_hub_generate,
            "transformers": _transformers_generate}[args.worker]
    make, result = make(args)
    for batch in args.batches:
        timing = _timing.time_calls(make(batch), 1, args.reps)
        result[f"batch_{batch}"] = timing
        result[f"tokens_per_s_{batch}"] = batch * args.new_tokens / timing["median_s"]
    result.update(library=args.worker, backend=args.backend,
                  dtype=args.dtype if args.worker == "kzoo" else args.others_dtype,
                  machine=_timing.machine_info())
    print(json.dumps(result))


# ------------------------------------------------------------------ driver


def print_table(results, args):
    def best(key, kzoo):
        values = [r.get(key) for name, r in results
                  if name.startswith("kzoo") == kzoo and r.get(key)]
        return max(values) if values else None

    header = f"{'row':<24} {'jit':<5}" + "".join(
        f" {f'b{b} tok/s':>10} {'x best':>6} {'first s':>7}" for b in args.batches
    ) + f" {'others':>6}"
    print(header)
    print("-" * len(header))
    for name, r in results:
        if "error" in r:
            print(f"{name:<24} ERROR {r['error'][:400]}")
            continue
        jit = {True: "y", False: "n", None: "eager"}[r.get("jit")]
        line = f"{name:<24} {jit:<5}"
        for b in args.batches:
            value, other = r.get(f"tokens_per_s_{b}"), best(f"tokens_per_s_{b}", False)
            ratio = value / other if value and other else None
            first = r.get(f"batch_{b}", {}).get("first_s")
            line += (f" {value:10.1f}" if value else f" {'-':>10}")
            line += (f" {ratio:6.2f}" if ratio else f" {'-':>6}")
            line += (f" {first:7.1f}" if first else f" {'-':>7}")
        print(line + _timing.load_cell(r))
    print(f"new tokens/s = batch x {args.new_tokens} / median seconds per generate "
          f"call ({args.reps} reps after one untimed call); first s = that first "
          "call (compilation included); x best = ratio to the best non-kzoo row "
          f"of any dtype; {_timing.LOAD_LEGEND}.")
    for b in args.batches:
        key = f"tokens_per_s_{b}"
        top, other = best(key, True), best(key, False)
        kzoo_rows = [(r[key], name) for name, r in results
                     if name.startswith("kzoo") and r.get(key)]
        if not top:
            continue
        line = f"batch {b}: "
        if other:
            line += f"kzoo best / best other = {top / other:.2f}x"
            line += " (target >= 1.3x); " if b >= 8 else "; "
        slowest = min(kzoo_rows)
        line += (f"slowest kzoo backend ({slowest[1]}) is {top / slowest[0]:.2f}x "
                 "behind kzoo's best (target <= 3x)")
        print(line)
    for line in same_dtype_ratios(results, args.batches):
        print(line)


def same_dtype_ratios(results, batches):
    """One line per batch size and kzoo PyTorch row: its new tokens/s over
    transformers' row of the same dtype (like with like)."""
    by_dtype = {r.get("dtype"): r for name, r in results
                if name.startswith("transformers") and "error" not in r}
    lines = []
    for b in batches:
        key = f"tokens_per_s_{b}"
        for name, r in results:
            other = by_dtype.get(r.get("dtype"))
            if (name.startswith("kzoo-torch") and other and r.get(key)
                    and other.get(key)):
                lines.append(
                    f"batch {b}, {r['dtype']}: kzoo-torch / transformers-torch = "
                    f"{r[key] / other[key]:.2f}x (target >= 1.0x)")
    return lines


def driver_main(args, argv):
    passthrough = ["--prompt-length", str(args.prompt_length), "--new-tokens",
                   str(args.new_tokens), "--reps", str(args.reps), "--batches",
                   ",".join(map(str, args.batches)), "--tf-jit", args.tf_jit]
    if args.cores:
        passthrough += ["--cores", str(args.cores)]
    print(f"gpt benchmark: {CONFIG}, prompt {args.prompt_length} + "
          f"{args.new_tokens} new tokens, greedy, batches {args.batches}, "
          f"machine {_timing.machine_info()}", flush=True)
    rows = []
    others = args.others_dtype.split(",")
    kzoo_dtypes = args.dtype.split(",")
    for library, short in ROWS:
        name = f"{library}-{short}"
        if args.only and library not in args.only.split(",") and (
                name not in args.only.split(",")):
            continue
        dtypes = kzoo_dtypes if library == "kzoo" else others
        if library == "transformers" and "int8" in dtypes:
            # Keras' quantize has no transformers counterpart here: torch's
            # dynamic int8 quantization takes nn.Linear, GPT-2's layers are
            # Conv1D.
            print("  (no transformers int8 row: GPT-2's layers are Conv1D, which "
                  "torch's dynamic int8 quantization does not take)")
            dtypes = [d for d in dtypes if d != "int8"]
        rows += [(library, short, dtype, len(dtypes) > 1) for dtype in dtypes]
    results = _timing.run_rows(__file__, rows, passthrough, args.timeout,
                               interleave=not args.sequential)
    print()
    print_table(results, args)
    print(f"machine after: {_timing.machine_info()}")
    print("command: python bench/gpt.py " + " ".join(argv))
    if args.json:
        _results.write(args.json, "gpt", __file__, argv, results,
                       order=_results.order(args))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", choices=("kzoo", "keras-hub", "transformers"),
                        help="run one row in this process (internal)")
    parser.add_argument("--backend", choices=tuple(BACKENDS), default=None)
    parser.add_argument("--only", default=None,
                        help="comma-separated libraries or rows, e.g. kzoo or "
                             "kzoo-jax,transformers-torch")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 16 new tokens, 1 timed rep")
    parser.add_argument("--prompt-length", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=None)
    parser.add_argument("--batches", default="1,8",
                        type=lambda s: [int(b) for b in s.split(",")])
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--tf-jit", default="on", choices=("on", "off"),
                        help="XLA for the TensorFlow Keras rows")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per worker")
    _timing.add_sequential_argument(parser)
    parser.add_argument("--cores", type=int, default=None,
                        help="pin each worker to this many cores (the last ones) "
                             "and as many threads")
    parser.add_argument("--others-dtype", default="float32",
                        help="keras-hub and transformers rows' dtype: float32, "
                             "bfloat16 (keras-hub's dtype policy; transformers' "
                             "weights cast), int8 (keras-hub only: Keras' "
                             "quantize) or several comma-separated, one row "
                             "each")
    parser.add_argument("--dtype", default="float32",
                        help="kzoo rows' dtype: float32, bfloat16, int8 "
                             "(float32, then quantize('int8')) or several "
                             "comma-separated, one row each")
    parser.add_argument("--json", default=None,
                        help="also write the results here (bench/_results.py)")
    args = parser.parse_args(argv)
    for flag, value in (("--dtype", args.dtype), ("--others-dtype", args.others_dtype)):
        _timing.split_dtypes(parser, flag, value, ("float32", "bfloat16", "int8"),
                             args.worker)
    if args.new_tokens is None:
        args.new_tokens = 16 if args.quick else 128
    if args.reps is None:
        args.reps = 1 if args.quick else 3
    return args


def main(argv=None):
    _timing.main(parse_args, worker_main, driver_main, argv)


if __name__ == "__main__":
    main()
