"""Corpus files as a stream: plain and gzip, documents, checks, fingerprints."""

import gzip
import hashlib
import os

import pytest

from kzoo.data import corpus

pytestmark = pytest.mark.without_tensorflow

TEXT = "One. Two.\nThree.\n\n\nA new one.\n  \nLast line without end"


def test_documents_of_plain_and_gzip_files_are_equal(tmp_path):
    plain = tmp_path / "a.txt"
    plain.write_text(TEXT, encoding="utf-8")
    packed = tmp_path / "b.data"  # told by its bytes, not its name
    packed.write_bytes(gzip.compress(TEXT.encode()))
    expected = [["One. Two.", "Three."], ["A new one."], ["Last line without end"]]
    assert list(corpus.documents([str(plain)])) == expected
    prints = []
    assert list(corpus.documents([str(packed)], prints)) == expected
    # The checksum is of the file as it is on disk.
    assert prints[0]["sha256"] == hashlib.sha256(packed.read_bytes()).hexdigest()
    assert prints[0]["bytes"] == os.path.getsize(packed)


def test_a_document_ends_at_each_file_end(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("x\ny")
    b.write_text("z\n")
    prints = []
    assert list(corpus.documents([str(a), str(b)], prints)) == [["x", "y"], ["z"]]
    assert [p["sha256"] for p in prints] == [
        hashlib.sha256(p.read_bytes()).hexdigest() for p in (a, b)]


@pytest.mark.parametrize("line, expected", [
    ("It is a truth. It is.", ["It is a truth.", "It is."]),
    ('"Is it?" she asked. "Yes!" He left.', ['"Is it?" she asked.', '"Yes!"', "He left."]),
    ("e.g. this one stays. and this too", ["e.g. this one stays. and this too"]),
    ("In 1811. 1812 came.", ["In 1811.", "1812 came."]),
    ("  ", []),
])
def test_split_sentences(line, expected):
    assert corpus.split_sentences(line) == expected


def _error(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(corpus.CorpusError) as info:
        corpus.check_files([str(path)])
    assert str(path) in str(info.value)
    return str(info.value)


def test_bad_files_are_named_with_the_fix(tmp_path):
    with pytest.raises(corpus.CorpusError, match="does not exist"):
        corpus.check_files([str(tmp_path / "missing.txt")])
    with pytest.raises(corpus.CorpusError, match="not a file"):
        corpus.check_files([str(tmp_path)])
    assert "is empty" in _error(tmp_path, "empty.txt", b"")
    assert "no text" in _error(tmp_path, "blank.txt", b" \n\n \n")
    assert "binary" in _error(tmp_path, "model.bin", bytes(range(256)) * 10)
    assert "iconv" in _error(tmp_path, "latin1.txt", "café à déjà ".encode("latin-1") * 200)
    cut = gzip.compress(b"some text\n" * 10000)[:60]
    assert "gzip" in _error(tmp_path, "cut.gz", cut)


def test_check_files_reads_only_the_head(tmp_path, monkeypatch):
    path = tmp_path / "big.txt"
    path.write_text("word " * 100_000)
    sizes = []
    real_open = open

    def spy(*args, **kwargs):
        f = real_open(*args, **kwargs)
        read = f.read
        f = _Reader(f, read, sizes)
        return f

    monkeypatch.setattr("builtins.open", spy)
    corpus.check_files([str(path)])
    assert sizes and max(sizes) <= 64 << 10


class _Reader:
    def __init__(self, f, read, sizes):
        self.f, self._read, self.sizes = f, read, sizes

    def read(self, size=-1):
        self.sizes.append(size if size >= 0 else 1 << 40)
        return self._read(size)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def test_changed_files(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("one line\n")
    prints = []
    list(corpus.documents([str(path)], prints))
    assert corpus.changed_files(prints) == []
    os.utime(path, ns=(1, 1))  # touched, same contents: unchanged
    assert corpus.changed_files(prints) == []
    path.write_text("one lime\n")  # same size, other contents
    os.utime(path, ns=(2, 2))
    assert [p for p, _ in corpus.changed_files(prints)] == [str(path)]
    path.write_text("a longer line\n")
    assert "bytes then" in corpus.changed_files(prints)[0][1]
    path.unlink()  # gone: the shards hold what they need
    assert corpus.changed_files(prints) == []
