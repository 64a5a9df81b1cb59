"""Where a PyTorch BERT forward pass goes: kzoo beside transformers, op by op.

The MiniLM-L6 shape of ``bench/bert.py`` (random weights, batch 32 x 128),
both models in the same dtype, eager, ``torch.profiler`` over ``--passes``
forward passes after two untimed ones. Prints the wall time of a pass (the
median of ``--reps``, the two models taking turns) and, per ATen op, the
self CPU time per pass of each (summed over both cores' threads, so a
column can exceed the wall time), sorted by the larger of the two. kzoo's
pass is ``BertBackbone.predict_on_batch`` (what ``bench/bert.py`` times);
transformers' is ``BertModel`` under ``torch.inference_mode``.

    .venv/bin/python bench/profile_bert.py                 # bfloat16
    .venv/bin/python bench/profile_bert.py --dtype float32 --top 30

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
    args = parser.parse_args(argv)

    import numpy as np
    import torch
    import transformers

    import kzoo
    from bert import CONFIG, _random_batch, transformers_config

    x, _ = _random_batch(32, 128)
    backbone = kzoo.BertBackbone(
        **CONFIG, dtype=None if args.dtype == "float32" else args.dtype)
    backbone.compile(jit_compile=False)
    reference = transformers.BertModel(transformers_config()).eval().to(
        getattr(torch, args.dtype))
    ids = torch.from_numpy(x["token_ids"]).long()
    mask = torch.from_numpy(x["padding_mask"]).long()

    def hf():
        with torch.inference_mode():
            return reference(input_ids=ids, attention_mask=mask)

    def kz():
        return backbone.predict_on_batch(x)

    runs = {"kzoo": kz, "transformers": hf}
    wall = interleaved_wall(runs, args.reps)
    ops = profile_ops(runs, args.passes, per=args.passes)

    print(f"{args.dtype}, batch 32 x 128, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, transformers attention: "
          f"{reference.config._attn_implementation}")
    print("wall ms a pass (median): " + ", ".join(
        f"{name} {np.median(t) * 1e3:.1f}" for name, t in wall.items()))
    print_op_table(ops, args.top, "a pass", width=56)

if __name__ == "__main__":
    main()
