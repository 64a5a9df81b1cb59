"""Benchmark kzoo's ONNX export on onnxruntime (all-MiniLM-L6-v2 embeddings).

The same sentence embeddings (MiniLM-L6 token vectors, mean pooling over
the real tokens, unit length) from the real ``minilm_l6_en_uncased``
weights, computed by:

    kzoo-onnx fp32 / int8     onnxruntime on the model.onnx that
                              ``BertTextEmbedder.export(path, format="onnx")``
                              writes (int8: its ``quantize="int8"``)
    st-onnx fp32 / int8       sentence-transformers' ONNX backend
                              (``SentenceTransformer(folder, backend="onnx")``,
                              optimum's export; int8:
                              ``export_dynamic_quantized_onnx_model`` with the
                              config that fits this CPU, e.g. avx512_vnni)
    transformers fp32 / bf16  ``BertModel`` eager under ``torch.inference_mode``,
                              then the same pooling and normalization

at batch 32 x 128 tokens and batch 1 x 16 (a serving shape), sequences/s.
Tokenization is outside the timed call: every row is fed the same token ids
(random ids between ``[CLS]`` and ``[SEP]``, no padding). Before timing,
each row embeds five real sentences (padded) and must agree with kzoo's Keras
embedder: float32 rows within 1e-4, bf16 rows within cosine 0.99, int8 rows
within cosine 0.98 (the table shows each row's figure).
Every row runs with the same intra-op threads (``--threads``, default the
cores this process may use) and one inter-op thread.

sentence-transformers' ONNX backend needs optimum-onnx, whose only release
(0.1.0) requires transformers < 4.58 (this project uses 5.x): its rows run in
a virtual environment of their own, ``bench/st_onnx_venv/`` from
``bench/st_onnx_env.sh`` (``--st-python`` names another).

One worker process per row, the rows taking turns (``_timing.run_rows``);
the exports are made first, one process each. Run from the repository root:

    .venv/bin/python bench/onnx.py
    .venv/bin/python bench/onnx.py --smoke                # tiny shapes, 1 rep
    .venv/bin/python bench/onnx.py --rows "kzoo-onnx int8,st-onnx int8"
    .venv/bin/python bench/onnx.py --json bench/results/$(date -u +%F)-onnx-mymachine.json

Never imported by the tests. See bench/README.md; the results are on the
benchmarks page, docs/benchmarks.md.
"""

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import _results  # noqa: E402
import _timing  # noqa: E402

# This file's name is the onnx package's: with its folder on the path, the
# libraries' `import onnx` would load this script.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != BENCH]

PRESET = "minilm_l6_en_uncased"
#: row name: (worker, dtype), in the table's order
ROWS = {
    "kzoo-onnx fp32": ("kzoo-onnx", "float32"),
    "kzoo-onnx int8": ("kzoo-onnx", "int8"),
    "st-onnx fp32": ("st-onnx", "float32"),
    "st-onnx int8": ("st-onnx", "int8"),
    "transformers fp32": ("transformers", "float32"),
    "transformers bf16": ("transformers", "bfloat16"),
}
LIBRARIES = {"kzoo-onnx": "kzoo", "st-onnx": "sentence-transformers",
             "transformers": "transformers"}
ST_PYTHON = os.path.join(BENCH, "st_onnx_venv", "bin", "python")
#: the real sentences each row must embed as kzoo's Keras embedder does
CHECK_TEXTS = [
    "A man is playing a guitar on the stage tonight.",
    "The weather is lovely today!",
    "Café owners in Paris protest new rules.",
    "short",
    "BERT encodes each token in the context of the whole sentence.",
]
CHECK_LENGTH = 32
#: agreement with the Keras embedder a row needs before it is timed: float32
#: rows within this max |diff|, the others within these cosines (dynamic int8
#: quantization moves an embedding further than bf16 weights do)
FLOAT32_MAX_ABS_DIFF = 1e-4
MIN_COSINE = {"float32": 0.9999, "bfloat16": 0.99, "int8": 0.98}
INPUTS_FILE = "inputs.npz"


def parse_shape(text):
    """``"32x128"`` -> ``(32, 128)``."""
    batch, _, length = text.partition("x")
    try:
        shape = int(batch), int(length)
    except ValueError:
        shape = None
    if shape is None or min(shape) < 1 or shape[1] < 2:
        raise argparse.ArgumentTypeError(
            f"a shape is BATCHxLENGTH with a length of at least 2 ([CLS] and "
            f"[SEP]), e.g. 32x128; got {text!r}")
    return shape


