"""Folders are published whole: their files reach the disk before the
rename that puts them in place."""

import os

import pytest

from kzoo.presets.atomic_files import new_folder, replace_folder
from kzoo.testing.write_faults import list_writes


def _folder(path, files):
    for name, text in files.items():
        os.makedirs(os.path.dirname(path / name), exist_ok=True)
        (path / name).write_text(text)
    return path


def test_every_file_and_folder_is_synced_before_the_rename(tmp_path):
    files = {"config.json": "{}", "assets/vocabulary.txt": "a\nb\n",
             "assets/deeper/merges.txt": "a b\n"}
    new = _folder(tmp_path / "new", files)
    target = _folder(tmp_path / "target", {"config.json": "old"})

    operations = list_writes(lambda: replace_folder(new, target))

    renames = [i for i, op in enumerate(operations) if op == "os.rename"]
    syncs = [i for i, op in enumerate(operations) if op == "os.fsync"]
    # three files and three folders (the new one, assets/, assets/deeper/)
    assert len(syncs) == len(files) + 3
    assert renames and max(syncs) < min(renames)
    assert {name: (target / name).read_text() for name in files} == files
    assert sorted(os.listdir(tmp_path)) == ["target"]


def test_a_failed_sync_leaves_the_old_folder(tmp_path, monkeypatch):
    new = _folder(tmp_path / "new", {"config.json": "new"})
    target = _folder(tmp_path / "target", {"config.json": "old"})

    def fail(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="Input/output error"):
        replace_folder(new, target)
    assert (target / "config.json").read_text() == "old"


def test_new_folder_replaces_the_target_or_leaves_it(tmp_path):
    target = _folder(tmp_path / "target", {"config.json": "old"})
    with pytest.raises(RuntimeError, match="half way"):
        with new_folder(target) as tmp:
            (tmp_path / os.path.basename(tmp) / "config.json").write_text("new")
            raise RuntimeError("half way")
    assert (target / "config.json").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["target"]
    with new_folder(target) as tmp:
        _folder(tmp_path / os.path.basename(tmp), {"config.json": "new"})
    assert (target / "config.json").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["target"]
