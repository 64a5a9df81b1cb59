"""Benchmark kzoo's BERT against keras-hub and transformers (MiniLM-L6 shape).

Config: 6 layers, hidden 384, 12 heads, FFN 1536, vocabulary 30522, random
weights, random token ids, batch 32 x length 128 (no padding). Measures
inference (backbone forward, sequences/s) and fine-tuning (classifier with 2
classes, Adam 5e-5, one ``train_on_batch`` step, steps/s) for:

    kzoo-tf  kzoo-jax  kzoo-torch            kzoo.models.BertBackbone / BertClassifier
    keras-hub-tf  keras-hub-jax  keras-hub-torch   keras_hub.models.BertBackbone / BertTextClassifier
    transformers-torch                       transformers.BertModel / BertForSequenceClassification

Keras reads its backend once per process, so the driver starts one worker
process per row (``python bench/bert.py --worker kzoo --backend jax``), each
printing one JSON line, and prints one table with ratios to the best
non-kzoo row. Run from the repository root:

    .venv/bin/python bench/bert.py                    # full run, float32
    .venv/bin/python bench/bert.py --quick            # smoke run (batch 4 x 32)
    .venv/bin/python bench/bert.py --dtype bfloat16   # kzoo's bf16 path
    .venv/bin/python bench/bert.py --only kzoo --quantize int8 --train-reps 0
    .venv/bin/python bench/bert.py --worker kzoo --backend torch --dtype bfloat16

kzoo rows take ``--dtype`` (float32, bfloat16, mixed_bfloat16) and
``--quantize int8``; the other rows stay float32 unless ``--others-dtype
bfloat16``. With a non-float32 kzoo dtype or int8, the kzoo workers also
compare the real MiniLM weights' outputs with float32 (accuracy lines).

Never imported by the tests. See bench/README.md; the results are on
the benchmarks page, docs/benchmarks.md.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _results  # noqa: E402
import _timing  # noqa: E402


# MiniLM-L6 (all-MiniLM-L6-v2) shape, in kzoo / keras-hub argument names.
CONFIG = {
    "vocabulary_size": 30522,
    "num_layers": 6,
    "num_heads": 12,
    "hidden_dim": 384,
    "intermediate_dim": 1536,
    "max_sequence_length": 512,
}
NUM_CLASSES = 2
LEARNING_RATE = 5e-5
PRESET = "minilm_l6_en_uncased"  # real weights for the accuracy check

BACKENDS = _timing.BACKENDS
ROWS = (
    ("kzoo", "tf"), ("kzoo", "jax"), ("kzoo", "torch"),
    ("keras-hub", "tf"), ("keras-hub", "jax"), ("keras-hub", "torch"),
    ("transformers", "torch"),
)


def default_jit(backend, phase, dtype):
    """``jit_compile`` for a Keras row, as measured fastest (bench/README.md).

    TensorFlow: XLA for float32 and int8 inference, but not for bfloat16
    (XLA:CPU computes bf16 dots in float32, while TF's graph runs them on
    oneDNN's AVX-512 bf16 kernels), and not for training (slower with XLA).
    JAX: always (False would run op by op). torch: never (torch.compile takes
    minutes to compile and gained little or nothing on the AMD machines).
    """
    if backend == "tensorflow":
        return phase == "infer" and "bfloat16" not in dtype
    return backend == "jax"


def phase_dtype(dtype, phase):
    """Inference runs in ``dtype``; fine-tuning with ``--dtype bfloat16``
    runs in ``mixed_bfloat16`` (float32 weights: Adam's small updates to bf16
    weights would round away)."""
    if phase == "train" and dtype == "bfloat16":
        return "mixed_bfloat16"
    return dtype


def forward_flops_per_sequence(length):
    """Multiply-adds x 2 of one BERT forward pass over ``length`` tokens
    (dense layers and attention; embeddings, norms and softmax excluded)."""
    h, f, n = CONFIG["hidden_dim"], CONFIG["intermediate_dim"], CONFIG["num_layers"]
    per_token = 4 * h * h + 2 * h * f + 2 * length * h
    return 2 * n * length * per_token


# ----------------------------------------------------------------- workers


def _random_batch(batch, length, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    x = {
        "token_ids": rng.integers(
            1, CONFIG["vocabulary_size"], (batch, length)).astype("int32"),
        "segment_ids": np.zeros((batch, length), "int32"),
        "padding_mask": np.ones((batch, length), "int32"),
    }
    y = rng.integers(0, NUM_CLASSES, (batch,)).astype("int32")
    return x, y


def _jit_setting(args, backend, phase, dtype):
    if args.jit == "auto":
        return default_jit(backend, phase, dtype)
    return args.jit == "on"


def _keras_worker(args):
    import keras

    backend = keras.config.backend()
    if args.library == "kzoo":
        import kzoo

        backbone_cls, classifier_cls = kzoo.BertBackbone, kzoo.BertClassifier
        dtype, quantize = args.dtype, args.quantize
    else:
        import keras_hub

        backbone_cls = keras_hub.models.BertBackbone
        classifier_cls = keras_hub.models.BertTextClassifier
        dtype, quantize = args.others_dtype, None
    x, y = _random_batch(args.batch, args.length)
    result = {"dtype_infer": dtype, "dtype_train": phase_dtype(dtype, "train"),
              "quantize": quantize}

    def policy(d):
        return None if d == "float32" else d

    # --- inference: the backbone's predict step ---
    if args.infer_reps:
        backbone = backbone_cls(**CONFIG, dtype=policy(dtype))
        if quantize:
            backbone.quantize(quantize)
        jit = _jit_setting(args, backend, "infer", dtype)
        backbone.compile(jit_compile=jit)
        result["jit_infer"] = jit
        timing = _timing.time_calls(
            lambda: backbone.predict_on_batch(x), args.warmup, args.infer_reps)
        result["infer"] = timing
        result["infer_seq_per_s"] = args.batch / timing["median_s"]
        del backbone
        keras.utils.clear_session()

    # --- fine-tuning: the classifier's train step ---
    if args.train_reps:
        train_dtype = phase_dtype(dtype, "train")
        jit = _jit_setting(args, backend, "train", train_dtype)
        classifier = compiled_classifier(backbone_cls, classifier_cls,
                                         policy(train_dtype), jit)
        result["jit_train"] = jit
        timing = _timing.time_calls(
            lambda: classifier.train_on_batch(x, y), args.warmup, args.train_reps)
        result["train"] = timing
        result["train_steps_per_s"] = 1.0 / timing["median_s"]
        del classifier
        keras.utils.clear_session()

    if args.library == "kzoo" and (dtype != "float32" or quantize):
        result["accuracy"] = _accuracy_check(args)
    result["versions"] = {"keras": keras.__version__}
    return result


def compiled_classifier(backbone_cls, classifier_cls, dtype, jit):
    """The fine-tuning rows' classifier (``CONFIG``'s backbone, ``NUM_CLASSES``
    classes, no preprocessor) compiled with Adam and the logits' cross-entropy
    (also used by ``profile_bert.py``)."""
    import keras

    classifier = classifier_cls(backbone=backbone_cls(**CONFIG, dtype=dtype),
                                num_classes=NUM_CLASSES, preprocessor=None)
    classifier.compile(
        optimizer=keras.optimizers.Adam(LEARNING_RATE),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit,
    )
    return classifier


def _accuracy_check(args):
    """Max abs difference of the real MiniLM backbone's outputs in
    ``args.dtype`` (and ``args.quantize``) against float32, on real text."""
    import numpy as np
    from keras import ops

    import kzoo

    texts = [
        "The quick brown fox jumps over the lazy dog.",
        "A man is playing a guitar on the stage tonight.",
        "Benchmarks measured on a shared two-core machine are noisy.",
        "BERT encodes each token in the context of the whole sentence.",
    ]
    preprocessor = kzoo.BertClassifierPreprocessor.from_preset(
        PRESET, sequence_length=args.length)
    x = preprocessor(texts)
    x = {k: ops.convert_to_numpy(v) for k, v in x.items()}
    reference = kzoo.BertBackbone.from_preset(PRESET)
    variant = kzoo.BertBackbone.from_preset(
        PRESET, dtype=None if args.dtype == "float32" else args.dtype)
    if args.quantize:
        variant.quantize(args.quantize)
    ref = {k: ops.convert_to_numpy(ops.cast(v, "float32"))
           for k, v in reference(x).items()}
    # The variant through predict_on_batch, the call the inference rows
    # time (on PyTorch it runs without autograd, where kzoo.ops may pick
    # other kernels than in a direct call).
    out = {k: ops.convert_to_numpy(ops.cast(v, "float32"))
           for k, v in variant.predict_on_batch(x).items()}
    mask = x["padding_mask"].astype(bool)

    def mean_pool(seq):  # all-MiniLM-L6-v2's sentence embedding
        m = mask[..., None].astype("float32")
        return (seq * m).sum(1) / m.sum(1)

    a, b = mean_pool(ref["sequence_output"]), mean_pool(out["sequence_output"])
    cosine = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    return {
        "variant": args.dtype + (f"+{args.quantize}" if args.quantize else ""),
        "sequence_output_max_abs_diff": float(np.abs(
            ref["sequence_output"] - out["sequence_output"])[mask].max()),
        "sequence_output_max_abs": float(np.abs(ref["sequence_output"])[mask].max()),
        "pooled_output_max_abs_diff": float(np.abs(
            ref["pooled_output"] - out["pooled_output"]).max()),
        "mean_pooled_min_cosine": float(cosine.min()),
    }


def transformers_config(**kwargs):
    """``transformers.BertConfig`` of ``CONFIG``'s shape (also used by
    ``profile_bert.py``); ``kwargs`` are further config fields."""
    import transformers

    return transformers.BertConfig(
        vocab_size=CONFIG["vocabulary_size"],
        hidden_size=CONFIG["hidden_dim"],
        num_hidden_layers=CONFIG["num_layers"],
        num_attention_heads=CONFIG["num_heads"],
        intermediate_size=CONFIG["intermediate_dim"],
        max_position_embeddings=CONFIG["max_sequence_length"],
        **kwargs,
    )


def _transformers_worker(args):
    import torch
    import transformers

    config = transformers_config(num_labels=NUM_CLASSES)
    x, y = _random_batch(args.batch, args.length)
    inputs = {
        "input_ids": torch.from_numpy(x["token_ids"]).long(),
        "token_type_ids": torch.from_numpy(x["segment_ids"]).long(),
        "attention_mask": torch.from_numpy(x["padding_mask"]).long(),
    }
    labels = torch.from_numpy(y).long()
    torch.manual_seed(0)
    bf16 = args.others_dtype == "bfloat16"
    # bfloat16: weights cast for inference, torch.autocast for fine-tuning.
    result = {"attn_implementation": None, "dtype_infer": args.others_dtype,
              "dtype_train": phase_dtype(args.others_dtype, "train")}
    # --jit on: torch.compile (inductor) here too, so that compiled Keras
    # torch rows meet a compiled transformers row; otherwise eager.
    compiled = args.jit == "on"
    if compiled:
        result.update(jit_infer=True, jit_train=True)

    if args.infer_reps:
        model = transformers.BertModel(config).eval()
        if bf16:
            model = model.to(torch.bfloat16)
        result["attn_implementation"] = model.config._attn_implementation
        if compiled:
            model = torch.compile(model)

        def infer():
            with torch.inference_mode():
                return model(**inputs).last_hidden_state.float().numpy()

        timing = _timing.time_calls(infer, args.warmup, args.infer_reps)
        result["infer"] = timing
        result["infer_seq_per_s"] = args.batch / timing["median_s"]

    if args.train_reps:
        model = transformers.BertForSequenceClassification(config).train()
        optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
        if compiled:
            model = torch.compile(model)

        def step():
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = model(**inputs, labels=labels).loss
            loss.backward()
            optimizer.step()
            return loss.item()

        timing = _timing.time_calls(step, args.warmup, args.train_reps)
        result["train"] = timing
        result["train_steps_per_s"] = 1.0 / timing["median_s"]
    result["versions"] = {"torch": torch.__version__,
                          "transformers": transformers.__version__}
    return result


def worker_main(args):
    if args.library == "transformers":
        result = _transformers_worker(args)
    else:
        result = _keras_worker(args)
    result.update(
        library=args.library, backend=args.backend,
        batch=args.batch, length=args.length,
        machine=_timing.machine_info(),
    )
    print(json.dumps(result))


# ------------------------------------------------------------------ driver


def _row_name(library, short_backend):
    return f"{library}-{short_backend}"


def _fmt(value, spec):
    return format(value, spec) if isinstance(value, (int, float)) else "-"


def _short_dtype(dtype):
    return _timing.SHORT_DTYPES.get(dtype, dtype)


def print_table(results, args):
    """One line per row: speeds, and ratios to the best non-kzoo row *in the
    same dtype* (inference: the inference dtype; fine-tuning: the training
    policy), so a bf16 row is never compared with float32 ones."""
    def best(key, kzoo, dtype_key=None, dtype=None):
        values = [r.get(key) for name, r in results
                  if name.startswith("kzoo") == kzoo and r.get(key)
                  and (dtype_key is None or r.get(dtype_key) == dtype)]
        return max(values) if values else None

    def ratio(r, key, dtype_key):
        other = best(key, False, dtype_key, r.get(dtype_key))
        return r[key] / other if r.get(key) and other else None

    flops = forward_flops_per_sequence(args.length)
    header = (f"{'row':<24} {'dtype inf/train':<16} {'jit':<5} "
              f"{'infer seq/s':>11} {'x same':>6} {'GFLOP/s':>7} "
              f"{'train step/s':>12} {'x same':>6} {'others':>6}")
    print(header)
    print("-" * len(header))
    for name, r in results:
        if "error" in r:
            print(f"{name:<24} ERROR {r['error'][:400]}")
            continue
        infer, train = r.get("infer_seq_per_s"), r.get("train_steps_per_s")
        dtype = (_short_dtype(r["dtype_infer"])
                 + (f"+{r['quantize']}" if r.get("quantize") else "")
                 + "/" + _short_dtype(r["dtype_train"]))
        if "jit_infer" in r or "jit_train" in r:
            jit = "/".join("-" if k not in r else "y" if r[k] else "n"
                           for k in ("jit_infer", "jit_train"))
        else:
            jit = "eager"
        print(
            f"{name:<24} {dtype:<16} {jit:<5} {_fmt(infer, '11.1f')} "
            f"{_fmt(ratio(r, 'infer_seq_per_s', 'dtype_infer'), '6.2f')} "
            f"{_fmt(infer * flops / 1e9 if infer else None, '7.0f')} "
            f"{_fmt(train, '12.3f')} "
            f"{_fmt(ratio(r, 'train_steps_per_s', 'dtype_train'), '6.2f')}"
            f"{_timing.load_cell(r)}"
        )
    print("x same: ratio to the best keras-hub / transformers row in the same "
          f"dtype (inference dtype; training policy). {_timing.LOAD_LEGEND}. jit: "
          "jit_compile for inference/fine-tuning (TF: XLA; JAX: jax.jit; "
          "torch: torch.compile). GFLOP/s: inference, dense and attention "
          "matmuls only.")
    for name, r in results:
        if "accuracy" in r:
            acc = r["accuracy"]
            print(f"accuracy of {name} inference ({acc['variant']}) vs float32, "
                  f"real {PRESET} weights, 4 texts: sequence_output "
                  f"max|diff| {acc['sequence_output_max_abs_diff']:.3g} "
                  f"(max|x| {acc['sequence_output_max_abs']:.3g}), pooled_output "
                  f"max|diff| {acc['pooled_output_max_abs_diff']:.3g}, mean-pooled "
                  f"embedding cosine >= {acc['mean_pooled_min_cosine']:.5f}")
    for key, dtype_key, label in (
            ("infer_seq_per_s", "dtype_infer", "inference"),
            ("train_steps_per_s", "dtype_train", "fine-tuning")):
        top, other = best(key, True), best(key, False)
        if not top:
            continue
        line = f"{label} (every row in its best dtype): "
        if other:
            line += f"kzoo best / best other = {top / other:.2f}x (target >= 1.2x); "
        per_backend = {}  # each backend's fastest kzoo row
        for name, r in results:
            if name.startswith("kzoo") and r.get(key):
                backend = name.split()[0]
                per_backend[backend] = max(per_backend.get(backend, (0, "")),
                                           (r[key], name))
        slowest = min(per_backend.values())
        line += (f"slowest kzoo backend ({slowest[1]}) is "
                 f"{top / slowest[0]:.2f}x behind kzoo's best (target <= 1.5x)")
        print(line)
    marked = [name for name, r in results if _timing.load_mark(r)]
    if marked:
        print("ran beside other work (numbers low): " + ", ".join(marked))


def driver_main(args, argv):
    dtypes = args.dtype.split(",")
    others = args.others_dtype.split(",")
    rows = []
    for lib, be in ROWS:
        if args.only and lib not in args.only.split(",") and (
                _row_name(lib, be) not in args.only.split(",")):
            continue
        for dtype in dtypes if lib == "kzoo" else others:
            rows.append((lib, be, dtype))
    passthrough = []
    for flag in ("quantize", "jit", "batch", "length",
                 "warmup", "infer_reps", "train_reps", "cores"):
        value = getattr(args, flag)
        if value is not None:
            passthrough += [f"--{flag.replace('_', '-')}", str(value)]
    print(f"bert benchmark: batch {args.batch} x length {args.length}, "
          f"{CONFIG}, {args.warmup} warmup + {args.infer_reps} inference / "
          f"{args.train_reps} training reps (median), "
          f"{f'{args.cores} core(s) per worker, ' if args.cores else ''}"
          f"machine {_timing.machine_info()}",
          flush=True)
    specs = [(library, short, dtype, len(dtypes if library == "kzoo" else others) > 1)
             for library, short, dtype in rows]
    # One group per dtype: 14 rows' processes at once do not fit in 24 GiB,
    # and `x same` compares rows of the same dtype. The table keeps the
    # rows' order.
    groups = {}
    for spec in specs:
        groups.setdefault(spec[2], []).append(spec)
    results = _timing.run_rows(__file__, list(groups.values()), passthrough,
                               args.timeout, interleave=not args.sequential)
    names = [_timing.row_name(*spec) for spec in specs]
    results.sort(key=lambda item: names.index(item[0]))
    print()
    print_table(results, args)
    print("command: python bench/bert.py " + " ".join(argv))
    if args.json:
        _results.write(args.json, "bert", __file__, argv, results,
                       order=_results.order(args))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", choices=("kzoo", "keras-hub", "transformers"),
                        help="run one measurement in this process (internal)")
    parser.add_argument("--backend", choices=tuple(BACKENDS), default=None)
    parser.add_argument("--only", default=None,
                        help="comma-separated libraries or rows, e.g. kzoo or "
                             "kzoo-jax,transformers-torch")
    parser.add_argument("--dtype", default="float32",
                        help="kzoo rows' dtype policy: float32, bfloat16 "
                             "(fine-tunes in mixed_bfloat16) or "
                             "mixed_bfloat16; a comma-separated list gives one "
                             "kzoo row per dtype; see --others-dtype")
    parser.add_argument("--others-dtype", default="float32",
                        help="keras-hub and transformers rows' dtype, float32 "
                             "or bfloat16, or both comma-separated (bfloat16: "
                             "keras-hub's dtype policy; transformers' weights "
                             "in bf16 for inference, torch.autocast for "
                             "fine-tuning)")
    parser.add_argument("--quantize", default=None, choices=("int8",),
                        help="quantize kzoo's backbone for inference "
                             "(keras' int8: per-channel weights, dynamic "
                             "per-token activations)")
    parser.add_argument("--jit", default="auto", choices=("auto", "on", "off"),
                        help="jit_compile for Keras rows (auto: default_jit()); "
                             "on also runs transformers' model through "
                             "torch.compile (otherwise eager)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: batch 4 x 32, 2 warmup, 2 reps")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--length", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--infer-reps", type=int, default=None)
    parser.add_argument("--train-reps", type=int, default=None)
    parser.add_argument("--timeout", type=int, default=900,
                        help="seconds per worker")
    _timing.add_sequential_argument(parser)
    parser.add_argument("--cores", type=int, default=None,
                        help="pin each worker to this many cores (the last "
                             "ones) and as many threads: steadier numbers "
                             "on a shared machine")
    parser.add_argument("--json", default=None,
                        help="also write the results here (bench/_results.py)")
    args = parser.parse_args(argv)
    defaults = ({"batch": 4, "length": 32, "warmup": 2, "infer_reps": 2,
                 "train_reps": 2} if args.quick else
                {"batch": 32, "length": 128, "warmup": 2, "infer_reps": 10,
                 "train_reps": 5})
    _timing.fill_defaults(args, defaults)
    _timing.split_dtypes(parser, "--dtype", args.dtype,
                         ("float32", "bfloat16", "mixed_bfloat16"), args.worker)
    _timing.split_dtypes(parser, "--others-dtype", args.others_dtype,
                         ("float32", "bfloat16"), args.worker)
    args.library = args.worker
    return args


def main(argv=None):
    _timing.main(parse_args, worker_main, driver_main, argv)


if __name__ == "__main__":
    main()
