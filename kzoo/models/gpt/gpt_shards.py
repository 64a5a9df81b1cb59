"""GPT from token shards: ``kzoo prepare gpt`` and ``kzoo pretrain gpt --data``.

Preparation learns the byte-level BPE from the corpus's lines (a sample of
them for a large corpus) and writes each document's lines as one token
stream, ``<|endoftext|>`` before each document: the stream
``token_blocks`` makes in memory. Training reads contiguous blocks of
``sequence_length + 1`` tokens from it, in an order set by the seed and the
epoch.
"""

import numpy as np

from kzoo.data import Preparation, ShardBatches
from kzoo.data.shards import ids_dtype
from kzoo.models.gpt.gpt_pretraining import DEFAULTS, as_inputs, causal_lm_from_options
from kzoo.models.gpt.gpt_tokenizer import GPTTokenizer
from kzoo.tokenizers import compute_byte_pair_merges


def _learn(texts, options):
    vocabulary, merges = compute_byte_pair_merges(
        (t.rstrip("\n") for t in texts), vocabulary_size=options.vocabulary_size)
    return GPTTokenizer(vocabulary, merges)


def _encode(tokenizer, texts):
    return tokenizer(texts)


PREPARATION = Preparation(
    units=lambda lines: [line + "\n" for line in lines],
    learn=_learn,
    encode=_encode,
    dtype=lambda tokenizer: ids_dtype(tokenizer.vocabulary_size()),
    document_prefix=lambda tokenizer: [tokenizer.end_token_id],
    defaults={"vocabulary_size": DEFAULTS["vocabulary_size"]},
    what="lines",
)


class GPTBlocks(ShardBatches):
    """Causal LM batches of contiguous token blocks from ``TokenShards``.

    Block ``k`` is the tokens ``[k * length, k * length + length + 1)`` of
    the corpus's stream (the tail shorter than a block is left out); a
    batch is ``({"token_ids", "padding_mask"}, next token ids)``, as
    ``gpt_pretraining.as_inputs`` makes from blocks in memory.

    Args:
        shards: a ``kzoo.data.TokenShards`` prepared for GPT.
        length: int. The sequence length.
        batch_size, epoch, seed, start, shard: as ``ShardBatches``.
    """

    def __init__(self, shards, length, batch_size, epoch=0, seed=0, start=0,
                 shard=None, **kwargs):
        self.shards = shards
        self.length = int(length)
        count = max((shards.num_tokens - 1) // self.length, 0)
        if count == 0:
            raise ValueError(
                f"{shards.directory} holds {shards.num_tokens:,} tokens, fewer than "
                f"one block of {self.length + 1}: give more text or a shorter "
                "sequence length.")
        super().__init__(count, batch_size, epoch=epoch, seed=seed, start=start,
                         shard=shard, **kwargs)

    def make_batch(self, rows, generator):
        blocks = np.stack([self.shards.tokens(int(k) * self.length,
                                              int(k) * self.length + self.length + 1)
                           for k in rows]).astype(np.int32)
        return as_inputs(blocks)


def from_shards(shards, options):
    """``kzoo pretrain gpt --data``: a causal LM (sizes from ``options``)
    on the shards' blocks. Returns the model and ``resumable_fit``'s data
    arguments."""
    tokenizer = shards.tokenizer()
    model = causal_lm_from_options(tokenizer, options)
    print(f"GPT: {tokenizer.vocabulary_size():,} BPE tokens; {shards.num_tokens:,} "
          f"training tokens in {(shards.num_tokens - 1) // options.sequence_length:,} "
          f"blocks of {options.sequence_length}", flush=True)

    def batches_for_epoch(epoch, start=0):
        return GPTBlocks(shards, options.sequence_length, options.batch_size,
                         epoch=epoch, seed=options.seed, start=start)

    return model, {"batches_for_epoch": batches_for_epoch}
