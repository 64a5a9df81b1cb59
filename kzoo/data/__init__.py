"""Pretraining data at corpus scale: prepared once, streamed.

``prepare`` reads a corpus (plain or gzip text files) in two streaming
passes, learns the family's vocabulary and writes token shards with an
index and a manifest (``kzoo prepare``); ``TokenShards`` reads them without
holding them, and each family's ``ShardBatches`` draws training batches
from them on the fly (blocks, sentence pairs and masks, sentences), the
same on every backend, per process, and resumable mid-epoch.
"""

from kzoo.data.corpus import CorpusError, split_sentences  # noqa: F401
from kzoo.data.prepare import Preparation, check_corpus_unchanged, prepare  # noqa: F401
from kzoo.data.shards import ShardError, TokenShards  # noqa: F401
from kzoo.data.streams import ShardBatches, process_shard  # noqa: F401
