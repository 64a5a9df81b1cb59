"""Where a PyTorch GPT generation step goes: kzoo beside transformers, op by op.

The GPT-2 shape of ``bench/gpt.py`` (random weights), ``--batch`` prompts of
``--prompt-length`` random tokens and ``--new-tokens`` greedy new tokens
(no stop token), both models in the same dtype, eager, ``torch.profiler``
over one generation after two untimed ones. Prints the wall time of a
generation (the median of ``--reps``, the two models taking turns, so the
ratio holds on a loaded machine where the absolute times do not) and, per
ATen op, the self CPU time and calls per new token of each, sorted by the
larger of the two. ``--batch`` sets how many prompts each generation
continues (default 1). kzoo's generation is ``GPTCausalLM.generate_token_ids``
(what ``bench/gpt.py`` times); transformers' is ``GPT2LMHeadModel.generate``
with its key/value cache under ``torch.inference_mode``.

    .venv/bin/python bench/profile_gpt.py                   # float32
    .venv/bin/python bench/profile_gpt.py --dtype bfloat16 --top 30
    .venv/bin/python bench/profile_gpt.py --dtype bfloat16 --batch 8

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
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--prompt-length", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)

    import keras
    import numpy as np
    import torch
    import transformers

    import kzoo
    from gpt import CONFIG, _prompts

    keras.utils.set_random_seed(0)
    backbone = kzoo.models.GPTBackbone(
        **CONFIG, dropout=0.0, dtype=None if args.dtype == "float32" else args.dtype)
    lm = kzoo.models.GPTCausalLM(backbone)
    reference = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=CONFIG["vocabulary_size"], n_positions=CONFIG["max_sequence_length"],
        n_embd=CONFIG["hidden_dim"], n_layer=CONFIG["num_layers"],
        n_head=CONFIG["num_heads"], n_inner=CONFIG["intermediate_dim"],
    )).eval().to(getattr(torch, args.dtype))
    prompt = _prompts(args.batch, args.prompt_length)
    total = args.prompt_length + args.new_tokens
    ids = torch.from_numpy(prompt).long()

    def hf():
        with torch.inference_mode():
            return reference.generate(
                ids, attention_mask=torch.ones_like(ids),
                max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                do_sample=False, use_cache=True, pad_token_id=0, eos_token_id=None)

    def kz():
        return lm.generate_token_ids(prompt.tolist(), max_length=total,
                                     stop_token_ids=None)

    runs = {"kzoo": kz, "transformers": hf}
    wall = interleaved_wall(runs, args.reps)
    ops = profile_ops(runs, 1, per=args.new_tokens)

    print(f"{args.dtype}, batch {args.batch}, prompt {args.prompt_length}, "
          f"{args.new_tokens} new tokens, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    print("wall s a generation (median): " + ", ".join(
        f"{name} {np.median(t):.3f}" for name, t in wall.items())
          + "; new tokens/s: " + ", ".join(
        f"{name} {args.batch * args.new_tokens / np.median(t):.1f}" for name, t in wall.items()))
    print_op_table(ops, args.top, "a new token" if args.batch == 1
                   else f"a step ({args.batch} new tokens)")

if __name__ == "__main__":
    main()