def st_quantization_config():
    """The ``export_dynamic_quantized_onnx_model`` config for this CPU:
    avx512_vnni, avx512, avx2 (x86, from /proc/cpuinfo's flags) or arm64."""
    import platform

    if platform.machine().lower() in ("aarch64", "arm64"):
        return "arm64"
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    for flag, config in (("avx512_vnni", "avx512_vnni"), ("avx512bw", "avx512"),
                         ("avx2", "avx2")):
        if flag in flags:
            return config
    raise SystemExit("sentence-transformers' int8 configs need AVX2, AVX-512 or "
                     "arm64; this CPU has none: leave out the st-onnx int8 row (--rows).")


# ----------------------------------------------------------------- workers


def _set_threads(threads):
    import torch

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)


def _ort_options(threads):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    return options


def _prepare_kzoo(args):
    """Exports kzoo's embedder (float32 and int8) into ``--work`` and writes
    the rows' inputs: the timed shapes' token ids and the check sentences'
    ids with the Keras embedder's embeddings."""
    import numpy as np
    import tokenizers

    import kzoo
    from kzoo.presets.preset_registry import resolve_registered

    embedder = kzoo.models.BertTextEmbedder.from_preset(
        PRESET, sequence_length=CHECK_LENGTH)
    result = {"model_folder": str(resolve_registered(PRESET))}
    for dtype, quantize in (("float32", None), ("int8", "int8")):
        start = time.perf_counter()
        folder = embedder.export(os.path.join(args.work, f"kzoo-{dtype}"),
                                 format="onnx", quantize=quantize)
        result[f"export_{dtype}_s"] = time.perf_counter() - start
        result[f"model_bytes_{dtype}"] = os.path.getsize(os.path.join(folder, "model.onnx"))
    tokenizer = tokenizers.Tokenizer.from_file(
        os.path.join(args.work, "kzoo-float32", "tokenizer.json"))
    encodings = tokenizer.encode_batch(CHECK_TEXTS)
    arrays = {
        "check_token_ids": np.array([e.ids for e in encodings], "int64"),
        "check_segment_ids": np.array([e.type_ids for e in encodings], "int64"),
        "check_padding_mask": np.array([e.attention_mask for e in encodings], "int64"),
        "check_embeddings": np.asarray(embedder.predict(CHECK_TEXTS, verbose=0), "float32"),
    }
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    rng = np.random.default_rng(0)
    for batch, length in args.shapes:
        # Ordinary word pieces (the ids below 1000 are [unused] and specials).
        ids = rng.integers(1000, tokenizer.get_vocab_size(), (batch, length))
        ids[:, 0], ids[:, -1] = cls, sep
        arrays[f"token_ids_{batch}x{length}"] = ids.astype("int64")
    np.savez(os.path.join(args.work, INPUTS_FILE), **arrays)
    return result


def _prepare_st(args):
    """sentence-transformers' ONNX files of the MiniLM folder (a copy in
    ``--work``): optimum's float32 export and the int8 one."""
    from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model

    folder = os.path.join(args.work, "st-model")
    shutil.rmtree(folder, ignore_errors=True)  # a --work folder used before
    shutil.copytree(args.model_folder, folder)
    start = time.perf_counter()
    model = SentenceTransformer(folder, backend="onnx", device="cpu",
                                model_kwargs={"provider": "CPUExecutionProvider"})
    model.save_pretrained(folder)
    result = {"export_float32_s": time.perf_counter() - start}
    config = st_quantization_config()
    start = time.perf_counter()
    export_dynamic_quantized_onnx_model(model, config, folder)
    result["export_int8_s"] = time.perf_counter() - start
    files = sorted(os.listdir(os.path.join(folder, "onnx")))
    int8 = [name for name in files if name != "model.onnx"]
    if "model.onnx" not in files or len(int8) != 1:
        raise SystemExit(f"expected model.onnx and one int8 file in {folder}/onnx, got {files}")
    result.update(folder=folder, quantization_config=config,
                  file_float32="onnx/model.onnx", file_int8=f"onnx/{int8[0]}")
    return result


def _inputs(args):
    import numpy as np

    with np.load(os.path.join(args.work, INPUTS_FILE)) as data:
        return {key: data[key] for key in data.files}


def _batch(data, shape):
    """A timed shape's ``(token_ids, segment_ids, padding_mask)``: no padding."""
    import numpy as np

    ids = data["token_ids_{}x{}".format(*shape)]
    return ids, np.zeros_like(ids), np.ones_like(ids)


