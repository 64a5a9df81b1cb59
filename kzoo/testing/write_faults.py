"""Injected write faults: the k-th write operation fails as a full disk would.

``count_writes(fn)`` runs ``fn`` and returns how many write operations it
made (``list_writes(fn)``: which ones); ``fail_at(k)`` is a context manager
in which the k-th raises ``OSError(errno.ENOSPC)``, ``pause_at(k)`` one in
which the process stops before the k-th, for a test to kill it there.
Write operations are: opening a file for writing (``open``, ``io.open``),
each ``write`` and the ``close`` of such a file, the renames (``os.replace``, ``os.rename``), ``os.fsync``, and HDF5's dataset
creation (``h5py.Group.create_dataset``, where Keras writes each weight).
"""

import builtins
import contextlib
import errno
import io
import os
import sys
import time

_WRITE_MODES = set("wax+")


class _Counter:
    def __init__(self, fail_at=None, pause_at=None):
        self.count = 0
        self.fail_at = fail_at
        self.pause_at = pause_at
        self.failed = None
        self.operations = []

    def tick(self, what):
        self.count += 1
        self.operations.append(what)
        if self.count == self.pause_at:
            sys.stdout.write(f"paused before write {self.count}: {what}\n")
            sys.stdout.flush()
            while True:  # until the process is killed
                time.sleep(3600)
        if self.count == self.fail_at:
            self.failed = what
            raise OSError(errno.ENOSPC,
                          f"No space left on device (injected at write "
                          f"{self.count}: {what})")


class _File:
    """A file object whose writes and close count as write operations."""

    def __init__(self, f, counter, name):
        self._f, self._counter, self._name = f, counter, name

    def write(self, data):
        self._counter.tick(f"write to {self._name}")
        return self._f.write(data)

    def close(self):
        self._f.close()
        self._counter.tick(f"close {self._name}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __iter__(self):
        return iter(self._f)

    def __getattr__(self, name):
        return getattr(self._f, name)


def _patches(counter):
    real_open = builtins.open

    def open_(file, mode="r", *args, **kwargs):
        if not _WRITE_MODES & set(mode) or isinstance(file, int):
            return real_open(file, mode, *args, **kwargs)
        name = os.path.basename(os.fspath(file))
        counter.tick(f"open {name}")
        return _File(real_open(file, mode, *args, **kwargs), counter, name)

    def counted(fn, what):
        def wrapper(*args, **kwargs):
            counter.tick(what)
            return fn(*args, **kwargs)
        return wrapper

    patches = [(builtins, "open", open_), (io, "open", open_),
               (os, "replace", counted(os.replace, "os.replace")),
               (os, "rename", counted(os.rename, "os.rename")),
               (os, "fsync", counted(os.fsync, "os.fsync"))]
    try:
        import h5py
    except ImportError:
        return patches
    patches.append((h5py.Group, "create_dataset",
                    counted(h5py.Group.create_dataset, "h5py create_dataset")))
    return patches


@contextlib.contextmanager
def _counting(counter):
    patches = _patches(counter)
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, value in patches:
        setattr(owner, name, value)
    try:
        yield counter
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def count_writes(fn):
    """Runs ``fn()`` and returns the number of write operations it made."""
    with _counting(_Counter()) as counter:
        fn()
    return counter.count


def list_writes(fn):
    """Runs ``fn()`` and returns its write operations, in order, each named
    as ``fail_at`` and ``pause_at`` name it (``"os.rename"``, ``"open
    config.json"``, ...)."""
    with _counting(_Counter()) as counter:
        fn()
    return counter.operations


def pause_at(k):
    """A context manager in which the process stops just before its
    ``k``-th write operation: it prints ``paused before write k: <the
    operation>`` to stdout and sleeps until it is killed. A test runs the
    saver in a subprocess under it, reads that line and kills the process
    (SIGKILL) there, to see what a kill at that instant leaves on disk."""
    return _counting(_Counter(pause_at=k))


def fail_at(k):
    """A context manager in which the ``k``-th write operation raises
    ``OSError(ENOSPC)``; it yields the counter (``.failed`` names the
    operation that failed)."""
    return _counting(_Counter(fail_at=k))
