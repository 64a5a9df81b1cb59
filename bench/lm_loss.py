"""Benchmark the language-model loss: Keras' sparse cross-entropy on logits
against kzoo's `SparseLogitsCrossEntropy` (log-sum-exp minus the gathered
logit), value and gradient with respect to the logits, per backend.

    python bench/lm_loss.py                       # every backend, one process each
    KERAS_BACKEND=jax python bench/lm_loss.py --worker

Shapes: [positions, vocabulary] = [2048, 20000] (ELMo-sized), [2048, 30522]
(BERT), [2048, 50257] (GPT-2); float32; the median of 20 timed calls after 3
warm-up calls, compiled (jit / tf.function) where the backend compiles.
Never imported by the tests.
"""

import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
SHAPES = ((2048, 20000), (2048, 30522), (2048, 50257))


def value_and_grad(loss_fn):
    import keras

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.jit(jax.value_and_grad(lambda z, y, w: loss_fn(y, z, w)))
    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function(jit_compile=True)
        def step(z, y, w):
            with tf.GradientTape() as tape:
                tape.watch(z)
                value = loss_fn(y, z, w)
            return value, tape.gradient(value, z)
        return step
    import torch

    def step(z, y, w):
        z = z.detach().requires_grad_(True)
        value = loss_fn(y, z, w)
        (grad,) = torch.autograd.grad(value, z)
        return value, grad
    return step


def worker():
    sys.path.insert(0, REPO_ROOT)
    import keras
    import numpy as np

    from kzoo.losses import SparseLogitsCrossEntropy

    rows = []
    for n, v in SHAPES:
        rng = np.random.default_rng(0)
        z = keras.ops.convert_to_tensor(rng.normal(size=(n, v)).astype("float32"))
        y = keras.ops.convert_to_tensor(rng.integers(0, v, n).astype("int32"))
        w = keras.ops.convert_to_tensor((rng.random(n) < 0.9).astype("float32"))
        times = {}
        for name, loss in (
                ("keras", keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True, reduction="mean_with_sample_weight")),
                ("kzoo", SparseLogitsCrossEntropy(
                    reduction="mean_with_sample_weight"))):
            step = value_and_grad(lambda y_, z_, w_: loss(y_, z_, sample_weight=w_))
            for _ in range(3):
                out = step(z, y, w)
            keras.ops.convert_to_numpy(out[0])
            samples = []
            for _ in range(20):
                start = time.perf_counter()
                out = step(z, y, w)
                keras.ops.convert_to_numpy(out[1]).sum()
                samples.append(time.perf_counter() - start)
            times[name] = (statistics.median(samples), out)
        diff = float(np.abs(keras.ops.convert_to_numpy(times["keras"][1][1])
                            - keras.ops.convert_to_numpy(times["kzoo"][1][1])).max())
        rows.append((keras.backend.backend(), f"[{n}, {v}]", times["keras"][0] * 1e3,
                     times["kzoo"][0] * 1e3, diff))
    for backend, shape, keras_ms, kzoo_ms, diff in rows:
        print(f"| {backend:<10} | {shape:<13} | {keras_ms:8.1f} | {kzoo_ms:8.1f} | "
              f"{keras_ms / kzoo_ms:5.2f} | {diff:.1e} |", flush=True)


def main():
    if "--worker" in sys.argv:
        worker()
        return
    print(f"load average before: {os.getloadavg()}")
    print("| backend    | shape         | keras ms | kzoo ms  | x     | max grad diff |")
    print("|------------|---------------|---------:|---------:|------:|--------------:|")
    for backend in ("tensorflow", "jax", "torch"):
        env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker"],
                             env=env, capture_output=True, text=True, timeout=1800)
        print("".join(line + "\n" for line in out.stdout.splitlines()
                      if line.startswith("|")) or f"| {backend} | error: "
              f"{out.stderr[-300:]}", end="", flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
