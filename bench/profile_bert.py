"""Where a PyTorch BERT forward pass (or fine-tuning step) goes: kzoo beside
transformers, op by op.

The MiniLM-L6 shape of ``bench/bert.py`` (random weights, batch 32 x 128),
both models in the same dtype, eager, ``torch.profiler`` over ``--passes``
forward passes after two untimed ones. Prints the wall time of a pass (the
median of ``--reps``, the two models taking turns) and, per ATen op, the
self CPU time per pass of each (summed over both cores' threads, so a
column can exceed the wall time), sorted by the larger of the two. kzoo's
pass is ``BertBackbone.predict_on_batch`` (what ``bench/bert.py`` times);
transformers' is ``BertModel`` under ``torch.inference_mode``. With
``--train``, a fine-tuning step of ``bench/bert.py`` instead: kzoo's
``BertClassifier.train_on_batch`` (mixed bfloat16 for ``--dtype
bfloat16``, Adam), transformers' ``BertForSequenceClassification`` step
(``torch.autocast``, ``torch.optim.Adam``), dropout 0.1 in both.

    .venv/bin/python bench/profile_bert.py                 # bfloat16
    .venv/bin/python bench/profile_bert.py --dtype float32 --top 30
    .venv/bin/python bench/profile_bert.py --train         # a fine-tuning step

Run it on an idle machine; never imported by the tests.
"""

import argparse
import os
import sys

os.environ["KERAS_BACKEND"] = "torch"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _profile import interleaved_wall, print_op_table, profile_ops  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="bfloat16", choices=("float32", "bfloat16"))
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--train", action="store_true",
                        help="profile a fine-tuning step instead of a pass")
    args = parser.parse_args(argv)

    import numpy as np
    import torch

    from bert import _random_batch

    x, y = _random_batch(32, 128)
    ids = torch.from_numpy(x["token_ids"]).long()
    mask = torch.from_numpy(x["padding_mask"]).long()
    if args.train:
        kz, hf, attention = _training_steps(args.dtype, x, y, ids, mask)
    else:
        kz, hf, attention = _forward_passes(args.dtype, x, ids, mask)
    runs = {"kzoo": kz, "transformers": hf}
    wall = interleaved_wall(runs, args.reps)
    ops = profile_ops(runs, args.passes, per=args.passes)

    unit = "a step" if args.train else "a pass"
    print(f"{args.dtype}, batch 32 x 128, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, transformers attention: {attention}")
    print(f"wall ms {unit} (median): " + ", ".join(
        f"{name} {np.median(t) * 1e3:.1f}" for name, t in wall.items()))
    print_op_table(ops, args.top, unit, width=56)


def _forward_passes(dtype, x, ids, mask):
    import torch
    import transformers

    import kzoo
    from bert import CONFIG, transformers_config

    backbone = kzoo.BertBackbone(**CONFIG, dtype=None if dtype == "float32" else dtype)
    backbone.compile(jit_compile=False)
    reference = transformers.BertModel(transformers_config()).eval().to(
        getattr(torch, dtype))

    def hf():
        with torch.inference_mode():
            return reference(input_ids=ids, attention_mask=mask)

    def kz():
        return backbone.predict_on_batch(x)

    return kz, hf, reference.config._attn_implementation


def _training_steps(dtype, x, y, ids, mask):
    import torch
    import transformers

    import kzoo
    from bert import (LEARNING_RATE, NUM_CLASSES, compiled_classifier, phase_dtype,
                      transformers_config)

    train_dtype = phase_dtype(dtype, "train")
    classifier = compiled_classifier(
        kzoo.BertBackbone, kzoo.BertClassifier,
        None if train_dtype == "float32" else train_dtype, jit=False)
    model = transformers.BertForSequenceClassification(
        transformers_config(num_labels=NUM_CLASSES)).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    labels = torch.from_numpy(y).long()
    segments = torch.from_numpy(x["segment_ids"]).long()

    def hf():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype != "float32"):
            loss = model(input_ids=ids, token_type_ids=segments,
                         attention_mask=mask, labels=labels).loss
        loss.backward()
        optimizer.step()

    def kz():
        classifier.train_on_batch(x, y)

    return kz, hf, model.config._attn_implementation

if __name__ == "__main__":
    main()
