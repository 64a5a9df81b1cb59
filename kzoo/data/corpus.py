"""Corpus files read as a stream: plain or gzip text, documents of lines.

A corpus is one or more UTF-8 text files, plain or gzip-compressed (told by
their first bytes, not their names). A blank line ends a document, and so
does a file's end: BERT's pretraining format (a sentence a line, a blank line
between documents) and plain paragraphs (a paragraph a line) both read as
documents of lines. Nothing here holds more than one document at a time.
"""

import gzip
import hashlib
import os
import re

#: how much of each file is looked at before anything else is read
_HEAD_BYTES = 64 << 10
#: the longest line a corpus may hold
MAX_LINE_BYTES = 8 << 20
_GZIP_MAGIC = b"\x1f\x8b"
# A sentence ends at ". ", "? " or "! " (a closing quote or bracket may
# follow the mark) when the next one starts with a capital, a digit or an
# opening quote: "Mr. Darcy" stays whole less often than with ". " alone,
# "e.g. the" stays whole.
_SENTENCE_END = re.compile(r"(?<=[.?!])(?:[\"'\u201d\u2019)\]]*)\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")


class CorpusError(ValueError):
    """A corpus file that cannot be prepared: the message names the file and
    the fix."""


def split_sentences(line):
    """The sentences of one line of text (a paragraph): split after ``.``,
    ``?`` or ``!`` (and a closing quote) where the next one starts with a
    capital, a digit or an opening quote.

    Example:
    >>> split_sentences('It is a truth. "Is it?" she asked. e.g. this one')
    ['It is a truth.', '"Is it?" she asked. e.g. this one']
    """
    parts = []
    start = 0
    for match in _SENTENCE_END.finditer(line):
        end = match.start() + len(match.group(0).rstrip())
        piece = line[start:end].strip()
        if piece:
            parts.append(piece)
        start = match.end()
    piece = line[start:].strip()
    if piece:
        parts.append(piece)
    return parts


def _is_gzip(path):
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def check_files(paths):
    """Checks each corpus file before anything is read in full: it exists,
    holds text, and (read from its first 64 KiB) is UTF-8 text, not a binary
    file. Raises a ``CorpusError`` naming the file and the fix.

    Returns:
        The files' absolute paths.
    """
    if not paths:
        raise CorpusError("no corpus file given: pass one or more text files.")
    checked = []
    for path in paths:
        path = os.fspath(path)
        if not os.path.exists(path):
            raise CorpusError(f"the corpus file {path} does not exist.")
        if not os.path.isfile(path):
            raise CorpusError(f"the corpus file {path} is not a file (a folder?): "
                              "pass the text files themselves.")
        if os.path.getsize(path) == 0:
            raise CorpusError(f"the corpus file {path} is empty: pass a file "
                              "of text.")
        try:
            opener = gzip.open if _is_gzip(path) else open
            with opener(path, "rb") as f:
                head = f.read(_HEAD_BYTES)
        except (OSError, EOFError) as exc:
            raise CorpusError(f"the corpus file {path} cannot be read as gzip "
                              f"({exc}): is it cut short? Compress it again or "
                              "pass the plain text.") from None
        _check_text(path, head)
        checked.append(os.path.abspath(path))
    return checked


def _check_text(path, head):
    if not head.strip():
        raise CorpusError(f"the corpus file {path} holds no text (only blank "
                          "space): pass a file of text.")
    if b"\x00" in head:
        raise CorpusError(
            f"the corpus file {path} is binary (it has NUL bytes): a corpus is "
            "UTF-8 text, plain or gzip-compressed; extract the text first.")
    text = head.decode("utf-8", errors="replace")
    if len(head) == _HEAD_BYTES:  # a multi-byte character may be cut at the end
        text = text[:-1]
    if text.count("\ufffd") > max(8, len(text) // 100):
        raise CorpusError(
            f"the corpus file {path} is not UTF-8 text (over 1% of its first "
            f"{len(head):,} bytes are not UTF-8): convert it (e.g. `iconv -f "
            "latin1 -t utf-8`) or extract its text.")


class _Hashing:
    """A binary file that hashes every byte read from it."""

    def __init__(self, f):
        self.f = f
        self.hash = hashlib.sha256()
        self.bytes = 0

    def read(self, size=-1):
        data = self.f.read(size)
        self.hash.update(data)
        self.bytes += len(data)
        return data


def raw_lines(path, fingerprint=None):
    """The lines of one corpus file (``str``, invalid UTF-8 replaced),
    decompressed when it is gzip. A line over ``MAX_LINE_BYTES`` raises a
    ``CorpusError``. With ``fingerprint`` (a dict), the file's size and
    SHA-256 as stored on disk are put in it once the file is read."""
    with open(path, "rb") as raw:
        compressed = _is_gzip(path)
        hashing = _Hashing(raw) if compressed else None
        f = gzip.GzipFile(fileobj=hashing) if compressed else raw
        digest, size, number = hashlib.sha256(), 0, 0
        while True:
            try:
                line = f.readline(MAX_LINE_BYTES + 1)
            except (OSError, EOFError) as exc:
                raise CorpusError(f"the corpus file {path} cannot be read to its "
                                  f"end ({exc}): is the gzip file cut short?") from None
            if not line:
                break
            number += 1
            if not compressed:
                digest.update(line)
                size += len(line)
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                raise CorpusError(
                    f"{path} line {number} is longer than {MAX_LINE_BYTES:,} bytes: "
                    "put a sentence or paragraph a line (is it the right file?).")
            yield line.decode("utf-8", errors="replace")
        if compressed:
            while hashing.read(1 << 20):  # bytes after the gzip stream's end
                pass
            digest, size = hashing.hash, hashing.bytes
        if fingerprint is not None:
            fingerprint.update(bytes=size, sha256=digest.hexdigest())


def documents(paths, fingerprints=None):
    """The corpus as a stream of documents, each a list of its non-empty
    lines (stripped): a blank line or a file's end closes one.

    Args:
        paths: the corpus files (checked by ``check_files`` first).
        fingerprints: a list or None: one dict per file (``path``, ``bytes``,
            ``sha256``, ``mtime_ns``) is appended as each file is read.

    Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> _ = open(path, "w").write("One. Two.\\nThree.\\n\\nA new one.\\n")
    >>> list(documents([path]))
    [['One. Two.', 'Three.'], ['A new one.']]
    """
    for path in paths:
        stat = os.stat(path)
        fingerprint = {"path": os.path.abspath(path), "mtime_ns": stat.st_mtime_ns}
        document = []
        for line in raw_lines(path, fingerprint):
            line = line.strip()
            if line:
                document.append(line)
            elif document:
                yield document
                document = []
        if document:
            yield document
        if fingerprints is not None:
            fingerprints.append(fingerprint)


def total_bytes(paths):
    """The corpus files' sizes on disk, summed."""
    return sum(os.path.getsize(p) for p in paths)


def changed_files(fingerprints):
    """The recorded corpus files that changed since they were read: those
    whose size differs, or whose modification time differs and whose
    SHA-256 does too. Files no longer there are not counted (prepared shards
    hold all they need). Returns ``[(path, why)]``."""
    changed = []
    for record in fingerprints:
        path = record["path"]
        if not os.path.isfile(path):
            continue
        stat = os.stat(path)
        if stat.st_size != record["bytes"]:
            changed.append((path, f"{record['bytes']:,} bytes then, "
                                  f"{stat.st_size:,} now"))
        elif stat.st_mtime_ns != record.get("mtime_ns") and (
                _sha256(path) != record["sha256"]):
            changed.append((path, "its contents differ (SHA-256)"))
    return changed


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
