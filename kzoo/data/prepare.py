"""``prepare``: a corpus → a tokenizer and token shards, streamed.

Two passes over the corpus, neither holding it: the first learns the
vocabulary (from every document, or from an even sample of them for the
families whose tokenizer is learned from text: one document in ``stride``,
where ``stride`` brings the sample near ``vocabulary_sample_mb``); the
second tokenizes batches of units (sentences or lines) on the Python
engine (Hugging Face ``tokenizers`` spreads a batch over the machine's
cores) while the next batch is read, and writes the ids into shards. The
folder is written under a temporary name beside ``output``, synced and
renamed when whole: a failure (a full disk, Ctrl-C) removes it and leaves an
earlier preparation in ``output`` as it was.
"""

import concurrent.futures
import dataclasses
import json
import math
import os
import shutil
import time
import types
from collections.abc import Callable, Mapping

from kzoo.data import corpus as corpus_files
from kzoo.presets.atomic_files import replace_folder
from kzoo.data.shards import (FORMAT, FORMAT_VERSION, MANIFEST, TOKENIZER,
                              ShardError, ShardWriter, TokenShards, read_manifest,
                              tokenizer_fingerprint)

#: characters of text tokenized per call (one batch spread over the cores);
#: a batch's encodings take ~25x its text while they are turned into ids
_BATCH_CHARACTERS = 1 << 20


@dataclasses.dataclass(frozen=True)
class Preparation:
    """How ``kzoo prepare FAMILY`` turns a corpus into shards.

    Args:
        units: ``units(lines) -> list of str``: one document's units (its
            sentences, or its lines), as the family trains on them.
        learn: ``learn(texts, options) -> tokenizer``: the tokenizer learned
            from an iterator of units (the sample's, or every one with
            ``sample=False``).
        encode: ``encode(tokenizer, units) -> list of 1-D int arrays``.
        dtype: ``dtype(tokenizer) -> str``: the shards' id dtype.
        keep: ``keep(units) -> bool``: whether a document is kept (BERT's
            next-sentence task needs two sentences); None: all.
        document_prefix: ``document_prefix(tokenizer) -> list of ids``
            put before each document (GPT's ``<|endoftext|>``); None: none.
        sample: whether the vocabulary is learned from a sample (False:
            from every unit, e.g. word2vec's exact counts).
        defaults: the options' values where the caller gives none
            (``vocabulary_size``...).
        options: the option names that change the prepared data (recorded
            in the manifest; a folder prepared with others is redone).
        add_arguments: ``add_arguments(group)`` adds the family's options
            to ``kzoo prepare``.
        what: a word for the units in messages ("sentences").
    """

    units: Callable
    learn: Callable
    encode: Callable
    dtype: Callable
    keep: Callable | None = None
    document_prefix: Callable | None = None
    sample: bool = True
    defaults: Mapping = dataclasses.field(default_factory=dict)
    options: tuple = ("vocabulary_size",)
    add_arguments: Callable | None = None
    what: str = "units"


def _options(preparation, options):
    values = dict(preparation.defaults)
    for key, value in (options or {}).items():
        if value is not None:
            values[key] = value
    return values


def _sampled(documents, stride):
    for i, document in enumerate(documents):
        if i % stride == 0:
            yield document


def _units_of(preparation, documents):
    for document in documents:
        units = preparation.units(document)
        if units and (preparation.keep is None or preparation.keep(units)):
            yield units


def _up_to_date(output, family, paths, recorded):
    """The manifest of ``output`` when it was prepared from these files
    (unchanged) with these options; else None."""
    try:
        manifest = read_manifest(output)
    except ShardError:
        return None
    same = (manifest["family"] == family and manifest["options"] == recorded
            and [c["path"] for c in manifest["corpus"]] == paths)
    if same and not corpus_files.changed_files(manifest["corpus"]):
        return manifest
    return None


