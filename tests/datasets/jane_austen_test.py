import gzip
import importlib
import os
import struct
import zlib

import pytest

import kzoo
from kzoo.datasets.r_serialization import read_lazy_load, unserialize

# the module, not the function kzoo.datasets exports under the same name
module = importlib.import_module("kzoo.datasets.austen")

needs_package = pytest.mark.skipif(
    not os.path.exists(module.DATA + ".rdx"),
    reason="Debian's r-cran-janeaustenr is not installed "
           "(apt-get download r-cran-janeaustenr && dpkg -x r-cran-janeaustenr_*.deb /)")


def _int(v):
    return struct.pack(">i", v)


def _char(s):
    return _int(0x00040009) + _int(len(s)) + s.encode()


def _strsxp(values, names=None):
    flags = 16 | (1 << 9 if names else 0)
    out = _int(flags) + _int(len(values)) + b"".join(_char(v) for v in values)
    if names:  # attribute pair list: tag "names" (a symbol), a STRSXP, then NIL
        out += _int(2 | (1 << 10)) + _int(1) + _char("names") + _strsxp(names) + _int(254)
    return out


def _serialize(body, version=3):
    header = b"X\n" + _int(version) + _int(0x040201) + _int(0x030500)
    if version == 3:
        header += _int(5) + b"UTF-8"
    return header + body


def test_reads_r_vectors_written_by_the_format_spec():
    body = (_int(19 | (1 << 9)) + _int(3)
            + _strsxp(["a", "b"])
            + _int(13) + _int(3) + _int(1) + _int(-(2 ** 31)) + _int(7)
            + _int(14) + _int(1) + struct.pack(">d", 2.5)
            + _int(2 | (1 << 10)) + _int(1) + _char("names")
            + _strsxp(["words", "counts", "mean"]) + _int(254))
    for version in (2, 3):
        value = unserialize(_serialize(body, version))
        assert value.as_dict() == {"words": ["a", "b"], "counts": [1, None, 7],
                                   "mean": [2.5]}


def test_reads_a_lazy_load_database(tmp_path):
    stem = str(tmp_path / "Rdata")
    blobs = {"first": _serialize(_strsxp(["x", "y"])), "second": _serialize(_strsxp(["z"]))}
    offsets, rdb = {}, b""
    for name, blob in blobs.items():
        chunk = struct.pack(">I", len(blob)) + zlib.compress(blob)
        offsets[name] = (len(rdb), len(chunk))
        rdb += chunk
    (tmp_path / "Rdata.rdb").write_bytes(rdb)
    variables = (_int(19 | (1 << 9)) + _int(2)
                 + b"".join(_int(13) + _int(2) + _int(o) + _int(n)
                            for o, n in offsets.values())
                 + _int(2 | (1 << 10)) + _int(1) + _char("names")
                 + _strsxp(list(offsets)) + _int(254))
    index = (_int(19 | (1 << 9)) + _int(2) + variables + _int(10) + _int(1) + _int(1)
             + _int(2 | (1 << 10)) + _int(1) + _char("names")
             + _strsxp(["variables", "compressed"]) + _int(254))
    (tmp_path / "Rdata.rdx").write_bytes(gzip.compress(_serialize(index)))
    assert read_lazy_load(stem) == {"first": ["x", "y"], "second": ["z"]}
    with pytest.raises(KeyError, match="holds no"):
        read_lazy_load(stem, ["third"])


def test_missing_package_names_the_install_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt install r-cran-janeaustenr"):
        kzoo.datasets.jane_austen(str(tmp_path / "Rdata"))


@needs_package
def test_six_novels_as_paragraphs():
    novels = kzoo.datasets.jane_austen()
    assert list(novels) == ["Sense & Sensibility", "Pride & Prejudice", "Mansfield Park",
                            "Emma", "Northanger Abbey", "Persuasion"]
    emma = novels["Emma"]
    assert emma[0] == "EMMA"
    assert any(p.startswith("Emma Woodhouse, handsome, clever, and rich") for p in emma)
    assert any(p.startswith("It is a truth universally acknowledged, that a single man "
                            "in possession of a good fortune, must be in want of a wife.")
               for p in novels["Pride & Prejudice"])
    words = sum(len(p.split()) for ps in novels.values() for p in ps)
    assert 700_000 < words < 740_000  # ~725k by tidytext's tokens
    assert all(p and "\n" not in p and p == p.strip() for ps in novels.values() for p in ps)


@needs_package
def test_corpus_file_is_a_paragraph_a_line(tmp_path):
    path = kzoo.datasets.write_jane_austen(str(tmp_path / "austen.txt"))
    text = open(path, encoding="utf-8").read()
    paragraphs = [p for ps in kzoo.datasets.jane_austen().values() for p in ps]
    assert text.split("\n\n")[:-1] == paragraphs and text.endswith("\n\n")
    assert module.main([str(tmp_path / "again.txt")]) == 0
    assert open(tmp_path / "again.txt", encoding="utf-8").read() == text
