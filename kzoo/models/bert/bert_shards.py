"""BERT from token shards: ``kzoo prepare bert`` and ``kzoo pretrain bert --data``.

Preparation splits each document's lines into sentences
(``kzoo.data.split_sentences``: a sentence a line stays one), keeps the
documents of two sentences or more (the next-sentence task needs them),
learns the WordPiece vocabulary from them (a sample of a large corpus) and
writes each sentence's word pieces. Training draws the pairs and the masks
on the fly, batch by batch, by the rules of ``BertPretrainerPreprocessor``.
"""

import threading

import keras
import numpy as np

from kzoo.data import Preparation, ShardBatches
from kzoo.data.corpus import split_sentences
from kzoo.data.shards import ids_dtype
from kzoo.models.bert.bert_pretraining import DEFAULTS, pretrainer_from_options
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.tokenizers import compute_word_piece_vocabulary


def _units(lines):
    return [sentence for line in lines for sentence in split_sentences(line)]


def _learn(texts, options):
    vocabulary = compute_word_piece_vocabulary(
        texts, vocabulary_size=options.vocabulary_size)
    return BertTokenizer(vocabulary=vocabulary)


PREPARATION = Preparation(
    units=_units,
    learn=_learn,
    encode=lambda tokenizer, texts: tokenizer(texts),
    dtype=lambda tokenizer: ids_dtype(tokenizer.vocabulary_size()),
    keep=lambda sentences: len(sentences) > 1,
    defaults={"vocabulary_size": DEFAULTS["vocabulary_size"]},
    what="sentences",
)


class BertPairs(ShardBatches):
    """Masked LM + next-sentence batches from ``TokenShards`` of sentences.

    An example is a sentence that is not its document's last (segment A).
    Its segment B is, with probability ``1 - random_next_rate``, the next
    sentence (label 0), else a sentence drawn uniformly from the other
    documents of the corpus (label 1); the pair is packed ``[CLS] a [SEP] b
    [SEP]`` (the longer one trimmed first) and masked (15% of the pieces:
    80% ``[MASK]``, 10% random, 10% kept; whole words with
    ``whole_word_masking``) by the packer and masker of the model's
    ``BertPretrainerPreprocessor``, with draws keyed by the batch.

    Args:
        shards: a ``kzoo.data.TokenShards`` prepared for BERT.
        preprocessor: the model's ``BertPretrainerPreprocessor`` (its
            sequence length, rates and special tokens).
        batch_size, epoch, seed, start, shard: as ``ShardBatches``.

    Returns batches ``(x, y, sample_weight)`` as the preprocessor does.
    """

    def __init__(self, shards, preprocessor, batch_size, epoch=0, seed=0, start=0,
                 shard=None, **kwargs):
        self.shards = shards
        self.preprocessor = preprocessor
        if preprocessor.packer is None:
            preprocessor._build()
        last = np.zeros(shards.num_units, bool)
        last[shards.last_units()] = True
        self.examples = np.flatnonzero(~last)
        if len(self.examples) == 0:
            raise ValueError(f"{shards.directory} has no document of two or more "
                             "sentences: BERT's next-sentence task needs them.")
        self.random_next_rate = preprocessor.random_next_rate
        self._local = threading.local()
        super().__init__(len(self.examples), batch_size, epoch=epoch, seed=seed,
                         start=start, shard=shard, **kwargs)

    def _layers(self):
        """This thread's packer and masker (copies of the preprocessor's)."""
        layers = getattr(self._local, "layers", None)
        if layers is None:
            layers = self._local.layers = tuple(
                type(layer).from_config(layer.get_config())
                for layer in (self.preprocessor.packer, self.preprocessor.masker))
        return layers

    def _random_other(self, unit, generator):
        """A sentence of another document than ``unit``'s, uniformly; None
        when the corpus has one document."""
        first, end = self.shards.document_bounds(unit)
        others = self.shards.num_units - (end - first)
        if others <= 0:
            return None
        r = int(generator.integers(others))
        return r if r < first else r + (end - first)

    def make_batch(self, rows, generator):
        from kzoo.preprocessing.engine import engine_scope
        from kzoo.preprocessing.preprocessing_layer import numpy_outputs

        first = self.examples[rows]
        coins = generator.random(len(first)) < self.random_next_rate
        second, labels = [], np.zeros(len(first), np.int32)
        for i, (a, coin) in enumerate(zip(first.tolist(), coins.tolist())):
            b = self._random_other(a, generator) if coin else None
            labels[i] = b is not None
            second.append(a + 1 if b is None else b)
        ids = [self.shards.unit(u).astype(np.int32) for u in first.tolist()]
        pair = [self.shards.unit(u).astype(np.int32) for u in second]
        packer, masker = self._layers()
        masker.set_python_generator(generator)
        with engine_scope("python"), numpy_outputs():
            packed = packer((ids, pair))
            masked = masker(packed["token_ids"])
        x = {"token_ids": masked["token_ids"], "segment_ids": packed["segment_ids"],
             "padding_mask": packed["padding_mask"],
             "mask_positions": masked["mask_positions"]}
        x = keras.tree.map_structure(_int32, x)
        y = {"mlm_logits": np.asarray(masked["mask_ids"], np.int32), "nsp_logits": labels}
        weights = {"mlm_logits": np.asarray(masked["mask_weights"], np.float32),
                   "nsp_logits": np.ones(len(labels), np.float32)}
        return x, y, weights


def _int32(value):
    return np.asarray(value).astype(np.int32)


def from_shards(shards, options):
    """``kzoo pretrain bert --data``: a ``BertPretrainer`` (sizes from
    ``options``) on pairs drawn from the shards. Returns the model and
    ``resumable_fit``'s data arguments."""
    tokenizer = shards.tokenizer()
    model = pretrainer_from_options(tokenizer, options)
    print(f"BERT: {tokenizer.vocabulary_size():,} word pieces; "
          f"{shards.num_documents:,} documents, {shards.num_units:,} sentences",
          flush=True)

    def batches_for_epoch(epoch, start=0):
        return BertPairs(shards, model.preprocessor, options.batch_size,
                         epoch=epoch, seed=options.seed, start=start)

    return model, {"batches_for_epoch": batches_for_epoch}