def _kzoo_onnx_embed(args):
    import onnxruntime

    folder = os.path.join(args.work, f"kzoo-{args.dtype}")
    runtime = onnxruntime.InferenceSession(
        os.path.join(folder, "model.onnx"), _ort_options(args.threads),
        providers=["CPUExecutionProvider"])

    def embed(token_ids, segment_ids, padding_mask):
        return runtime.run(["embeddings"], {
            "token_ids": token_ids, "segment_ids": segment_ids,
            "padding_mask": padding_mask})[0]

    versions = {"onnxruntime": onnxruntime.__version__}
    return embed, {"model_file": os.path.join(folder, "model.onnx"), "versions": versions}


def _st_onnx_embed(args):
    import importlib.metadata

    import torch
    from sentence_transformers import SentenceTransformer

    _set_threads(args.threads)
    model = SentenceTransformer(
        args.st_folder, backend="onnx", device="cpu",
        model_kwargs={"file_name": args.st_file, "provider": "CPUExecutionProvider",
                      "session_options": _ort_options(args.threads)})

    def embed(token_ids, segment_ids, padding_mask):
        # The model's forward on tokenized features, as `encode` calls it:
        # the ONNX token embeddings, then its Pooling and Normalize modules.
        features = {"input_ids": torch.from_numpy(token_ids),
                    "token_type_ids": torch.from_numpy(segment_ids),
                    "attention_mask": torch.from_numpy(padding_mask)}
        with torch.inference_mode():
            return model(features)["sentence_embedding"].numpy()

    versions = {name: importlib.metadata.version(name) for name in (
        "sentence-transformers", "optimum", "optimum-onnx", "onnxruntime",
        "transformers", "torch")}
    modules = [type(module).__name__ for module in model]
    return embed, {"model_file": os.path.join(args.st_folder, args.st_file),
                   "modules": modules, "versions": versions}


def _transformers_embed(args):
    import torch
    import transformers

    _set_threads(args.threads)
    dtype = torch.bfloat16 if args.dtype == "bfloat16" else torch.float32
    model = transformers.BertModel.from_pretrained(
        args.model_folder, dtype=dtype, add_pooling_layer=False).eval()

    def embed(token_ids, segment_ids, padding_mask):
        mask = torch.from_numpy(padding_mask)
        with torch.inference_mode():
            tokens = model(input_ids=torch.from_numpy(token_ids),
                           token_type_ids=torch.from_numpy(segment_ids),
                           attention_mask=mask).last_hidden_state
            weights = mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled.float(), dim=-1).numpy()

    versions = {"transformers": transformers.__version__, "torch": torch.__version__}
    return embed, {"attn_implementation": model.config._attn_implementation,
                   "versions": versions}


EMBEDDERS = {"kzoo-onnx": _kzoo_onnx_embed, "st-onnx": _st_onnx_embed,
             "transformers": _transformers_embed}


def agreement(found, expected, dtype):
    """How far a row's check embeddings are from the Keras embedder's; raises
    where they are further than its dtype allows."""
    import numpy as np

    found = np.asarray(found, "float32")
    cosine = np.sum(found * expected, -1) / (
        np.linalg.norm(found, axis=-1) * np.linalg.norm(expected, axis=-1))
    check = {"max_abs_diff": float(np.abs(found - expected).max()),
             "min_cosine": float(cosine.min())}
    if dtype == "float32" and check["max_abs_diff"] > FLOAT32_MAX_ABS_DIFF:
        raise SystemExit(f"float32 embeddings differ from kzoo's Keras embedder by "
                         f"{check['max_abs_diff']:.3g} (> {FLOAT32_MAX_ABS_DIFF})")
    if check["min_cosine"] < MIN_COSINE[dtype]:
        raise SystemExit(f"{dtype} embeddings are within cosine {check['min_cosine']:.4f} "
                         f"of kzoo's Keras embedder (< {MIN_COSINE[dtype]})")
    return check


def _time_shape(embed, batch, args):
    """``time_calls`` on one shape. A turn is as many calls as fill
    ``--turn-seconds`` (one at least; measured on the warmup), so that a
    batch-1 row is not timed on single calls of a few milliseconds."""
    start = time.perf_counter()
    embed(*batch)
    first = time.perf_counter() - start
    start = time.perf_counter()
    embed(*batch)
    calls = max(1, math.ceil(args.turn_seconds / max(time.perf_counter() - start, 1e-6)))

    def turn():
        for _ in range(calls):
            embed(*batch)

    timing = _timing.time_calls(turn, args.warmup, args.reps)
    timing.update(first_s=first, calls_per_turn=calls,
                  call_median_s=timing["median_s"] / calls)
    return timing


