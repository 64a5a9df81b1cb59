"""Token shards on disk: what ``kzoo prepare`` writes and training reads.

A prepared folder holds::

    manifest.json                 format, kzoo version, family, tokenizer,
                                  sizes, the corpus files' checksums, options
    tokenizer/                    the tokenizer (config.json + assets)
    shard-00000.tokens            token ids, one after another (uint16 where
                                  the vocabulary fits, else uint32; uint8
                                  for characters)
    shard-00000.units.npy         int64 [units + 1]: where each unit (a
                                  sentence or a line) starts in the tokens
    shard-00000.documents.npy     int64 [documents + 1]: where each document
                                  starts, in units
    ...

A document never spans two shards. ``TokenShards`` reads a folder without
holding its tokens: the offsets are memory-mapped and tokens are read with
``pread`` where a batch needs them, so resident memory does not grow with
the corpus.
"""

import json
import os

import numpy as np

FORMAT = "kzoo-token-shards"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
TOKENIZER = "tokenizer"


class ShardError(ValueError):
    """A prepared folder that cannot be read: the message names the file and
    the fix."""


def shard_names(index):
    """The three file names of shard ``index``."""
    stem = f"shard-{index:05d}"
    return {"tokens": f"{stem}.tokens", "units": f"{stem}.units.npy",
            "documents": f"{stem}.documents.npy"}


def ids_dtype(vocabulary_size):
    """The smallest unsigned dtype holding every id of a vocabulary."""
    if vocabulary_size <= 1 << 8:
        return "uint8"
    if vocabulary_size <= 1 << 16:
        return "uint16"
    return "uint32"


class ShardWriter:
    """Writes documents of token ids into shards of about ``shard_tokens``
    tokens each, in ``directory``.

    ``add(units)`` takes one document (a list of 1-D id arrays, one per
    unit); ``close()`` writes the last shard and returns the shards' records
    for the manifest.
    """

    def __init__(self, directory, dtype, shard_tokens=1 << 25):
        self.directory = directory
        self.dtype = np.dtype(dtype)
        self.shard_tokens = int(shard_tokens)
        self.records = []
        self._open()

    def _open(self):
        self.names = shard_names(len(self.records))
        self.file = open(os.path.join(self.directory, self.names["tokens"]), "wb")
        self.unit_starts = [0]
        self.document_starts = [0]
        self.tokens = 0

    def add(self, units):
        """Appends one document (a list of 1-D integer arrays)."""
        if not units:
            return
        if self.tokens >= self.shard_tokens:
            self._finish()
            self._open()
        lengths = np.fromiter((len(u) for u in units), np.int64, len(units))
        flat = np.concatenate(units).astype(self.dtype, copy=False)
        self.file.write(flat.tobytes())
        ends = self.tokens + np.cumsum(lengths)
        self.unit_starts.extend(ends.tolist())
        self.tokens = int(ends[-1]) if len(ends) else self.tokens
        self.document_starts.append(len(self.unit_starts) - 1)

    def _finish(self):
        self.file.close()
        units = np.asarray(self.unit_starts, np.int64)
        documents = np.asarray(self.document_starts, np.int64)
        np.save(os.path.join(self.directory, self.names["units"]), units)
        np.save(os.path.join(self.directory, self.names["documents"]), documents)
        self.records.append({**self.names, "num_tokens": self.tokens,
                             "num_units": len(units) - 1,
                             "num_documents": len(documents) - 1})

    def close(self):
        """Writes the last shard; returns the shards' records."""
        if self.tokens or not self.records:
            self._finish()
        else:
            self.file.close()
            os.remove(os.path.join(self.directory, self.names["tokens"]))
        return self.records

    def abort(self):
        if not self.file.closed:
            self.file.close()


