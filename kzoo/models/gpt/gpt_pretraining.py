"""GPT pretraining: a byte-level BPE, token blocks, a small GPT-2 to train.

The recipe of ``kzoo pretrain gpt`` (``pretrain``, ``evaluate``) and
``examples/pretrain_gpt.py``.
"""

import keras
import numpy as np

from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.models.gpt.gpt_causal_lm import GPTCausalLM
from kzoo.models.gpt.gpt_causal_lm_preprocessor import GPTCausalLMPreprocessor
from kzoo.models.gpt.gpt_tokenizer import GPTTokenizer
from kzoo.metrics import evaluate_perplexity
from kzoo.preprocessing.batches import shuffled_epoch
from kzoo.tokenizers import compute_byte_pair_merges
from kzoo.training.budget import budget_size

#: ``kzoo pretrain gpt``'s sizes where the command line gives none
DEFAULTS = {"batch_size": 16, "learning_rate": 1e-3, "vocabulary_size": 4096,
            "sequence_length": 128, "hidden_dim": 128, "num_layers": 4,
            "num_heads": 4}
#: the learning rate's warm-up where the command line gives none
WARMUP_STEPS = 200


def train_tokenizer(articles, vocabulary_size):
    """A byte-level BPE (GPT-2's scheme) learned from the articles' lines."""
    vocabulary, merges = compute_byte_pair_merges(
        [line for article in articles for line in article.split("\n")],
        vocabulary_size=vocabulary_size)
    return GPTTokenizer(vocabulary, merges)


def token_blocks(tokenizer, articles, length):
    """The articles as one stream, ``<|endoftext|>`` before each, cut into
    ``[blocks, length + 1]`` (the tail shorter than a block is dropped).
    Returns the blocks and the stream's length in tokens."""
    eos = tokenizer.end_token_id
    stream = []
    for article in articles:
        # Paragraph by paragraph (the same tokens as the whole article, as
        # GPT-2's pre-tokenization never merges across a newline), which keeps
        # the tokenizer's memory small.
        stream.append(eos)
        for ids in tokenizer([line + "\n" for line in article.split("\n")]):
            stream.extend(int(t) for t in ids)
    stream = np.asarray(stream, dtype="int32")
    count = max((len(stream) - 1) // length, 0)
    if count == 0:
        raise ValueError(
            f"the text makes {len(stream)} tokens, fewer than one block of "
            f"{length + 1}: give more text or a shorter sequence length.")
    starts = np.arange(count) * length
    return np.stack([stream[s:s + length + 1] for s in starts]), len(stream)


def as_inputs(blocks):
    """Token blocks → the causal LM's ``(x, y)``: each token predicts the next."""
    x = {"token_ids": blocks[:, :-1], "padding_mask": np.ones_like(blocks[:, :-1])}
    return x, blocks[:, 1:]


def perplexity(model, blocks, batch_size=64):
    """``(perplexity, loss)`` of the model on token blocks."""
    x, y = as_inputs(blocks)
    return evaluate_perplexity(model, x, y, batch_size=batch_size)


def build_causal_lm(tokenizer, sequence_length, num_layers=4, hidden_dim=128,
                    num_heads=4, dropout=0.1, learning_rate=1e-3,
                    warmup_steps=WARMUP_STEPS):
    """A GPT-2 style ``GPTCausalLM`` (pre-norm, tied head) compiled with
    AdamW, a linear warm-up and a cosine decay."""
    backbone = GPTBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=num_layers,
        num_heads=num_heads, hidden_dim=hidden_dim, intermediate_dim=4 * hidden_dim,
        max_sequence_length=sequence_length, dropout=dropout)
    preprocessor = GPTCausalLMPreprocessor(tokenizer, sequence_length=sequence_length)
    model = GPTCausalLM(backbone, preprocessor)
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0, decay_steps=100_000, warmup_target=learning_rate,
        warmup_steps=warmup_steps)
    model.compile(optimizer=keras.optimizers.AdamW(schedule, weight_decay=0.01,
                                                   clipnorm=1.0))
    return model


def causal_lm_from_options(tokenizer, options):
    """``build_causal_lm`` with ``kzoo pretrain gpt``'s options."""
    return build_causal_lm(
        tokenizer, options.sequence_length, num_layers=options.num_layers,
        hidden_dim=options.hidden_dim, num_heads=options.num_heads,
        dropout=options.dropout, learning_rate=options.learning_rate,
        warmup_steps=getattr(options, "warmup_steps", WARMUP_STEPS))


def add_arguments(group):
    """``kzoo pretrain gpt``'s own options."""
    group.add_argument("--warmup-steps", type=int, default=WARMUP_STEPS,
                       help="steps of the learning rate's linear warm-up "
                            f"(default {WARMUP_STEPS})")


def pretrain(documents, options):
    """``kzoo pretrain gpt``: a BPE learned from the documents, a causal
    LM on token blocks of ``options.sequence_length``, each epoch's blocks
    shuffled by ``(options.seed, epoch)``. Returns the model and
    ``resumable_fit``'s data arguments."""
    articles = ["\n".join(document) for document in documents]
    tokenizer = train_tokenizer(articles, options.vocabulary_size)
    blocks, tokens = token_blocks(tokenizer, articles, options.sequence_length)
    model = causal_lm_from_options(tokenizer, options)
    print(f"GPT: {tokenizer.vocabulary_size():,} BPE tokens; {tokens:,} training "
          f"tokens in {len(blocks):,} blocks of {options.sequence_length}")
    data = as_inputs(blocks)
    return model, {"data_for_epoch": lambda epoch: shuffled_epoch(
        data, epoch, options.batch_size, options.seed)}


def held_out(model, documents, batch_size):
    """Held-out ``{"perplexity", "loss", "tokens"}`` of a ``GPTCausalLM``
    on documents cut into its sequence length's blocks: per BPE token, the
    loss in nats."""
    length = model.preprocessor.sequence_length
    blocks, tokens = token_blocks(model.preprocessor.tokenizer,
                                  ["\n".join(d) for d in documents], length)
    ppl, loss = perplexity(model, blocks, batch_size)
    return {"perplexity": float(ppl), "loss": float(loss), "tokens": float(tokens)}


def evaluate(model, documents, batch_size):
    """Held-out perplexity per BPE token of a ``GPTCausalLM`` on documents
    cut into its sequence length's blocks (``kzoo evaluate --corpus``)."""
    result = held_out(model, documents, batch_size)
    return (f"perplexity {result['perplexity']:.2f} per BPE token (loss "
            f"{result['loss']:.4f}; {int(result['tokens']):,} tokens)")


def budget_options(minutes):
    """The sizes for a training budget of ``minutes`` on a 2-core CPU
    (``kzoo compare``): ``kzoo.training.budget_size``'s, and a warm-up of
    about a tenth of the steps such a budget reaches (a few hundred a
    minute on a 2-core CPU at the smallest size), at most the default 200."""
    return {**budget_size(minutes),
            "warmup_steps": int(min(WARMUP_STEPS, max(10, 20 * minutes)))}
