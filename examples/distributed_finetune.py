"""Fine-tunes the real MiniLM BertClassifier over every device it finds.

The same script on every engine kzoo wraps (``kzoo.distribution``):

* JAX: ``keras.distribution`` data parallelism over all devices, or with
  ``--model-parallel N`` a (devices / N, N) mesh whose ``model`` axis splits
  the large weights by ``BertBackbone.get_layout_map``. Before training it
  runs the first step on one device and on the mesh from the same weights
  and prints both losses side by side.
* TensorFlow: ``MirroredStrategy`` over the GPUs (``--logical-cpus N`` to
  split a CPU into N devices), or ``TPUStrategy`` with ``--tpu local``.
* PyTorch: ``DistributedDataParallel`` when launched with ``torchrun``.

The data are gensim's 200 Pang & Lee movie-review sentences (40 held out).
Run here, on 8 simulated devices:

    XLA_FLAGS=--xla_force_host_platform_device_count=8 KERAS_BACKEND=jax \\
        python examples/distributed_finetune.py [--model-parallel 2]

On a Cloud TPU VM or a multi-GPU host, unchanged:

    KERAS_BACKEND=jax python examples/distributed_finetune.py
    KERAS_BACKEND=tensorflow python examples/distributed_finetune.py --tpu local
    KERAS_BACKEND=torch torchrun --nproc_per_node=4 examples/distributed_finetune.py

JAX over several hosts: on each host i of N, with host 0 at HOST0,

    KERAS_DISTRIBUTION_JOB_ADDRESSES=HOST0:1234 KERAS_DISTRIBUTION_NUM_PROCESSES=N \\
    KERAS_DISTRIBUTION_PROCESS_ID=i KERAS_BACKEND=jax \\
        python examples/distributed_finetune.py --multi-host

``--smoke`` runs a few steps on a few sentences, to check that it works.
"""

import argparse
import contextlib
import os
import time

import keras
import numpy as np

import kzoo
from kzoo.datasets import pang_lee_polarity


def is_main_process():
    """Process 0 of a torchrun or multi-host JAX run (or the only process)."""
    return os.environ.get("RANK", os.environ.get("KERAS_DISTRIBUTION_PROCESS_ID", "0")) == "0"


def say(*args):
    if is_main_process():
        print(*args, flush=True)


def load_data(seed, held_out=40, smoke=False):
    texts, labels = pang_lee_polarity(seed=seed)
    labels = np.array(labels)
    if smoke:
        texts, labels, held_out = texts[:80], labels[:80], 16
    return (texts[held_out:], labels[held_out:]), (texts[:held_out], labels[:held_out])


def build(args):
    keras.utils.set_random_seed(args.seed)
    model = kzoo.BertClassifier.from_preset(
        args.preset, num_classes=2, sequence_length=args.sequence_length)
    model.compile(optimizer=keras.optimizers.AdamW(args.learning_rate,
                                                   weight_decay=0.01))
    return model


def first_step_loss(model, texts, labels, batch_size):
    history = model.fit(texts[:batch_size], labels[:batch_size],
                        batch_size=batch_size, epochs=1, shuffle=False, verbose=0)
    return history.history["loss"][0]


