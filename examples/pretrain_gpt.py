"""Pretrains a small GPT on gensim's Wikipedia excerpt and samples from it.

The corpus is the English Wikipedia excerpt that ships inside gensim (106
articles, ~480k words, ``kzoo.datasets.enwiki_excerpt()``). A few random
articles are held out; a byte-level BPE vocabulary (GPT-2's scheme) is trained
on the others with ``kzoo.tokenizers.compute_byte_pair_merges``; the training
articles become one token stream (``<|endoftext|>`` between articles) cut into
blocks of ``sequence_length + 1`` tokens, as GPT was trained; a small GPT-2
style model is trained for a fixed wall-clock budget. The held-out perplexity
(per BPE token) is printed before and after, the model is saved as a kzoo
preset (loaded back to check it), and samples are generated from a few
prompts with greedy decoding and nucleus sampling.

Run (any backend):

    pip install -e '.[demo]'
    KERAS_BACKEND=jax python examples/pretrain_gpt.py --seconds 360
"""

import argparse
import time

import keras
import numpy as np

import kzoo
from kzoo.models.gpt.gpt_causal_lm import GPTCausalLM
from kzoo.samplers import TopPSampler
from kzoo.models.gpt.gpt_pretraining import (
    as_inputs,
    build_causal_lm,
    perplexity,
    token_blocks,
    train_tokenizer,
)

PROMPTS = ["The history of", "In mathematics, a", "The city is located",
           "He was born in"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=360,
                        help="training budget in wall-clock seconds")
    parser.add_argument("--output", default="gpt_enwiki_tiny_en", help="preset folder")
    parser.add_argument("--vocabulary-size", type=int, default=4096)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--hidden-dim", type=int, default=128)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--held-out", type=int, default=8,
                        help="articles kept out of training for evaluation")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny model on a few paragraphs, one step: checks it runs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seconds, args.vocabulary_size, args.sequence_length = 0, 300, 32
        args.num_layers, args.hidden_dim, args.num_heads, args.held_out = 1, 16, 2, 1
    started = time.time()
    keras.utils.set_random_seed(args.seed)

    # === Data: articles, a random few held out ===
    articles = kzoo.datasets.enwiki_excerpt()
    if args.smoke:
        articles = [a[:3000] for a in articles[:4]]
    order = np.random.default_rng(args.seed).permutation(len(articles))
    held_out = [articles[i] for i in order[:args.held_out]]
    train = [articles[i] for i in order[args.held_out:]]
    print(f"{len(train)} training articles ({sum(len(a.split()) for a in train):,} "
          f"words), {len(held_out)} held out "
          f"({sum(len(a.split()) for a in held_out):,} words)")

    # === Byte-level BPE from the training articles ===
    t = time.time()
    tokenizer = train_tokenizer(train, args.vocabulary_size)
    train_blocks, train_tokens = token_blocks(tokenizer, train, args.sequence_length)
    eval_blocks, eval_tokens = token_blocks(tokenizer, held_out, args.sequence_length)
    print(f"BPE: {tokenizer.vocabulary_size()} tokens "
          f"({time.time() - t:.0f} s); {train_tokens:,} training tokens in "
          f"{len(train_blocks)} blocks, {eval_tokens:,} held-out tokens")

    # === Model: GPT-2 arrangement (pre-norm, final layer norm, tied head) ===
    model = build_causal_lm(
        tokenizer, args.sequence_length, num_layers=args.num_layers,
        hidden_dim=args.hidden_dim, num_heads=args.num_heads, dropout=args.dropout,
        learning_rate=args.learning_rate)
    backbone = model.backbone
    print(f"GPTCausalLM: {backbone.count_params():,} parameters "
          f"({args.num_layers} layers, hidden {args.hidden_dim})")
    ppl, loss = perplexity(model, eval_blocks, 64)
    print(f"before training: held-out perplexity {ppl:,.0f} (loss {loss:.3f}; "
          f"uniform over the vocabulary would be {tokenizer.vocabulary_size()})")

    # === Training on token blocks, for a wall-clock budget ===
    x, y = as_inputs(train_blocks)
    budget = kzoo.callbacks.TimeBudget(args.seconds)
    train_started = time.time()
    history = model.fit(x, y, batch_size=args.batch_size, epochs=10_000,
                        callbacks=[budget], verbose=0)
    seconds = time.time() - train_started
    seen = budget.steps * args.batch_size * args.sequence_length
    print(f"trained {budget.steps} steps ({len(history.epoch)} epochs, "
          f"{seen:,} tokens) in {seconds:.0f} s; last epoch's training loss "
          f"{history.history['loss'][-1]:.3f}")
    ppl, loss = perplexity(model, eval_blocks, 64)
    print(f"after training: held-out perplexity {ppl:.1f} (loss {loss:.3f})")

    # === Save, reload, check ===
    model.save_to_preset(args.output)
    restored = GPTCausalLM.from_preset(args.output)
    print(f"reloaded preset {args.output}: held-out perplexity "
          f"{perplexity(restored, eval_blocks, 64)[0]:.1f}")

    # === Samples ===
    t = time.time()
    max_length = 24 if args.smoke else 40
    greedy = restored.generate(PROMPTS, max_length=max_length)
    print(f"greedy ({time.time() - t:.1f} s, compile included):")
    for text in greedy:
        print("  " + " ".join(text.split()))
    t = time.time()
    sampled = restored.generate(PROMPTS, max_length=max_length,
                                sampler=TopPSampler(p=0.9, seed=args.seed))
    print(f"top-p 0.9 ({time.time() - t:.1f} s):")
    for text in sampled:
        print("  " + " ".join(text.split()))
    print(f"total wall time {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
