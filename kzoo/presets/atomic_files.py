"""Writing files and folders so that a failure leaves the old ones whole.

A file is written under a temporary name beside its target, flushed to disk
and renamed over the target (``os.replace`` is atomic on one file system); a
folder is built beside its target, its files flushed to disk, and swapped in
with two renames. A full disk (``OSError`` ENOSPC) or any other error at any
write, or a kill, leaves the previous file or folder as it was, and on an
error no temporary file is left behind; after a power cut the target is the
old folder or the whole new one, never a new one with empty files.
"""

import contextlib
import errno
import os
import shutil
import tempfile


@contextlib.contextmanager
def atomic_file(path, mode="wb", encoding=None):
    """Opens a temporary sibling of ``path`` for writing; when the block
    ends without an error it is synced and renamed to ``path``, else
    removed (the error propagates)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp-",
                               dir=directory)
    os.close(fd)
    try:
        with open(tmp, mode, encoding=encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def temporary_sibling(path, suffix=""):
    """A fresh, unused name beside ``path`` (nothing is created there), for
    writers that insist on creating their own file (``save_weights``)."""
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp-",
                               suffix=suffix,
                               dir=os.path.dirname(os.path.abspath(path)))
    os.close(fd)
    os.remove(tmp)
    return tmp


def sync_folder(folder):
    """Flushes every file under ``folder``, and the folders themselves, to
    disk (``os.fsync``), so that the rename that publishes the folder never
    reaches the disk before its contents do."""
    for root, _, names in os.walk(folder):
        for name in names:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        sync_directory(root)


def sync_directory(path):
    """Flushes a folder's entries (new names, renames) to disk, where the
    platform and file system allow it (not on Windows, nor on file systems
    that refuse ``fsync`` on a folder)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # Windows cannot open a folder
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def replace_folder(tmp, target):
    """Puts the complete folder ``tmp`` at ``target``: its files are synced
    to disk, the old ``target`` (if any) is renamed aside, ``tmp`` renamed
    in, then the old one deleted. If the second rename fails, the old folder
    is put back."""
    tmp, target = os.fspath(tmp), os.fspath(target)
    sync_folder(tmp)
    if not os.path.exists(target):
        os.rename(tmp, target)
        return
    old = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.old-",
                           dir=os.path.dirname(os.path.abspath(target)))
    os.rmdir(old)
    os.rename(target, old)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def new_folder(path):
    """Yields a fresh temporary folder beside ``path`` to fill; when the
    block ends without an error it replaces ``path`` (``replace_folder``),
    else it is deleted and ``path`` is left as it was (the error
    propagates)."""
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.tmp-", dir=parent)
    try:
        yield tmp
        replace_folder(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
