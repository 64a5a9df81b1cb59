"""Broken data files for ``kzoo finetune`` / ``kzoo pretrain`` and broken
word-vector files: refused at the line, fast, without reading a huge line
into memory or allocating what a lying header announces."""

import resource
import time

import pytest

from kzoo.models.word2vec.word_vectors import WordVectors
from kzoo.training import data_files

SECONDS = 1.0
MAX_RSS_GROWTH_BYTES = 1 << 30
_GIGABYTE = 1 << 30


def _sparse_line(header):
    """``header`` then one 1 GB line of NUL bytes (a sparse file: neither
    the disk nor the test holds the gigabyte)."""
    def write(path):
        with open(path, "wb") as f:
            f.write(header)
            f.truncate(len(header) + _GIGABYTE)
    return write


def _bytes(data):
    def write(path):
        path.write_bytes(data)
    return write


# (case, file name, content, reader, message fragments)
CASES = [
    ("CSV in Latin-1", "train.csv", _bytes(b"text,label\ncaf\xe9,1\n"),
     data_files.read_labeled_file, ["train.csv line 2", "UTF-8", "iconv"]),
    ("JSONL invalid UTF-8", "train.jsonl", _bytes(b'{"text": "a", "label": 0}\n\xff\xfe\n'),
     data_files.read_labeled_file, ["train.jsonl line 2", "UTF-8"]),
    ("JSONL 1 GB line", "train.jsonl", _sparse_line(b'{"text": "a", "label": 0}\n'),
     data_files.read_labeled_file, ["train.jsonl line 2", "longer than"]),
    ("CSV 1 GB line", "train.csv", _sparse_line(b"text,label\n"),
     data_files.read_labeled_file, ["train.csv line 2", "longer than"]),
    ("TSV scores 1 GB line", "sts.tsv", _sparse_line(b"text\ttext_pair\tlabel\n"),
     data_files.read_scored_file, ["sts.tsv line 2", "longer than"]),
    ("CSV field past the csv limit", "train.csv",
     _bytes(b'text,label\n"' + b"a" * 200_000 + b'",1\n'),
     data_files.read_labeled_file, ["train.csv line", "cannot be read as CSV"]),
    ("CoNLL invalid UTF-8", "ner.conll", _bytes(b"Ada B-PER\nr\xfcns O\n"),
     data_files.read_tagged_file, ["ner.conll line 2", "UTF-8"]),
    ("corpus 1 GB line", "corpus.txt", _sparse_line(b"One sentence.\n"),
     lambda path: data_files.read_documents([path]), ["corpus.txt line 2", "longer than"]),
    ("word2vec binary header of 10^12 words", "vectors.bin",
     _bytes(b"1000000000000 300\nking " + b"\0" * 1200),
     lambda path: WordVectors.load_word2vec_format(path, binary=True),
     ["vectors.bin: truncated at entry 2 of 1000000000000"]),
    ("word2vec header with a negative count", "vectors.txt", _bytes(b"-5 3\nking 1 2 3\n"),
     WordVectors.load_word2vec_format, ["vectors.txt, line 1", "at least 0"]),
    ("word2vec text 1 GB line", "vectors.txt", _sparse_line(b"2 3\n"),
     WordVectors.load_word2vec_format, ["vectors.txt, line 2", "longer than"]),
    ("GloVe 1 GB line", "glove.txt", _sparse_line(b""),
     WordVectors.load_glove, ["glove.txt, line 1", "longer than"]),
    ("word2vec 1 GB header", "vectors.bin", _sparse_line(b""),
     lambda path: WordVectors.load_word2vec_format(path, binary=True),
     ["vectors.bin, line 1", "expected the header"]),
]


@pytest.mark.parametrize("case,name,write,read,fragments", CASES,
                         ids=[c[0] for c in CASES])
def test_broken_data_file_is_refused_at_its_line(tmp_path, case, name, write, read,
                                                 fragments):
    path = tmp_path / name
    write(path)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.process_time()  # CPU time: the test machines are shared
    with pytest.raises(ValueError) as info:
        read(str(path))
    elapsed = time.process_time() - start
    for fragment in fragments:
        assert fragment in str(info.value), f"{case}: {fragment!r} not in {info.value}"
    assert elapsed < SECONDS, f"{case}: refused after {elapsed:.2f} s"
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert rss_after - rss_before < MAX_RSS_GROWTH_BYTES


def test_corpus_with_invalid_utf8_reads_with_replacement(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"caf\xe9 noir.\n\nDeux.\n")
    assert data_files.read_documents([str(path)]) == [["caf\ufffd noir."], ["Deux."]]
