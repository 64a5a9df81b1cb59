"""One process of a multi-device or multi-process run, for the tests.

``python tests/distribution/worker.py JOB OUTPUT.npz`` with the backend and
the job's variables in the environment; writes the step losses and the final
weights (and whatever the job compares) to OUTPUT.npz.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kzoo  # noqa: E402
from tests.distribution import tiny_models  # noqa: E402


def _fit(model, *data):
    steps = tiny_models.StepLosses()
    model.fit(*data, batch_size=8, epochs=1, steps_per_epoch=2, shuffle=False,
              verbose=0, callbacks=[steps])
    return steps.losses


def _weights(model):
    return {f"weight_{i}": w for i, w in enumerate(model.get_weights())}


def jax_data_parallel():
    """Two processes (one CPU device each) over 127.0.0.1, or one alone."""
    count = int(os.environ["KZOO_TEST_PROCESSES"])
    if count > 1:
        kzoo.distribution.initialize(
            os.environ["KZOO_TEST_COORDINATOR"], count,
            int(os.environ["KZOO_TEST_PROCESS_ID"]))
    distribution = kzoo.distribution.data_parallel(batch_size=8)
    with distribution.scope():
        model = tiny_models.bert_classifier()
        losses = _fit(model, tiny_models.TEXTS, tiny_models.LABELS)
    return dict(losses=losses, devices=len(kzoo.distribution.devices()),
                **_weights(model))


def tf_mirrored():
    """MirroredStrategy over 2 logical CPUs against the default device."""
    strategy = kzoo.distribution.mirrored_strategy(logical_cpus=2)
    results = {"replicas": strategy.num_replicas_in_sync}
    for name, make, data in (
        ("bert", tiny_models.bert_classifier, (tiny_models.TEXTS, tiny_models.LABELS)),
        ("gpt", tiny_models.gpt_causal_lm, (tiny_models.LM_TEXTS,)),
    ):
        reference = make()
        initial = reference.get_weights()
        results[f"{name}_one_device"] = _fit(reference, *data)
        with strategy.scope():
            model = make()
            model.set_weights(initial)
            results[f"{name}_mirrored"] = _fit(model, *data)
        results[f"{name}_difference"] = max(
            float(np.abs(a - b).max())
            for a, b in zip(model.get_weights(), reference.get_weights()))
        results[f"{name}_moved"] = max(
            float(np.abs(a - b).max()) for a, b in zip(initial, reference.get_weights()))
    return results


def torch_ddp():
    """One rank of DistributedDataParallel over gloo (torchrun's variables)."""
    rank, world_size, _ = kzoo.distribution.torch_ddp.init_process_group()
    model = tiny_models.bert_classifier()
    losses = kzoo.distribution.torch_ddp.fit(
        model, tiny_models.TEXTS, tiny_models.LABELS, batch_size=8, steps=2,
        shuffle=False, verbose=False)
    return dict(losses=losses, rank=rank, world_size=world_size, **_weights(model))


if __name__ == "__main__":
    job, output = sys.argv[1:3]
    np.savez(output, **{k: np.asarray(v) for k, v in globals()[job]().items()})
