"""kzoo on one GPU without TensorFlow, beside transformers: one command.

Meant for a machine with one NVIDIA GPU, torch and JAX with
CUDA and transformers installed, and TensorFlow not installed (Keras, namex
and optree come as wheels: bench/accelerator_wheels.sh). Every worker
blocks TensorFlow's imports as well, so the run is the same where it is
installed. Rows, each in its own process with its own time limit (a failed
or timed-out row records its error and the run goes on):

    bert-minilm   6 layers, hidden 384, 12 heads, FFN 1536, vocabulary 30522
    bert-base     12 layers, hidden 768, 12 heads, FFN 3072, vocabulary 30522
        random weights; inference: sequences/s of the backbone's forward pass
        in bfloat16, batch 64 x 128 (outputs copied to the host);
        fine-tuning: steps/s of a 2-class classifier's training step, batch
        32 x 128, Adam(5e-5), float32 weights with bfloat16 compute (kzoo:
        ``BertClassifier.train_on_batch`` in mixed_bfloat16; transformers:
        ``BertForSequenceClassification`` under ``torch.autocast``).
        kzoo-jax, kzoo-torch, transformers eager; transformers under
        ``torch.compile`` last, while the time budget allows.
    gpt2          GPT-2 small (12 layers, hidden 768, 12 heads, vocabulary
        50257, context 1024), random weights, bfloat16: greedy generation of
        128 new tokens after 32 random prompt tokens, batch 1 and 8, new
        tokens/s (kzoo ``GPTCausalLM.generate_token_ids``, transformers
        ``generate(do_sample=False)``, no stop token).
    word2vec      skip-gram (dim 100, window 5, negative 5, sample 1e-3,
        min_count 5) on ``--corpus`` (bench/word2vec.py's text; a synthetic
        Zipf corpus without it), Python preprocessing engine: words/s of
        the epochs after the first. No gensim on the GPU machine: its
        reference is the 2-core CPU figure on the same text
        (``GENSIM_CPU_WORDS_PER_SEC``), shown only for that corpus.

Warmup calls (compilation) are excluded; each figure is the median of
several timed calls, as many as a row's time allows. The rows run one after
another; the whole run keeps to ``--budget`` seconds (default 450), each
row's limit cut to what is left, and the ``torch.compile`` rows run only
when enough is left. ``--out DIR`` gets ``accelerator.json`` (every row's
numbers, times, versions and errors) and ``accelerator.md`` (the machine and
one table with the ratios), both rewritten after every row.

    python bench/accelerator.py --out DIR                   # on the GPU machine
    .venv/bin/python bench/accelerator.py --out /tmp/acc --smoke   # CPU, tiny shapes
    .venv/bin/python bench/accelerator.py --out /tmp/acc --smoke --backends jax
    .venv/bin/python bench/accelerator.py --out DIR --only bert-minilm,gpt2

``--smoke``: tiny shapes on the CPU (``JAX_PLATFORMS=cpu``,
``CUDA_VISIBLE_DEVICES=""``), one warmup and two timed calls, every row but
the ``torch.compile`` ones. ``--backends``: the kzoo rows' backends; the
transformers rows run when ``torch`` is among them.

Never imported by the tests (tests/bench_accelerator_test.py runs it).
"""

import os
import sys

from kzoo._modules import imported

#: set in every worker: TensorFlow's imports fail there, as where it is not
#: installed (and ``importlib.util.find_spec`` finds none of it)
WITHOUT_TENSORFLOW_ENV = "KZOO_BENCH_WITHOUT_TENSORFLOW"
BLOCKED = ("tensorflow", "tensorflow_text", "tf_keras", "tensorboard",
           "keras_hub", "keras_nlp", "tensorflow_serving", "tensorflow_hub")


def block_tensorflow():
    """Makes TensorFlow (and the packages that need it) unimportable in this
    process. ``importlib.util.find_spec`` answers None for them, as where
    they are not installed: torch._dynamo and transformers look for
    TensorFlow that way while they are imported, and a finder that raised
    there would break their import."""
    import importlib.abc
    import importlib.util

    class NoTensorFlow(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    find_spec = importlib.util.find_spec

    def find_spec_without_tensorflow(name, package=None):
        if name.split(".")[0] in BLOCKED:
            return None
        return find_spec(name, package)

    importlib.util.find_spec = find_spec_without_tensorflow
    sys.meta_path.insert(0, NoTensorFlow())


if os.environ.get(WITHOUT_TENSORFLOW_ENV) == "1":
    block_tensorflow()

import argparse  # noqa: E402
import concurrent.futures  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)

