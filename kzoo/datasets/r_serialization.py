"""A reader of R's serialization format (versions 2 and 3, XDR), enough for
the data R packages ship: lists, character, integer, logical and double
vectors, attributes and pair lists. Also reads a lazy-load database
(``Rdata.rdx`` + ``Rdata.rdb``), the form of an R package's ``data/``.

Reference: R Internals, "Serialization Formats", and ``src/main/serialize.c``.
"""

import bz2
import gzip
import lzma
import os
import struct
import zlib

NA_INTEGER = -(2 ** 31)
_NIL, _REF, _GLOBALENV, _EMPTYENV, _BASEENV = 254, 255, 253, 242, 241
_UNBOUND, _MISSINGARG, _BASENAMESPACE = 252, 251, 250
_SYM, _LIST, _LANG, _CHAR, _LGL, _INT, _REAL, _STR, _VEC, _EXPR = (
    1, 2, 6, 9, 10, 13, 14, 16, 19, 20)
_ATTRLIST, _ATTRLANG = 239, 240


class RList(list):
    """An R list or atomic vector read as a Python list, with R's
    attributes (``names``, ``class``, ``row.names``...) in ``attributes``."""

    def __init__(self, values=(), attributes=None):
        super().__init__(values)
        self.attributes = attributes or {}

    def names(self):
        """The ``names`` attribute, or None."""
        return self.attributes.get("names")

    def as_dict(self):
        """``{name: value}`` by the ``names`` attribute."""
        names = self.names()
        if names is None:
            raise ValueError("This R object has no names.")
        return dict(zip(names, self))


class _Reader:
    def __init__(self, data):
        self.data, self.pos, self.refs = data, 0, []

    def int(self):
        (value,) = struct.unpack_from(">i", self.data, self.pos)
        self.pos += 4
        return value

    def bytes(self, n):
        value = self.data[self.pos:self.pos + n]
        self.pos += n
        return value

    def length(self):
        n = self.int()
        if n == -1:
            upper, lower = self.int(), self.int()
            n = (upper << 32) + lower
        return n

    def header(self):
        if self.bytes(2) != b"X\n":
            raise ValueError("Not an R serialization in XDR format (no 'X\\n' header).")
        version = self.int()
        self.int(), self.int()  # writer's R version, minimal reader version
        if version == 3:
            self.bytes(self.int())  # native encoding
        elif version != 2:
            raise ValueError(f"R serialization version {version} is not supported (2 or 3).")

    def item(self):
        flags = self.int()
        kind = flags & 0xFF
        has_attr, has_tag = bool(flags & (1 << 9)), bool(flags & (1 << 10))
        if kind in (_NIL, _GLOBALENV, _EMPTYENV, _BASEENV, _UNBOUND, _MISSINGARG,
                    _BASENAMESPACE):
            return None
        if kind == _REF:
            index = flags >> 8
            return self.refs[(index if index else self.int()) - 1]
        if kind == _SYM:
            name = self.item()
            self.refs.append(name)
            return name
        if kind in (_LIST, _LANG, _ATTRLIST, _ATTRLANG):
            return self._pairlist(has_attr, has_tag)
        if kind == _CHAR:
            n = self.int()
            return None if n == -1 else self.bytes(n).decode("utf-8", "replace")
        if kind in (_LGL, _INT):
            n = self.length()
            values = struct.unpack_from(f">{n}i", self.data, self.pos)
            self.pos += 4 * n
            values = [None if v == NA_INTEGER else (bool(v) if kind == _LGL else v)
                      for v in values]
        elif kind == _REAL:
            n = self.length()
            values = list(struct.unpack_from(f">{n}d", self.data, self.pos))
            self.pos += 8 * n
        elif kind in (_STR, _VEC, _EXPR):
            values = [self.item() for _ in range(self.length())]
        else:
            raise ValueError(f"R object of SEXP type {kind} is not supported by this reader.")
        attributes = self._attributes() if has_attr else {}
        return RList(values, attributes)

    def _pairlist(self, has_attr, has_tag):
        """A pair list as ``{tag: value}`` (position numbers where untagged)."""
        items = {}
        while True:
            if has_attr:
                self.item()
            tag = self.item() if has_tag else len(items)
            items[tag] = self.item()
            flags = self.int()
            kind = flags & 0xFF
            if kind == _NIL:
                return items
            if kind not in (_LIST, _ATTRLIST):
                raise ValueError(f"Unexpected SEXP type {kind} in a pair list.")
            has_attr, has_tag = bool(flags & (1 << 9)), bool(flags & (1 << 10))

    def _attributes(self):
        flags = self.int()
        if flags & 0xFF == _NIL:
            return {}
        return self._pairlist(bool(flags & (1 << 9)), bool(flags & (1 << 10)))


def unserialize(data):
    """The object in ``data`` (the bytes of an uncompressed R serialization)."""
    reader = _Reader(data)
    reader.header()
    return reader.item()


def read_rds(path):
    """The object in an ``.rds`` file (gzip, bzip2, xz or uncompressed)."""
    with open(path, "rb") as f:
        data = f.read()
    for opener in (gzip.decompress, bz2.decompress, lzma.decompress):
        try:
            data = opener(data)
            break
        except (OSError, ValueError, lzma.LZMAError):
            continue
    return unserialize(data)


def _chunk(data, compressed):
    """One object's bytes in an ``.rdb``: a 4-byte big-endian length, then
    the compressed serialization (zlib; or a type byte, then bzip2 / xz)."""
    (size,) = struct.unpack_from(">I", data, 0)
    if compressed in (2, 3):
        kind, body = data[4:5], data[5:]
        body = {b"Z": zlib.decompress, b"2": bz2.decompress, b"X": lzma.decompress,
                b"0": bytes}[kind](body)
    else:
        body = zlib.decompress(data[4:])
    if len(body) != size:
        raise ValueError(f"Corrupt lazy-load chunk: {len(body)} bytes, {size} expected.")
    return body


def read_lazy_load(stem, names=None):
    """The objects of a lazy-load database (``stem + '.rdx'``, ``'.rdb'``).

    Args:
        stem: the path without its suffix, e.g. ``.../janeaustenr/data/Rdata``.
        names: the objects to read (default: all).

    Returns:
        ``{name: object}``.
    """
    index = read_rds(stem + ".rdx").as_dict()
    variables = index["variables"].as_dict()
    compressed = index.get("compressed")
    compressed = compressed[0] if compressed else 1
    compressed = int(compressed) if compressed is not None else 1
    unknown = sorted(set(names or ()) - set(variables))
    if unknown:
        raise KeyError(f"{os.path.basename(stem)} holds no {unknown}; it holds "
                       f"{sorted(variables)}.")
    objects = {}
    with open(stem + ".rdb", "rb") as f:
        for name in names or variables:
            offset, length = variables[name]
            f.seek(offset)
            objects[name] = unserialize(_chunk(f.read(length), compressed))
    return objects