def worker_main(args):
    if args.worker in ("prepare-kzoo", "prepare-st"):
        result = (_prepare_kzoo if args.worker == "prepare-kzoo" else _prepare_st)(args)
        print(json.dumps(result))
        return
    data = _inputs(args)
    embed, result = EMBEDDERS[args.worker](args)
    result.update(library=LIBRARIES[args.worker], engine=args.worker,
                  dtype=args.dtype, threads=args.threads)
    found = embed(data["check_token_ids"], data["check_segment_ids"],
                  data["check_padding_mask"])
    result["check"] = agreement(found, data["check_embeddings"], args.dtype)
    result["shapes"] = {}
    for shape in args.shapes:
        name = "{}x{}".format(*shape)
        timing = _time_shape(embed, _batch(data, shape), args)
        result["shapes"][name] = timing
        result[f"seq_per_s_{name}"] = shape[0] / timing["call_median_s"]
    result["machine"] = _timing.machine_info()
    print(json.dumps(result))


# ------------------------------------------------------------------ driver


def _fmt(value, spec):
    """``value`` in ``spec`` (``"8.2f"``), or ``-`` as wide where it is None."""
    if isinstance(value, (int, float)):
        return format(value, spec)
    return "-".rjust(int(spec.split(".")[0] or 0))


def _ratio(value, other):
    return value / other if value and other else None


def print_table(results, args):
    """Sequences/s per shape, with kzoo's rows over sentence-transformers'
    row of the same dtype (``x st``) and every row over transformers' float32
    row (``x hf32``)."""
    rows = dict(results)
    shapes = ["{}x{}".format(*shape) for shape in args.shapes]
    header = f"{'row':<18} {'agree':>8}"
    for shape in shapes:
        header += f" {shape + ' seq/s':>14} {'ms/call':>8} {'x st':>5} {'x hf32':>6}"
    header += f" {'others':>6}"
    print(header)
    print("-" * len(header))
    for name, r in results:
        if "error" in r:
            print(f"{name:<18} ERROR {r['error'][:600]}")
            continue
        check = r["check"]
        agree = (f"{check['max_abs_diff']:.1e}" if r["dtype"] == "float32"
                 else f"{check['min_cosine']:.4f}")
        line = f"{name:<18} {agree:>8}"
        same = rows.get(f"st-onnx {_timing.SHORT_DTYPES[r['dtype']]}", {})
        hf32 = rows.get("transformers fp32", {})
        for shape in shapes:
            key = f"seq_per_s_{shape}"
            st = _ratio(r.get(key), same.get(key)) if r["library"] == "kzoo" else None
            line += (f" {_fmt(r.get(key), '14.1f')}"
                     f" {_fmt(r['shapes'][shape]['call_median_s'] * 1e3, '8.2f')}"
                     f" {_fmt(st, '5.2f')} {_fmt(_ratio(r.get(key), hf32.get(key)), '6.2f')}")
        print(line + _timing.load_cell(r))
    print(f"agree: max |diff| from kzoo's Keras embedder on {len(CHECK_TEXTS)} real "
          "sentences (float32 rows), lowest cosine (int8, bf16). x st: the kzoo row "
          "over the st-onnx row of its dtype; x hf32: the row over transformers "
          f"fp32 (above 1: faster). {args.threads} intra-op thread(s) per row. "
          f"{_timing.LOAD_LEGEND}.")
    marked = [name for name, r in results if _timing.load_mark(r)]
    if marked:
        print("ran beside other work (numbers low): " + ", ".join(marked))


def _prepare(args, python, worker, extra=()):
    argv = [os.path.abspath(__file__), "--worker", worker, "--backend", "torch",
            "--work", args.work, "--shapes", args.shapes_text, *extra]
    print(f"  {worker} ...", end=" ", flush=True)
    result = _timing.run_worker(argv, env_overrides={"KERAS_BACKEND": "torch"},
                                timeout=args.timeout, python=python)
    if "error" in result:
        raise SystemExit(f"{worker} failed: {result['error']}")
    print("done", flush=True)
    return result


