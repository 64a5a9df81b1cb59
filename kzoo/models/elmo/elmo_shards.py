"""ELMo from token shards: ``kzoo prepare elmo`` and ``kzoo pretrain elmo --data``.

ELMo's character CNN reads every word's characters, out-of-vocabulary
words included, so the shards hold each sentence's UTF-8 bytes (the
family's tokens are characters) and the softmax's word vocabulary is the
``WordTokenizer`` saved with them. Preparation keeps the sentences that
``elmo_pretraining.sentences_of`` keeps (3 words or more, words joined by
single spaces); the cut to ``sequence_length - 2`` words happens when a
batch is made, so one preparation serves every sequence length.
"""

import threading

import keras
import numpy as np

from kzoo.data import Preparation, ShardBatches
from kzoo.models.elmo import elmo_pretraining
from kzoo.preprocessing.batches import _as_model_input
from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.preprocessing_layer import numpy_outputs


def _sentences(lines):
    """One document's sentences of 3 words or more, words joined by single
    spaces (not cut: that happens when a batch is made)."""
    return elmo_pretraining.sentences_of(["\n".join(lines)], None)


def _learn(texts, options):
    return elmo_pretraining.train_tokenizer(texts, options.vocabulary_size)


def _encode(tokenizer, texts):
    return [np.frombuffer(text.encode("utf-8"), np.uint8) for text in texts]


PREPARATION = Preparation(
    units=_sentences,
    learn=_learn,
    encode=_encode,
    dtype=lambda tokenizer: "uint8",
    defaults={"vocabulary_size": elmo_pretraining.DEFAULTS["vocabulary_size"]},
    what="sentences",
)


class ElmoSentences(ShardBatches):
    """biLM batches of sentences from ``TokenShards`` prepared for ELMo.

    The examples are the shards' sentences. A batch decodes its sentences'
    UTF-8 bytes, cuts each to ``preprocessor.sequence_length - 2`` words
    and returns the preprocessor's output on them (``(x, y,
    sample_weight)``, numpy, computed on the Python engine), as ``fit``
    gets it from sentences in memory. The preprocessor pads every batch to
    its fixed ``sequence_length``, so batches of sentences of like length
    (length buckets) would save nothing: there are none. One background
    thread makes batches, and a lock keeps the preprocessor (a Keras
    layer) to one call at a time.

    Args:
        shards: a ``kzoo.data.TokenShards`` prepared for ELMo.
        preprocessor: an ``ElmoLanguageModelPreprocessor`` (the model's).
        batch_size, epoch, seed, start, shard: as ``ShardBatches``.
    """

    def __init__(self, shards, preprocessor, batch_size, epoch=0, seed=0, start=0,
                 shard=None, **kwargs):
        self.shards = shards
        self.preprocessor = preprocessor
        length = preprocessor.sequence_length
        self.max_words = None if length is None else length - 2
        self._lock = threading.Lock()
        kwargs.setdefault("threads", 1)
        super().__init__(shards.num_units, batch_size, epoch=epoch, seed=seed,
                         start=start, shard=shard, **kwargs)

    def sentences(self, rows):
        """The sentences of the examples ``rows``, cut to ``max_words``."""
        out = []
        for i in rows:
            words = self.shards.unit(int(i)).tobytes().decode("utf-8").split()
            out.append(" ".join(words[:self.max_words]))
        return out

    def make_batch(self, rows, generator):
        sentences = self.sentences(rows)
        with self._lock, engine_scope("python"), numpy_outputs():
            outputs = self.preprocessor(sentences)
        return keras.tree.map_structure(_as_model_input, outputs)


def from_shards(shards, options):
    """``kzoo pretrain elmo --data``: a small character biLM (sizes from
    ``options``) on the shards' sentences, the softmax's vocabulary the
    shards'. Returns the model and ``resumable_fit``'s data arguments."""
    tokenizer = shards.tokenizer()
    model = elmo_pretraining.language_model_from_options(tokenizer, options)
    print(f"ELMo: {tokenizer.vocabulary_size():,} words in the softmax; "
          f"{shards.num_units:,} sentences", flush=True)

    def batches_for_epoch(epoch, start=0):
        return ElmoSentences(shards, model.preprocessor, options.batch_size,
                             epoch=epoch, seed=options.seed, start=start)

    return model, {"batches_for_epoch": batches_for_epoch}