def tokenizer_fingerprint(directory):
    """The SHA-256 of the files of a prepared folder's ``tokenizer/`` (its
    vocabulary): what the shards' ids mean."""
    import hashlib

    digest = hashlib.sha256()
    root = os.path.join(directory, TOKENIZER)
    for folder, subfolders, files in sorted(os.walk(root)):
        subfolders.sort()
        for name in sorted(files):
            if name in ("metadata.json", "README.md"):  # versions, not the vocabulary
                continue
            path = os.path.join(folder, name)
            digest.update(os.path.relpath(path, root).encode() + b"\0")
            with open(path, "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()


def read_manifest(directory):
    """The manifest of a prepared folder, checked: the format and kzoo
    version that wrote it. A ``ShardError`` names what is wrong."""
    from kzoo.version import __version__

    path = os.path.join(directory, MANIFEST)
    if not os.path.isdir(directory):
        raise ShardError(f"{directory} is not a folder: pass the folder that "
                         "`kzoo prepare` wrote.")
    if not os.path.isfile(path):
        raise ShardError(f"{directory} has no {MANIFEST}: it was not prepared, "
                         "or preparing it did not finish. Run `kzoo prepare "
                         f"FAMILY --corpus FILES --output {directory}`.")
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as exc:
        raise ShardError(f"{path} cannot be read ({exc}): prepare the corpus "
                         "again.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ShardError(f"{path} is not a kzoo token-shard manifest: pass the "
                         "folder that `kzoo prepare` wrote.")
    if manifest.get("format_version") != FORMAT_VERSION or (
            manifest.get("kzoo_version") != __version__):
        raise ShardError(
            f"{path} was written by kzoo {manifest.get('kzoo_version')} (shard "
            f"format {manifest.get('format_version')}); this is kzoo {__version__} "
            f"(format {FORMAT_VERSION}). Prepare the corpus again with this "
            "version: `kzoo prepare ...`.")
    return manifest


class TokenShards:
    """A prepared folder, read where a batch needs it.

    Units (sentences or lines, as the family prepared them) and documents
    are numbered across the shards in corpus order.

    Args:
        directory: the folder ``kzoo prepare`` wrote.

    Attributes:
        manifest: the manifest (a dict).
        family: the family it was prepared for.
        num_tokens, num_units, num_documents: corpus totals.
    """

    def __init__(self, directory):
        self.directory = os.fspath(directory)
        self.manifest = read_manifest(self.directory)
        self.family = self.manifest["family"]
        self.dtype = np.dtype(self.manifest["dtype"])
        records = self.manifest["shards"]
        if not records:
            raise ShardError(f"{self.directory}/{MANIFEST} lists no shard: "
                             "prepare the corpus again.")
        self._units, self._documents, self._files = [], [], []
        for record in records:
            self._check_sizes(record)
            units = np.load(self._path(record["units"]), mmap_mode="r")
            documents = np.load(self._path(record["documents"]), mmap_mode="r")
            self._units.append(units)
            self._documents.append(documents)
            self._files.append(None)
        counts = lambda key: np.cumsum([0] + [r[key] for r in records])  # noqa: E731
        self.token_starts = counts("num_tokens")
        self.unit_starts = counts("num_units")
        self.document_starts = counts("num_documents")
        self.num_tokens = int(self.token_starts[-1])
        self.num_units = int(self.unit_starts[-1])
        self.num_documents = int(self.document_starts[-1])

    def _path(self, name):
        return os.path.join(self.directory, name)

    def _check_sizes(self, record):
        """Each shard's files are there and as long as the manifest says: a
        shard cut short (a copy that stopped, a full disk) is named."""
        fix = ("copy the folder again, or prepare the corpus again "
               "(`kzoo prepare ...`).")
        for key in ("tokens", "units", "documents"):
            if not os.path.isfile(self._path(record[key])):
                raise ShardError(f"{self._path(record[key])} is missing: {fix}")
        size = os.path.getsize(self._path(record["tokens"]))
        expected = record["num_tokens"] * self.dtype.itemsize
        if size != expected:
            raise ShardError(f"{self._path(record['tokens'])} holds {size:,} bytes, "
                             f"the manifest says {expected:,}: the shard is cut "
                             f"short or was changed; {fix}")
        for key, count in (("units", "num_units"), ("documents", "num_documents")):
            try:
                array = np.load(self._path(record[key]), mmap_mode="r")
            except (OSError, ValueError) as exc:
                raise ShardError(f"{self._path(record[key])} cannot be read "
                                 f"({exc}): {fix}") from None
            if array.shape != (record[count] + 1,):
                raise ShardError(f"{self._path(record[key])} has {array.shape[0] - 1:,} "
                                 f"entries, the manifest says {record[count]:,}: {fix}")

    def tokenizer(self):
        """The tokenizer the shards were made with (a ``ShardError`` when
        its files are not those the shards were made with)."""
        from kzoo.tokenizers import Tokenizer

        if tokenizer_fingerprint(self.directory) != self.manifest.get("tokenizer_sha256"):
            raise ShardError(
                f"{self._path(TOKENIZER)} is not the vocabulary {self.directory}'s "
                "shards were made with (its files changed): prepare the corpus again.")
        return Tokenizer.from_preset(self._path(TOKENIZER))

    def _read(self, shard, start, stop):
        """Tokens ``[start, stop)`` of one shard, as a new array."""
        fd = self._files[shard]
        if fd is None:
            fd = self._files[shard] = os.open(
                self._path(self.manifest["shards"][shard]["tokens"]), os.O_RDONLY)
        size = self.dtype.itemsize
        data = os.pread(fd, (stop - start) * size, start * size)
        return np.frombuffer(data, self.dtype)

    def tokens(self, start, stop):
        """The corpus's tokens ``[start, stop)`` (across shards)."""
        shard = int(np.searchsorted(self.token_starts, start, side="right")) - 1
        pieces = []
        while start < stop:
            local = start - int(self.token_starts[shard])
            end = min(stop, int(self.token_starts[shard + 1]))
            pieces.append(self._read(shard, local, end - int(self.token_starts[shard])))
            start, shard = end, shard + 1
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    def shard_of_unit(self, unit):
        """``(shard, local index)`` of a global unit index."""
        shard = int(np.searchsorted(self.unit_starts, unit, side="right")) - 1
        return shard, int(unit - self.unit_starts[shard])

    def unit(self, unit):
        """The ids of one unit (global index)."""
        shard, local = self.shard_of_unit(unit)
        starts = self._units[shard]
        return self._read(shard, int(starts[local]), int(starts[local + 1]))

    def document_bounds(self, unit):
        """``(first, end)``: the global unit range of the document holding
        ``unit``."""
        shard, local = self.shard_of_unit(unit)
        documents = self._documents[shard]
        d = int(np.searchsorted(documents, local, side="right")) - 1
        offset = int(self.unit_starts[shard])
        return offset + int(documents[d]), offset + int(documents[d + 1])

    def last_units(self):
        """The global index of each document's last unit, in order."""
        return np.concatenate([
            documents[1:] - 1 + offset
            for documents, offset in zip(self._documents, self.unit_starts[:-1])])

    def unit_chunks(self, size=4096):
        """The units in corpus order, ``size`` at a time, as ``(flat ids,
        lengths)``: a streaming pass that reads each shard once."""
        for shard, starts in enumerate(self._units):
            count = len(starts) - 1
            for first in range(0, count, size):
                last = min(first + size, count)
                begin, end = int(starts[first]), int(starts[last])
                ids = self._read(shard, begin, end)
                yield ids, np.diff(np.asarray(starts[first:last + 1]))

    def close(self):
        for i, fd in enumerate(self._files):
            if fd is not None:
                os.close(fd)
                self._files[i] = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass

    def __repr__(self):
        return (f"TokenShards({self.directory!r}: {self.family}, "
                f"{self.num_tokens:,} tokens, {self.num_units:,} units, "
                f"{self.num_documents:,} documents in {len(self._units)} shards)")