def driver_main(args, argv):
    names = list(ROWS) if args.rows is None else args.rows.split(",")
    unknown = [name for name in names if name not in ROWS]
    if unknown:
        raise SystemExit(f"--rows: unknown {unknown}; the rows are {', '.join(ROWS)}")
    st_rows = [name for name in names if ROWS[name][0] == "st-onnx"]
    if st_rows and not os.path.exists(args.st_python):
        raise SystemExit(
            f"The st-onnx rows run in their own virtual environment, and "
            f"{args.st_python} does not exist: run bench/st_onnx_env.sh, pass "
            f"--st-python, or leave those rows out with --rows.")
    print(f"onnx benchmark: {PRESET} sentence embeddings, shapes {args.shapes_text}, "
          f"{args.warmup} warmup + {args.reps} timed turns (median) of at least "
          f"{args.turn_seconds} s, {args.threads} intra-op thread(s) per row, "
          f"machine {_timing.machine_info()}", flush=True)
    keep = args.work is not None
    args.work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="kzoo-onnx-bench-"))
    os.makedirs(args.work, exist_ok=True)
    try:
        print("exports:", flush=True)
        kzoo = _prepare(args, None, "prepare-kzoo")
        st = (_prepare(args, args.st_python, "prepare-st",
                       ["--model-folder", kzoo["model_folder"]]) if st_rows else {})
        env = {var: str(args.threads) for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        env["KERAS_BACKEND"] = "torch"
        rows = []
        for name in names:
            worker, dtype = ROWS[name]
            row_argv = [os.path.abspath(__file__), "--worker", worker, "--backend", "torch",
                        "--dtype", dtype, "--work", args.work, "--shapes", args.shapes_text,
                        "--threads", str(args.threads), "--warmup", str(args.warmup),
                        "--reps", str(args.reps), "--turn-seconds", str(args.turn_seconds),
                        "--model-folder", kzoo["model_folder"]]
            if worker == "st-onnx":
                row_argv += ["--st-folder", st["folder"], "--st-file", st[f"file_{dtype}"]]
                rows.append((name, row_argv, env, args.st_python))
            else:
                rows.append((name, row_argv, env))
        results = _timing.run_commands([rows], args.timeout, interleave=not args.sequential)
    finally:
        if not keep:
            shutil.rmtree(args.work, ignore_errors=True)
    print()
    print_table(results, args)
    print("command: python bench/onnx.py " + " ".join(argv))
    if args.json:
        _results.write(args.json, "onnx", __file__, argv, results,
                       order=_results.order(args), model=PRESET, threads=args.threads,
                       exports={"kzoo": kzoo, "sentence-transformers": st})


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS,
                        choices=("prepare-kzoo", "prepare-st", *LIBRARIES))
    parser.add_argument("--backend", choices=tuple(_timing.BACKENDS), default=None,
                        help=argparse.SUPPRESS)
    parser.add_argument("--dtype", default="float32", help=argparse.SUPPRESS,
                        choices=("float32", "int8", "bfloat16"))
    parser.add_argument("--rows", default=None,
                        help="comma-separated rows (default all): " + ", ".join(ROWS))
    parser.add_argument("--shapes", default=None,
                        help="comma-separated BATCHxLENGTH (default 32x128,1x16)")
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads of every row (default: the cores "
                             "this process may run on)")
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--reps", type=int, default=None, help="timed turns per shape")
    parser.add_argument("--turn-seconds", type=float, default=None,
                        help="a timed turn repeats the call until it lasts this long "
                             "(measured once on the warmup; default 0.1)")
    parser.add_argument("--smoke", action="store_true",
                        help="check that every row runs: shapes 2x8,1x8, 1 warmup, "
                             "1 rep of one call")
    parser.add_argument("--st-python", default=ST_PYTHON,
                        help="the interpreter of the st-onnx rows (default "
                             "bench/st_onnx_venv/bin/python, from bench/st_onnx_env.sh)")
    parser.add_argument("--work", default=None,
                        help="folder for the exports and inputs, kept (default: a "
                             "temporary one, removed)")
    parser.add_argument("--model-folder", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--st-folder", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--st-file", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per worker")
    _timing.add_sequential_argument(parser)
    parser.add_argument("--json", default=None,
                        help="also write the results here (bench/_results.py)")
    args = parser.parse_args(argv)
    defaults = ({"shapes": "2x8,1x8", "warmup": 1, "reps": 1, "turn_seconds": 0.0}
                if args.smoke else
                {"shapes": "32x128,1x16", "warmup": 3, "reps": 10, "turn_seconds": 0.1})
    defaults["threads"] = len(os.sched_getaffinity(0))
    _timing.fill_defaults(args, defaults)
    try:
        args.shapes = [parse_shape(s) for s in args.shapes.split(",")]
    except argparse.ArgumentTypeError as error:
        parser.error(f"--shapes: {error}")
    args.shapes_text = ",".join("{}x{}".format(*s) for s in args.shapes)
    if args.threads < 1 or args.reps < 1 or args.warmup < 0:
        parser.error("--threads and --reps must be at least 1, --warmup at least 0")
    args.cores = None  # the threads are set per library (--threads)
    return args


def main(argv=None):
    _timing.main(parse_args, worker_main, driver_main, argv)


if __name__ == "__main__":
    main()