def keras_distribution(args):
    """JAX (or TF data parallel): a keras.distribution for the devices found."""
    if args.multi_host:
        kzoo.distribution.initialize()
    found = kzoo.distribution.devices()
    if args.model_parallel > 1:
        if len(found) % args.model_parallel:
            raise SystemExit(f"--model-parallel {args.model_parallel} does not divide "
                             f"the {len(found)} devices found.")
        shape = (len(found) // args.model_parallel, args.model_parallel)
        distribution = kzoo.distribution.model_parallel(
            kzoo.BertBackbone, shape=shape, batch_size=args.batch_size)
    else:
        distribution = kzoo.distribution.data_parallel(batch_size=args.batch_size)
    mesh = distribution.device_mesh
    say(f"{len(found)} devices ({found[0]} ...); mesh "
          f"{dict(zip(mesh.axis_names, mesh.shape))}")
    return distribution


def show_placement(model):
    """Where the first encoder block's kernels live (JAX shardings)."""
    for variable in model.backbone.transformer_layers[0].weights:
        if variable.path.endswith("kernel"):
            sharding = variable.value.sharding
            say(f"  {variable.path:<58} {str(tuple(variable.shape)):<14} "
                  f"{sharding.spec} on {len(sharding.device_set)} devices")


def tf_strategy(args):
    if args.tpu:
        strategy = kzoo.distribution.tpu_strategy(args.tpu)
    else:
        strategy = kzoo.distribution.mirrored_strategy(logical_cpus=args.logical_cpus)
    say(f"{type(strategy).__name__} over {strategy.num_replicas_in_sync} replicas: "
          f"{list(strategy.extended.worker_devices)}")
    return strategy


def run_torch(args, train, test):
    if "RANK" not in os.environ:
        say("PyTorch without torchrun: one process. Launch with "
              "`torchrun --nproc_per_node=N` for DistributedDataParallel.")
    else:
        rank, world_size, device = kzoo.distribution.torch_ddp.init_process_group()
        say(f"DistributedDataParallel over {world_size} processes (rank 0 on {device})")
    model = build(args)
    kzoo.distribution.torch_ddp.fit(
        model, *train, batch_size=args.batch_size, epochs=args.epochs,
        learning_rate=args.learning_rate, seed=args.seed,
        steps=2 if args.smoke else None)
    return model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="minilm_l6_en_uncased")
    parser.add_argument("--model-parallel", type=int, default=1,
                        help="devices per model replica (JAX): a 2-D mesh when > 1")
    parser.add_argument("--batch-size", type=int, default=16,
                        help="global batch size; the data-parallel size divides it")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--multi-host", action="store_true",
                        help="JAX: join a multi-process run (KERAS_DISTRIBUTION_*)")
    parser.add_argument("--tpu", default=None, help="TensorFlow: 'local' or a TPU name")
    parser.add_argument("--logical-cpus", type=int, default=None,
                        help="TensorFlow: mirror over this many logical CPUs")
    parser.add_argument("--smoke", action="store_true",
                        help="a few sentences, a short sequence, one epoch")
    args = parser.parse_args(argv)
    if args.smoke:
        args.epochs, args.sequence_length, args.batch_size = 1, 16, 16
    start = time.time()
    backend = keras.config.backend()
    say(f"kzoo distributed fine-tuning on the {backend} backend")
    train, test = load_data(args.seed, smoke=args.smoke)
    say(f"data: Pang & Lee sentences: {len(train[0])} to train on, "
          f"{len(test[0])} held out; global batch {args.batch_size}")

    if backend == "torch":
        model = run_torch(args, train, test)
    else:
        if backend == "jax":
            distribution = keras_distribution(args)
            scope = distribution.scope
        else:
            scope = tf_strategy(args).scope
        # The first step from the same weights, on one device and on all.
        single = build(args)
        initial = single.get_weights()
        one_device = first_step_loss(single, *train, args.batch_size)
        del single
        with scope():
            model = build(args)
            model.set_weights(initial)
            all_devices = first_step_loss(model, *train, args.batch_size)
            if backend == "jax":
                show_placement(model)
            say(f"first step loss: one device {one_device:.7f} | all devices "
                  f"{all_devices:.7f} | difference {abs(one_device - all_devices):.1e}"
                  + (" (dropout draws differ per replica under tf.distribute)"
                     if backend == "tensorflow" else ""))
            model.fit(*train, batch_size=args.batch_size, epochs=args.epochs,
                      validation_data=test, verbose=2)
    with scope() if backend != "torch" else contextlib.nullcontext():
        accuracy = model.evaluate(*test, batch_size=8, verbose=0,
                                  return_dict=True)["accuracy"]
    say(f"held-out accuracy: {accuracy:.3f} ({len(test[0])} sentences)")
    say(f"done in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