BERT_SHAPES = {
    "minilm": dict(vocabulary_size=30522, num_layers=6, num_heads=12, hidden_dim=384,
                   intermediate_dim=1536, max_sequence_length=512),
    "base": dict(vocabulary_size=30522, num_layers=12, num_heads=12, hidden_dim=768,
                 intermediate_dim=3072, max_sequence_length=512),
}
GPT_SHAPE = dict(vocabulary_size=50257, num_layers=12, num_heads=12, hidden_dim=768,
                 intermediate_dim=3072, max_sequence_length=1024)
SMOKE_BERT = dict(vocabulary_size=1000, num_layers=2, num_heads=2, hidden_dim=32,
                  intermediate_dim=64, max_sequence_length=64)
SMOKE_GPT = dict(vocabulary_size=1000, num_layers=2, num_heads=2, hidden_dim=32,
                 intermediate_dim=64, max_sequence_length=64)

#: the full run's sizes and the smoke run's
SETTINGS = {
    "full": dict(train_batch=32, infer_batch=64, length=128, prompt=32, new_tokens=128,
                 gpt_batches=[1, 8], w2v_dim=100, w2v_min_count=5, w2v_epochs=8,
                 w2v_min_epochs=3, synthetic_words=500_000, warmup=2, min_reps=3,
                 max_reps=20),
    "smoke": dict(train_batch=4, infer_batch=8, length=16, prompt=4, new_tokens=8,
                  gpt_batches=[1, 2], w2v_dim=16, w2v_min_count=1, w2v_epochs=2,
                  w2v_min_epochs=2, synthetic_words=6_000, warmup=1, min_reps=2,
                  max_reps=2),
}
NUM_CLASSES = 2
LEARNING_RATE = 5e-5

#: gensim's skip-gram words/s on bench/word2vec.py's corpus (enwiki_lee.txt,
#: the same hyperparameters), workers=2, on a 2-core AMD EPYC Zen 4: the
#: gensim row of bench/results/2026-12-03-word2vec-skipgram-zen4.json
GENSIM_CPU_WORDS_PER_SEC = 460_844
GENSIM_CORPUS = "enwiki_lee.txt"

#: what each row's process may take (seconds): start, warmup and timed calls
ROW_TIMEOUTS = {
    ("bert", "minilm", "kzoo"): 110, ("bert", "base", "kzoo"): 150,
    ("bert", "minilm", "transformers"): 60, ("bert", "base", "transformers"): 75,
    ("bert", "minilm", "transformers-compile"): 150,
    ("bert", "base", "transformers-compile"): 180,
    ("gpt2", None, "kzoo"): 120, ("gpt2", None, "transformers"): 75,
    ("word2vec", None, "kzoo"): 90,
}
#: seconds of timed calls per measurement (inference, fine-tuning, a batch size)
MEASURE_S = {"full": 5.0, "smoke": 0.5}
#: a row starts only with this many seconds of the budget left; a
#: torch.compile row (which compiles for a minute or more) with this many
MIN_ROW_S = 20
MIN_OPTIONAL_ROW_S = 90


# ----------------------------------------------------------------- workers


def measure(fn, warmup, min_reps, max_reps, budget_s):
    """``warmup`` untimed calls, then timed calls until ``max_reps``, or
    ``min_reps`` once ``budget_s`` seconds of timed calls have passed.
    ``fn`` must block until its work is done."""
    first = None
    for i in range(warmup):
        start = time.perf_counter()
        fn()
        if i == 0:
            first = time.perf_counter() - start
    times = []
    while len(times) < max_reps and (len(times) < min_reps or sum(times) < budget_s):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return {"first_s": first, "times_s": [round(t, 5) for t in times],
            "median_s": statistics.median(times)}


def _emit(result):
    """Prints the row's result so far: the driver keeps the last line, so a
    row killed at its time limit still gives the measurements it made."""
    print(json.dumps(result), flush=True)