def prepare(family, corpus, output, options=None, shard_tokens=1 << 25,
            vocabulary_sample_mb=100, verbose=True):
    """Prepares a corpus for a family's pretraining: its tokenizer and token
    shards in ``output``.

    Args:
        family: a family name (``"bert"``) or ``kzoo.models.Family``.
        corpus: the corpus files (plain or gzip UTF-8 text; a blank line
            between documents).
        output: the folder to write (replaced whole when it holds an
            earlier preparation; left as it is when that one is up to date).
        options: a dict of the family's options (``vocabulary_size``,
            word2vec's ``min_count``...); None or missing: its defaults.
        shard_tokens: int. Tokens per shard (about).
        vocabulary_sample_mb: float. The vocabulary is learned from an
            even sample of the documents of about this many MB (every
            document of a smaller corpus).
        verbose: bool. Print what is done.

    Returns:
        A ``kzoo.data.TokenShards`` of ``output``.
    """
    from kzoo.models.family import get_family

    record = get_family(family) if isinstance(family, str) else family
    preparation = getattr(record.pretraining, "prepare", None)
    if preparation is None:
        raise ValueError(f"{record.title} has no preparation for pretraining.")
    paths = corpus_files.check_files(corpus if isinstance(corpus, (list, tuple))
                                     else [corpus])
    output = os.path.abspath(os.fspath(output))
    if os.path.exists(output) and not os.path.isdir(output):
        raise ValueError(f"{output} is a file: name a folder to prepare into.")
    if (os.path.isdir(output) and os.listdir(output)
            and not os.path.exists(os.path.join(output, MANIFEST))):
        raise ValueError(f"{output} exists and is not a prepared folder: name a "
                         "new folder (or remove this one).")
    values = _options(preparation, options)
    recorded = {k: values.get(k) for k in preparation.options}
    current = _up_to_date(output, record.name, paths, recorded)
    if current is not None:
        if verbose:
            print(f"{output} is up to date with the corpus", flush=True)
        return TokenShards(output)
    size = corpus_files.total_bytes(paths)
    stride = 1
    if preparation.sample:
        stride = max(1, math.ceil(size / (vocabulary_sample_mb * 1e6)))
    parent = os.path.dirname(output)
    os.makedirs(parent, exist_ok=True)
    temporary = os.path.join(parent, f".{os.path.basename(output)}.preparing-{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    os.makedirs(temporary)
    try:
        manifest = _write(record, preparation, paths, temporary, values, recorded,
                          stride, shard_tokens, verbose)
        replace_folder(temporary, output)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    if verbose:
        print(f"prepared {output}: {manifest['num_tokens']:,} tokens, "
              f"{manifest['num_units']:,} {preparation.what}, "
              f"{manifest['num_documents']:,} documents in "
              f"{len(manifest['shards'])} shard(s)", flush=True)
    return TokenShards(output)


def _write(record, preparation, paths, directory, values, recorded, stride,
           shard_tokens, verbose):
    from kzoo.preprocessing.engine import engine_scope
    from kzoo.preprocessing.preprocessing_layer import numpy_outputs
    from kzoo.version import __version__

    options = types.SimpleNamespace(**values)
    start = time.perf_counter()
    sample = _units_of(preparation, _sampled(corpus_files.documents(paths), stride))
    seen = {"units": 0}

    def texts():
        for units in sample:
            seen["units"] += len(units)
            yield from units

    with engine_scope("python"), numpy_outputs():
        tokenizer = preparation.learn(texts(), options)
    if seen["units"] == 0:
        raise corpus_files.CorpusError(
            f"the corpus {', '.join(paths)} has no {preparation.what} that "
            f"{record.title} trains on"
            + (" (its documents need two or more sentences)" if preparation.keep
               else "") + ": give more text.")
    if verbose:
        what = "every document" if stride == 1 else f"one document in {stride}"
        print(f"{record.title}: vocabulary of {tokenizer.vocabulary_size():,} "
              f"learned from {what} in {time.perf_counter() - start:.1f} s", flush=True)
    tokenizer.save_to_preset(os.path.join(directory, TOKENIZER))
    vocabulary = tokenizer_fingerprint(directory)
    dtype = preparation.dtype(tokenizer)
    prefix = preparation.document_prefix(tokenizer) if preparation.document_prefix else None
    fingerprints = []
    writer = ShardWriter(directory, dtype, shard_tokens)
    start = time.perf_counter()
    try:
        _tokenize(preparation, tokenizer, paths, fingerprints, writer, prefix)
        shards = writer.close()
    except BaseException:
        writer.abort()
        raise
    seconds = time.perf_counter() - start
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "kzoo_version": __version__, "family": record.name,
        "tokenizer": TOKENIZER, "tokenizer_sha256": vocabulary,
        "vocabulary_size": tokenizer.vocabulary_size(),
        "dtype": dtype, "units": preparation.what,
        "num_tokens": sum(s["num_tokens"] for s in shards),
        "num_units": sum(s["num_units"] for s in shards),
        "num_documents": sum(s["num_documents"] for s in shards),
        "shards": shards, "corpus": fingerprints, "options": recorded,
        "vocabulary_sample": {"stride": stride},
        "tokenize_seconds": round(seconds, 3),
    }
    with open(os.path.join(directory, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    if verbose:
        mb = sum(f["bytes"] for f in fingerprints) / 1e6
        print(f"{record.title}: tokenized {mb:,.1f} MB in {seconds:.1f} s "
              f"({mb / max(seconds, 1e-9):,.1f} MB/s)", flush=True)
    return manifest


def _tokenize(preparation, tokenizer, paths, fingerprints, writer, prefix):
    """The second pass: batches of units tokenized in a thread (the
    ``tokenizers`` library releases the GIL and uses every core) while the
    next batch is read."""
    import numpy as np

    from kzoo.preprocessing.engine import engine_scope
    from kzoo.preprocessing.preprocessing_layer import numpy_outputs

    def encode(batch):
        texts = [u for units in batch for u in units]
        with engine_scope("python"), numpy_outputs():
            ids = preparation.encode(tokenizer, texts)
        return batch, [np.asarray(row) for row in ids]

    def write(result):
        batch, ids = result
        i = 0
        for units in batch:
            document = ids[i:i + len(units)]
            i += len(units)
            if prefix:
                document = list(document)
                document[0] = np.concatenate([np.asarray(prefix, document[0].dtype),
                                              document[0]])
            writer.add(document)

    documents = _units_of(preparation, corpus_files.documents(paths, fingerprints))
    with concurrent.futures.ThreadPoolExecutor(1, "kzoo-prepare") as pool:
        pending, batch, count = None, [], 0
        for units in documents:
            batch.append(units)
            count += sum(len(u) for u in units)
            if count >= _BATCH_CHARACTERS:
                future = pool.submit(encode, batch)
                if pending is not None:
                    write(pending.result())
                pending, batch, count = future, [], 0
        if pending is not None:
            write(pending.result())
        if batch:
            write(encode(batch))


def check_corpus_unchanged(shards):
    """Raises a ``ShardError`` naming each corpus file that changed since
    ``shards`` were prepared from it (files no longer there are not
    checked)."""
    changed = corpus_files.changed_files(shards.manifest["corpus"])
    if changed:
        lines = "; ".join(f"{path} ({why})" for path, why in changed)
        raise ShardError(
            f"the corpus changed since {shards.directory} was prepared: {lines}. "
            "Prepare it again (`kzoo prepare ...` into this folder, or a new one).")