def _device_info():
    info = {}
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_cuda"] = torch.version.cuda
        info["torch_device"] = (torch.cuda.get_device_name(0)
                                if torch.cuda.is_available() else "cpu")
    except ImportError:
        pass
    if imported("jax") or os.environ.get("KERAS_BACKEND") == "jax":
        import jax

        info["jax"] = jax.__version__
        info["jax_devices"] = [str(d) for d in jax.devices()]
    return info


def _bert_inputs(batch, length, vocabulary_size, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    x = {"token_ids": rng.integers(1, vocabulary_size, (batch, length)).astype("int32"),
         "segment_ids": np.zeros((batch, length), "int32"),
         "padding_mask": np.ones((batch, length), "int32")}
    y = rng.integers(0, NUM_CLASSES, (batch,)).astype("int32")
    return x, y


def bert_kzoo(row, settings, result):
    import keras

    import kzoo

    shape = row["shape"]
    jit = keras.config.backend() == "jax"  # torch runs eagerly, as Keras' default
    result.update(dtype_infer="bfloat16", dtype_train="mixed_bfloat16", jit=jit)
    keras.utils.set_random_seed(0)
    x, _ = _bert_inputs(settings["infer_batch"], settings["length"],
                        shape["vocabulary_size"])
    backbone = kzoo.BertBackbone(**shape, dtype="bfloat16")
    backbone.compile(jit_compile=jit)
    timing = measure(lambda: backbone.predict_on_batch(x), settings["warmup"],
                     settings["min_reps"], settings["max_reps"], row["measure_s"])
    result["infer"] = timing
    result["infer_seq_per_s"] = settings["infer_batch"] / timing["median_s"]
    _emit(result)
    del backbone
    keras.utils.clear_session(free_memory=True)

    x, y = _bert_inputs(settings["train_batch"], settings["length"],
                        shape["vocabulary_size"])
    backbone = kzoo.BertBackbone(**shape, dtype="mixed_bfloat16")
    classifier = kzoo.BertClassifier(backbone=backbone, num_classes=NUM_CLASSES,
                                     preprocessor=None)
    classifier.compile(
        optimizer=keras.optimizers.Adam(LEARNING_RATE),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit)
    timing = measure(lambda: _loss(classifier.train_on_batch(x, y)),
                     settings["warmup"], settings["min_reps"], settings["max_reps"],
                     row["measure_s"])
    result["train"] = timing
    result["train_steps_per_s"] = 1.0 / timing["median_s"]


def _loss(value):
    """The loss of ``train_on_batch``'s result (a float, or a list with the
    metrics after it) as a Python float: the step has finished."""
    import numpy as np

    return float(np.ravel(np.asarray(value, dtype="float64"))[0])


def _torch_device():
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def bert_transformers(row, settings, result):
    import torch
    import transformers

    shape, device = row["shape"], _torch_device()
    compiled = row["library"] == "transformers-compile"
    config = transformers.BertConfig(
        vocab_size=shape["vocabulary_size"], hidden_size=shape["hidden_dim"],
        num_hidden_layers=shape["num_layers"], num_attention_heads=shape["num_heads"],
        intermediate_size=shape["intermediate_dim"],
        max_position_embeddings=shape["max_sequence_length"], num_labels=NUM_CLASSES)
    result.update(dtype_infer="bfloat16", dtype_train="autocast bfloat16",
                  jit=compiled, transformers=transformers.__version__)

    def tensors(batch):
        x, y = _bert_inputs(batch, settings["length"], shape["vocabulary_size"])
        inputs = {"input_ids": torch.from_numpy(x["token_ids"]).long().to(device),
                  "token_type_ids": torch.from_numpy(x["segment_ids"]).long().to(device),
                  "attention_mask": torch.from_numpy(x["padding_mask"]).long().to(device)}
        return inputs, torch.from_numpy(y).long().to(device)

    torch.manual_seed(0)
    inputs, _ = tensors(settings["infer_batch"])
    model = transformers.BertModel(config).eval().to(device=device, dtype=torch.bfloat16)
    result["attn_implementation"] = model.config._attn_implementation
    run = torch.compile(model) if compiled else model

    def infer():  # both outputs to the host, as Keras' predict_on_batch gives them
        with torch.inference_mode():
            out = run(**inputs)
            return (out.last_hidden_state.float().cpu().numpy(),
                    out.pooler_output.float().cpu().numpy())

    timing = measure(infer, settings["warmup"], settings["min_reps"],
                     settings["max_reps"], row["measure_s"])
    result["infer"] = timing
    result["infer_seq_per_s"] = settings["infer_batch"] / timing["median_s"]
    _emit(result)
    del model, run
    if device == "cuda":
        torch.cuda.empty_cache()

    inputs, labels = tensors(settings["train_batch"])
    model = transformers.BertForSequenceClassification(config).train().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    run = torch.compile(model) if compiled else model

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = run(**inputs, labels=labels).loss
        loss.backward()
        optimizer.step()
        return loss.item()

    timing = measure(step, settings["warmup"], settings["min_reps"],
                     settings["max_reps"], row["measure_s"])
    result["train"] = timing
    result["train_steps_per_s"] = 1.0 / timing["median_s"]


def _prompts(batch, length, vocabulary_size, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.integers(1, vocabulary_size, (batch, length)).astype("int32")


def gpt_kzoo(row, settings, result):
    import keras

    import kzoo

    shape = row["shape"]
    keras.utils.set_random_seed(0)
    backbone = kzoo.models.GPTBackbone(**shape, dropout=0.0, dtype="bfloat16")
    total = settings["prompt"] + settings["new_tokens"]
    result["dtype"] = "bfloat16"
    for batch in settings["gpt_batches"]:
        # A task per batch size, each compiled for its own shape (as a user
        # generating at one batch size sees).
        lm = kzoo.models.GPTCausalLM(backbone)
        result["jit"] = bool(lm.jit_compile)
        prompts = _prompts(batch, settings["prompt"], shape["vocabulary_size"]).tolist()

        def run():
            out = lm.generate_token_ids(prompts, max_length=total, stop_token_ids=None)
            assert all(len(r) == total for r in out)

        timing = measure(run, 1, settings["min_reps"], settings["max_reps"],
                         row["measure_s"])
        result[f"batch_{batch}"] = timing
        result[f"tokens_per_s_{batch}"] = batch * settings["new_tokens"] / timing["median_s"]
        _emit(result)


def gpt_transformers(row, settings, result):
    import torch
    import transformers

    shape, device = row["shape"], _torch_device()
    config = transformers.GPT2Config(
        vocab_size=shape["vocabulary_size"], n_positions=shape["max_sequence_length"],
        n_embd=shape["hidden_dim"], n_layer=shape["num_layers"], n_head=shape["num_heads"],
        n_inner=shape["intermediate_dim"])
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval().to(device=device,
                                                           dtype=torch.bfloat16)
    result.update(dtype="bfloat16", jit=False, transformers=transformers.__version__,
                  attn_implementation=model.config._attn_implementation)
    new = settings["new_tokens"]
    for batch in settings["gpt_batches"]:
        ids = torch.from_numpy(
            _prompts(batch, settings["prompt"], shape["vocabulary_size"])).long().to(device)

        def run():
            with torch.inference_mode():
                out = model.generate(ids, attention_mask=torch.ones_like(ids),
                                     max_new_tokens=new, min_new_tokens=new,
                                     do_sample=False, use_cache=True, pad_token_id=0,
                                     eos_token_id=None)
            assert out.shape[1] == settings["prompt"] + new

        timing = measure(run, 1, settings["min_reps"], settings["max_reps"],
                         row["measure_s"])
        result[f"batch_{batch}"] = timing
        result[f"tokens_per_s_{batch}"] = batch * new / timing["median_s"]
        _emit(result)


def synthetic_corpus(path, words, seed=0):
    """A Zipf-distributed corpus of ``words`` words (a 20000-word
    vocabulary, 50 words a line), written once to ``path``."""
    import numpy as np

    if os.path.exists(path):
        return path
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, 20001)
    p = 1.0 / ranks
    ids = rng.choice(ranks, size=words, p=p / p.sum())
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        for start in range(0, words, 50):
            f.write(" ".join(f"w{i}" for i in ids[start:start + 50]) + "\n")
    os.replace(path + ".tmp", path)
    return path


def word2vec_kzoo(row, settings, result):
    import keras

    import kzoo
    from kzoo.preprocessing.engine import engine as preprocessing_engine

    corpus = row["corpus"]
    with open(corpus, encoding="utf-8") as f:
        words = sum(len(line.split()) for line in f)
    result.update(corpus=os.path.basename(corpus), words=words,
                  engine=preprocessing_engine())
    model = kzoo.models.Word2VecSkipGram.from_corpus(
        corpus, hidden_dim=settings["w2v_dim"], min_count=settings["w2v_min_count"],
        window=5, negative=5, sample=1e-3, seed=1)
    model.compile(alpha=0.025)
    begun = time.perf_counter()

    class Budget(keras.callbacks.Callback):
        """Ends fit once the epochs after the first have taken the row's
        measuring time (and at least ``w2v_min_epochs`` ran)."""

        def on_epoch_end(self, epoch, logs=None):
            if epoch + 1 >= settings["w2v_min_epochs"] and (
                    time.perf_counter() - begun > row["measure_s"] * 3):
                self.model.stop_training = True

    history = model.fit(corpus, epochs=settings["w2v_epochs"], verbose=0,
                        callbacks=[Budget()])
    per_epoch = history.history["words_per_sec"]
    result["epochs_words_per_sec"] = per_epoch
    result["fit_s"] = time.perf_counter() - begun
    # The first epoch holds fit's setup and compilation: the warmup.
    result["words_per_sec"] = statistics.median(per_epoch[1:] or per_epoch)
    result["loss"] = history.history["loss"]


def info_worker(row, settings, result):
    """Versions and devices, and a check that Keras and kzoo import."""
    import keras

    import kzoo  # noqa: F401

    result["keras"] = keras.__version__
    for name in ("jax", "torch", "transformers", "tokenizers", "numpy", "h5py",
                 "optree", "namex"):
        try:
            module = __import__(name)
            result[name] = getattr(module, "__version__", "?")
        except ImportError as error:
            result[name] = f"missing ({error})"
    result.update(_device_info())
    import jax

    result["jax_devices"] = [str(d) for d in jax.devices()]


WORKERS = {("info", "info"): info_worker,
           ("bert", "kzoo"): bert_kzoo, ("bert", "transformers"): bert_transformers,
           ("bert", "transformers-compile"): bert_transformers,
           ("gpt2", "kzoo"): gpt_kzoo, ("gpt2", "transformers"): gpt_transformers,
           ("word2vec", "kzoo"): word2vec_kzoo}


def worker_main(row):
    settings = SETTINGS["smoke" if row["smoke"] else "full"]
    sys.path.insert(0, REPO_ROOT)
    result = {"row": row["name"], "backend": os.environ.get("KERAS_BACKEND")}
    start = time.perf_counter()
    WORKERS[(row["model"], row["library"])](row, settings, result)
    result.update(_device_info())
    result["worker_s"] = round(time.perf_counter() - start, 2)
    result["tensorflow_imported"] = imported("tensorflow")
    _emit(result)


# ------------------------------------------------------------------ driver


def _rows(args):
    """The rows in the order they run: the kzoo rows and their eager
    references first, the torch.compile references last."""
    smoke = args.smoke
    mode = "smoke" if smoke else "full"
    backends = args.backends.split(",")
    rows = []

    def add(model, library, backend, shape_name=None, shape=None, **extra):
        name = f"{model}{'-' + shape_name if shape_name else ''}/{library}"
        if library == "kzoo":
            name += f"-{backend}"
        timeout = ROW_TIMEOUTS[(model, shape_name, library)]
        rows.append(dict(name=name, model=model, library=library, backend=backend,
                         shape_name=shape_name, shape=shape, smoke=smoke,
                         timeout=timeout, measure_s=MEASURE_S[mode],
                         optional=library == "transformers-compile", **extra))

    kzoo_backends = [b for b in ("jax", "torch") if b in backends]
    references = "torch" in backends
    for shape_name in ("minilm", "base"):
        shape = SMOKE_BERT if smoke else BERT_SHAPES[shape_name]
        if references:
            add("bert", "transformers", "torch", shape_name, shape)
        for backend in kzoo_backends:
            add("bert", "kzoo", backend, shape_name, shape)
    gpt = SMOKE_GPT if smoke else GPT_SHAPE
    if references:
        add("gpt2", "transformers", "torch", shape=gpt)
    for backend in kzoo_backends:
        add("gpt2", "kzoo", backend, shape=gpt)
    corpus = args.corpus
    if not corpus:
        corpus = synthetic_corpus(
            os.path.join(args.out, "synthetic_corpus.txt"),
            SETTINGS[mode]["synthetic_words"])
    for backend in kzoo_backends:
        add("word2vec", "kzoo", backend, corpus=os.path.abspath(corpus))
    if references and args.compile:
        for shape_name in ("minilm", "base"):
            add("bert", "transformers-compile", "torch", shape_name,
                BERT_SHAPES[shape_name] if not smoke else SMOKE_BERT)
    if args.only:
        wanted = args.only.split(",")
        rows = [r for r in rows if any(w == r["name"] or r["name"].startswith(w + "/")
                                       or r["name"].startswith(w + "-") for w in wanted)]
    return rows


def _worker_env(row, smoke):
    env = dict(os.environ)
    env.update({WITHOUT_TENSORFLOW_ENV: "1", "KERAS_BACKEND": row["backend"],
                "KZOO_PREPROCESSING": "python", "TF_CPP_MIN_LOG_LEVEL": "2",
                "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                "PYTHONPATH": os.pathsep.join(
                    p for p in (REPO_ROOT, env.get("PYTHONPATH")) if p)})
    if smoke:
        env.update({"JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": ""})
        # Rows of the same tiny shape compile the same programs: XLA's
        # persistent cache gives the later ones the earlier ones' (and a
        # rerun all of them).
        if "JAX_COMPILATION_CACHE_DIR" not in env:
            env.update({"JAX_COMPILATION_CACHE_DIR": os.path.join(
                            tempfile.gettempdir(), "kzoo-bench-accelerator-jax-cache"),
                        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"})
    return env


def run_row(row, timeout):
    """Runs one row's worker in its own process group, killed after
    ``timeout`` seconds; returns its last JSON line, with ``error`` (and the
    end of its output) when it failed or ran out of time."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(row)],
            stdout=out, stderr=err, env=_worker_env(row, row["smoke"]), cwd=REPO_ROOT,
            start_new_session=True)
        error = None
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            error = f"timed out after {timeout:.0f} s"
        finally:
            if proc.poll() is None or error:  # the worker, and anything it started
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        out.seek(0)
        err.seek(0)
        lines, stderr = out.read().splitlines(), err.read()
    result = {}
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                result = json.loads(line)
                break
            except json.JSONDecodeError:
                continue
    if error is None and proc.returncode != 0:
        error = f"exit {proc.returncode}"
    if error:
        tail = (("\n".join(lines[-5:]) + "\n" + stderr).strip().splitlines())[-12:]
        # The exception's own line first, then the output's end.
        result["error"] = (f"{error}: {tail[-1] if tail else ''} (output's end: "
                           + " | ".join(tail)[-1500:] + ")")
    result["wall_s"] = round(time.perf_counter() - start, 1)
    result["timeout_s"] = round(timeout, 1)
    return result


def _nvidia_smi():
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        header = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    cuda = None
    for token in header.stdout.split("|"):
        if "CUDA Version" in token:
            cuda = token.split("CUDA Version:")[-1].strip()
    return {"gpus": [line.strip() for line in out.stdout.splitlines() if line.strip()],
            "cuda_driver_version": cuda}


def _fmt(value):
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


def table_rows(results, rows):
    """``(measure, kzoo row, kzoo value, eager reference value, ratio,
    compiled reference value, ratio)`` lines of the markdown table."""
    by_name = {r["name"]: results.get(r["name"], {}) for r in rows}
    lines = []
    kzoo_rows = [r for r in rows if r["library"] == "kzoo"]
    settings = SETTINGS["smoke" if rows and rows[0]["smoke"] else "full"]
    for shape_name, label in (("minilm", "BERT MiniLM shape"),
                              ("base", "BERT bert-base shape")):
        eager = by_name.get(f"bert-{shape_name}/transformers", {})
        compiled = by_name.get(f"bert-{shape_name}/transformers-compile", {})
        for key, what in (
                ("infer_seq_per_s", f"inference seq/s (bf16, batch "
                                    f"{settings['infer_batch']} x {settings['length']})"),
                ("train_steps_per_s", f"fine-tuning steps/s (bf16 compute, batch "
                                      f"{settings['train_batch']} x {settings['length']})")):
            for row in kzoo_rows:
                if row["model"] == "bert" and row["shape_name"] == shape_name:
                    value = by_name[row["name"]].get(key)
                    lines.append((f"{label} {what}", row["name"], value,
                                  "transformers eager", eager.get(key),
                                  "transformers torch.compile", compiled.get(key)))
    reference = by_name.get("gpt2/transformers", {})
    for batch in settings["gpt_batches"]:
        key = f"tokens_per_s_{batch}"
        for row in kzoo_rows:
            if row["model"] == "gpt2":
                lines.append((f"GPT-2 small greedy new tokens/s (bf16, batch {batch}, "
                              f"{settings['prompt']} + {settings['new_tokens']} tokens)",
                              row["name"], by_name[row["name"]].get(key),
                              "transformers eager", reference.get(key), None, None))
    for row in kzoo_rows:
        if row["model"] == "word2vec":
            r = by_name[row["name"]]
            gensim = (GENSIM_CPU_WORDS_PER_SEC if not row["smoke"]
                      and os.path.basename(row["corpus"]) == GENSIM_CORPUS else None)
            lines.append((f"word2vec skip-gram words/s, Python engine "
                          f"({r.get('corpus', os.path.basename(row['corpus']))}, "
                          f"{r.get('words', 0):,} words; epochs after the first)",
                          row["name"], r.get("words_per_sec"),
                          "gensim workers=2, 2-core CPU (bench/results)", gensim, None, None))
    return lines


def write_report(args, machine, rows, results, started):
    data = {"argv": sys.argv[1:], "smoke": args.smoke, "machine": machine,
            "budget_s": args.budget, "elapsed_s": round(time.perf_counter() - started, 1),
            "rows": {r["name"]: results.get(r["name"], {"pending": True}) for r in rows},
            "table": [dict(zip(("measure", "row", "kzoo", "reference", "reference_value",
                                "second_reference", "second_reference_value"), line))
                      for line in table_rows(results, rows)]}
    with open(os.path.join(args.out, "accelerator.json"), "w") as f:
        json.dump(data, f, indent=1)
    info = results.get("info", {})
    smi = machine.get("nvidia_smi") or {}
    md = ["# kzoo on an accelerator, without TensorFlow", ""]
    md.append(f"- GPU: {', '.join(smi.get('gpus') or []) or info.get('torch_device', '-')}; "
              f"driver CUDA {smi.get('cuda_driver_version') or '-'}; "
              f"torch CUDA {info.get('torch_cuda') or '-'}")
    md.append(f"- python {machine['python']}, torch {info.get('torch', '-')}, "
              f"jax {info.get('jax', '-')} ({', '.join(info.get('jax_devices') or [])}), "
              f"keras {info.get('keras', '-')}, transformers {info.get('transformers', '-')}, "
              f"tokenizers {info.get('tokenizers', '-')}")
    md.append(f"- TensorFlow installed: {'yes (blocked in every worker)' if machine['tensorflow_installed'] else 'no'}; "
              f"preprocessing engine: python; {'smoke run (tiny shapes, CPU)' if args.smoke else 'full run'}; "
              f"{data['elapsed_s']:.0f} s of a {args.budget} s budget")
    md += ["", "| measure | kzoo row | kzoo | reference | reference value | kzoo / reference "
               "| transformers torch.compile | kzoo / compiled |",
           "|---|---|---:|---|---:|---:|---:|---:|"]
    for measure_, row, value, ref_name, ref, _, compiled in table_rows(results, rows):
        md.append(f"| {measure_} | {row} | {_fmt(value)} | {ref_name} | {_fmt(ref)} | "
                  f"{_ratio(value, ref)} | {_fmt(compiled)} | {_ratio(value, compiled)} |")
    md += ["", "Medians of the timed calls after the warmup (compilation) calls; "
               "higher is faster, ratios are kzoo over the reference. kzoo fine-tunes in "
               "mixed_bfloat16 (float32 weights), transformers under torch.autocast(bf16); "
               "inference in bfloat16 weights for both. kzoo-jax rows run jax.jit, "
               "kzoo-torch rows eagerly. The gensim figure is a CPU figure from another "
               "machine, for scale only.", "", "| row | wall s | status |", "|---|---:|---|"]
    for r in rows:
        result = results.get(r["name"])
        status = ("pending" if result is None else
                  result["error"].replace("|", "/")[:300] if "error" in result else "ok")
        md.append(f"| {r['name']} | {result.get('wall_s', '-') if result else '-'} "
                  f"| {status} |")
    with open(os.path.join(args.out, "accelerator.md"), "w") as f:
        f.write("\n".join(md) + "\n")


def _headline(result):
    keys = [k for k in result if k.endswith(("_per_s", "words_per_sec"))
            or k.startswith("tokens_per_s_")]
    return ", ".join(f"{k} {result[k]:,.1f}" for k in keys if isinstance(result[k], float))


def driver_main(args):
    import importlib.util

    started = time.perf_counter()
    deadline = started + args.budget
    os.makedirs(args.out, exist_ok=True)
    machine = {"python": platform.python_version(), "nvidia_smi": _nvidia_smi(),
               "tensorflow_installed": importlib.util.find_spec("tensorflow") is not None,
               "cpus": os.cpu_count()}
    rows = _rows(args)
    info_row = dict(name="info", model="info", library="info",
                    backend=args.backends.split(",")[0], smoke=args.smoke)
    print(f"accelerator benchmark: {len(rows)} rows, budget {args.budget} s, "
          f"{'smoke' if args.smoke else 'full'}; {machine}", flush=True)
    results = {"info": run_row(info_row, min(90, args.budget))}
    print(f"  info: {results['info']}", flush=True)
    lock = threading.Lock()

    def run(row):
        left = deadline - time.perf_counter()
        need = MIN_OPTIONAL_ROW_S if row["optional"] else MIN_ROW_S
        if left < need:
            result = {"error": f"skipped: {left:.0f} s of the budget left, the row "
                               f"needs {need} s"}
        else:
            result = run_row(row, min(row["timeout"] * args.timeout_scale, left))
        with lock:
            results[row["name"]] = result
            print(f"  {row['name']:<36} {result.get('wall_s', 0):>6.1f} s  "
                  f"{'ERROR ' + result['error'][:300] if 'error' in result else _headline(result)}",
                  flush=True)
            write_report(args, machine, rows, results, started)

    # One row at a time unless --jobs (a smoke run's shortcut: rows that run
    # side by side slow each other down, so measurements never do that).
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(run, rows))
    write_report(args, machine, rows, results, started)
    with open(os.path.join(args.out, "accelerator.md")) as f:
        print(f.read())
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", help="folder for accelerator.json and accelerator.md")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny shapes on the CPU, every row but torch.compile's")
    parser.add_argument("--backends", default="jax,torch",
                        help="kzoo rows' backends (transformers rows need torch)")
    parser.add_argument("--only", default=None,
                        help="comma-separated groups or rows: bert-minilm, bert-base, "
                             "gpt2, word2vec, gpt2/kzoo-jax, ...")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds for the whole run (default 450; smoke 300)")
    parser.add_argument("--timeout-scale", type=float, default=None,
                        help="multiplies every row's time limit (default 1; smoke 3)")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                        help="transformers under torch.compile too (default: on, "
                             "off with --smoke)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="rows run side by side (smoke runs only: measured "
                             "rows must run alone)")
    parser.add_argument("--corpus", default=None,
                        help="word2vec text file (default: a synthetic Zipf corpus)")
    args = parser.parse_args(argv)
    if args.worker is None and not args.out:
        parser.error("--out is required")
    if args.budget is None:
        args.budget = 300 if args.smoke else 450
    if args.timeout_scale is None:
        args.timeout_scale = 3 if args.smoke else 1
    if args.compile is None:
        args.compile = not args.smoke
    if args.jobs > 1 and not args.smoke:
        parser.error("--jobs takes --smoke: measured rows run one at a time")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.worker:
        worker_main(json.loads(args.worker))
        return 0
    return driver_main(args)


if __name__ == "__main__":
    sys.exit(main())
