"""A full disk at every write: the previous file or folder survives whole.

Each saver runs once to count its write operations (``kzoo.testing.
write_faults``), then once per operation with that operation failing with
``OSError(ENOSPC)``. After each failure the error says what happened, the
previous preset / checkpoint / vectors / export is byte for byte what it
was (so it loads and equals), and no temporary file is left beside it.
"""

import errno
import os
import shutil
from pathlib import Path

import keras
import numpy as np
import pytest

from kzoo.callbacks.epoch_checkpoint import EpochCheckpoint
from kzoo.export.saved_model import versioned_path, write_saved_model
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.word2vec.word_vectors import WordVectors
from kzoo.testing import to_numpy
from kzoo.testing.write_faults import count_writes, fail_at
from tests.models.bert.bert_classifier_test import tiny_classifier

#: the repository root: the subprocess imports kzoo from it
ROOT = Path(__file__).resolve().parents[2]


def snapshot(folder):
    """Every file under ``folder`` (hidden ones too) and its bytes."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, folder)] = f.read()
    return files


def put_back(folder, files):
    """Makes ``folder`` hold exactly ``files`` (a ``snapshot``) again."""
    shutil.rmtree(folder)
    for name, data in files.items():
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def inject_every_fault(save, folder):
    """Runs ``save`` with its k-th write failing, for every k (counted on a
    run that succeeds, whose result is then undone), and checks after each
    failure that ``folder`` holds what it held. Returns the faults injected."""
    before = snapshot(folder)
    total = count_writes(save)
    assert total > 0
    put_back(folder, before)
    for k in range(1, total + 1):
        with fail_at(k) as counter:
            with pytest.raises(OSError) as info:
                save()
        assert info.value.errno == errno.ENOSPC, f"write {k}: {info.value!r}"
        assert "No space left on device" in str(info.value)
        assert snapshot(folder) == before, f"write {k} ({counter.failed})"
    print(f"{total} write faults injected, {folder.name} unchanged after each")
    return total


def perturbed(model, seed):
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(to_numpy(variable) + rng.normal(size=variable.shape).astype("float32"))


def test_save_to_preset_survives_a_full_disk_at_every_write(tmp_path):
    classifier = tiny_classifier()
    preset = tmp_path / "presets" / "tiny"
    classifier.backbone.save_to_preset(str(preset))
    classifier.preprocessor.tokenizer.save_to_preset(str(preset))
    old_weights = [to_numpy(v) for v in classifier.backbone.weights]
    perturbed(classifier.backbone, seed=1)

    def save():
        classifier.backbone.save_to_preset(str(preset))

    inject_every_fault(save, tmp_path / "presets")
    restored = BertBackbone.from_preset(str(preset))
    for variable, value in zip(restored.weights, old_weights):
        np.testing.assert_array_equal(to_numpy(variable), value)
    save()  # the disk has room again
    restored = BertBackbone.from_preset(str(preset))
    for variable, new in zip(restored.weights, classifier.backbone.weights):
        np.testing.assert_array_equal(to_numpy(variable), to_numpy(new))


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_save_word2vec_format_survives_a_full_disk_at_every_write(tmp_path, binary):
    words = ["the", "cat", "sat", "on", "mat"]
    rng = np.random.default_rng(0)
    old = WordVectors(rng.normal(size=(5, 4)).astype("float32"), words)
    new = WordVectors(rng.normal(size=(5, 4)).astype("float32"), words)
    path = tmp_path / "vectors" / "vectors.txt"
    path.parent.mkdir()
    old.save_word2vec_format(str(path), binary=binary)
    inject_every_fault(lambda: new.save_word2vec_format(str(path), binary=binary),
                       path.parent)
    loaded = WordVectors.load_word2vec_format(str(path), binary=binary)
    np.testing.assert_array_equal(loaded.vectors, old.vectors)


def test_epoch_checkpoint_survives_a_full_disk_at_every_write(tmp_path):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2),
                              keras.layers.Dropout(0.1, seed=1), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    directory = tmp_path / "checkpoint"
    checkpoint = EpochCheckpoint(str(directory))
    model.fit(np.ones((4, 3)), np.ones((4, 1)), epochs=1, verbose=0,
              callbacks=[checkpoint])
    saved = [to_numpy(v) for v in model.weights]
    perturbed(model, seed=2)
    inject_every_fault(lambda: checkpoint.save(2), directory)
    state = EpochCheckpoint.restore(model, str(directory))
    assert state["epoch"] == 1
    for variable, value in zip(model.weights, saved):
        np.testing.assert_array_equal(to_numpy(variable), value)


def _writer(content):
    """Writes a small folder as an exporter does (files and a subfolder)."""
    def write(folder):
        os.makedirs(os.path.join(folder, "variables"), exist_ok=True)
        for name in ("saved_model.pb", "variables/variables.index",
                     "variables/variables.data-00000-of-00001"):
            with open(os.path.join(folder, name), "wb") as f:
                f.write(content + name.encode())
    return write


@pytest.mark.parametrize("version", [None, 3], ids=["plain", "versioned"])
def test_export_folder_survives_a_full_disk_at_every_write(tmp_path, version):
    root = tmp_path / "serving"
    path = versioned_path(str(root / "model"), version)
    write_saved_model(path, _writer(b"old "))
    before = snapshot(root)
    inject_every_fault(lambda: write_saved_model(path, _writer(b"new ")), root)
    write_saved_model(path, _writer(b"new "))
    assert snapshot(root) == {k: v.replace(b"old ", b"new ") for k, v in before.items()}


_SLOW_EXPORT = """
import sys, time
from kzoo.export.saved_model import write_saved_model

def write(folder):
    import os
    os.makedirs(os.path.join(folder, "variables"))
    for i in range(5):
        with open(os.path.join(folder, "variables", f"shard-{i}"), "wb") as f:
            f.write(b"new")
        print(i, flush=True)
    while True:  # still writing when the test kills it, however late that is
        time.sleep(60)

write_saved_model(sys.argv[1], write)
"""


def test_export_killed_mid_write_leaves_the_previous_export(tmp_path):
    """A real kill (SIGKILL) of a process writing an export (its writer is a
    slow stand-in for TensorFlow's, which needs seconds to start)."""
    import signal
    import subprocess
    import sys

    root = tmp_path / "serving"
    path = str(root / "model")
    write_saved_model(path, _writer(b"old "))
    before = snapshot(root)
    victim = subprocess.Popen([sys.executable, "-c", _SLOW_EXPORT, path],
                              stdout=subprocess.PIPE, text=True,
                              cwd=ROOT, env={**os.environ})
    for _ in range(5):  # five files written into the new export
        assert victim.stdout.readline(), "the export ended before the kill"
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    assert victim.returncode == -signal.SIGKILL
    after = snapshot(root)
    unfinished = {k for k in after if k.startswith(".") or "/." in k}
    assert {k: v for k, v in after.items() if k not in unfinished} == before
    assert unfinished  # the killed export's temporary folder, never the export
    write_saved_model(path, _writer(b"new "))  # the next export succeeds
    assert snapshot(path) == {k[len("model/"):]: v.replace(b"old ", b"new ")
                              for k, v in before.items()}


_SAVE_PAUSED = """
import sys
import numpy as np
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.testing import to_numpy
from kzoo.testing.write_faults import pause_at

preset, k = sys.argv[1], int(sys.argv[2])
backbone = BertBackbone.from_preset(preset)
for variable in backbone.weights:
    variable.assign(to_numpy(variable) + 1.0)
with pause_at(k):
    backbone.save_to_preset(preset)
print("saved", flush=True)
"""


def _kill_paused(script, *args, env=None):
    """Runs ``script`` in a subprocess until it pauses before a write
    (``pause_at``), kills it there with SIGKILL and returns that write."""
    import signal
    import subprocess
    import sys

    victim = subprocess.Popen([sys.executable, "-c", script, *map(str, args)],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env=env or {**os.environ})
    try:
        line = victim.stdout.readline()
        assert line.startswith("paused before write"), f"no pause: {line!r}"
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    assert victim.returncode == -signal.SIGKILL
    return line.strip()


def _assert_weights(backbone, values):
    for variable, value in zip(backbone.weights, values):
        np.testing.assert_array_equal(to_numpy(variable), value, err_msg=variable.path)


@pytest.mark.large  # a fresh Python process per kill
def test_save_to_preset_killed_at_each_stage_leaves_the_previous_preset(tmp_path):
    """SIGKILL just before the first write, the first weight, a weight in
    the middle, the metadata, the rename of the old folder aside and the
    rename of the new one in: each time the previous preset is whole. Before
    the last rename it is in its place; between the two renames (the one
    instant the docs name) it is whole under a hidden ``.<name>.old-*``
    name beside it."""
    from kzoo.testing.write_faults import list_writes

    classifier = tiny_classifier()
    parent = tmp_path / "presets"
    preset = parent / "tiny"
    classifier.backbone.save_to_preset(str(preset))
    classifier.preprocessor.tokenizer.save_to_preset(str(preset))
    old_weights = [to_numpy(v) for v in classifier.backbone.weights]
    before = snapshot(parent)
    operations = list_writes(lambda: classifier.backbone.save_to_preset(str(preset)))
    put_back(parent, before)
    renames = [k for k, what in enumerate(operations, 1) if what == "os.rename"]
    datasets = [k for k, what in enumerate(operations, 1) if "create_dataset" in what]
    metadata = [k for k, what in enumerate(operations, 1) if what == "write to metadata.json"]
    assert len(renames) == 2 and datasets and metadata, operations
    points = [1, datasets[0], datasets[len(datasets) // 2], metadata[-1], *renames]
    for k in points:
        line = _kill_paused(_SAVE_PAUSED, preset, k)
        after = snapshot(parent)
        hidden = {name for name in after if name.startswith(".")}
        if k == renames[-1]:  # between the renames: the old folder aside
            assert not preset.exists(), line
            (aside,) = {name.split("/")[0] for name in hidden if ".old-" in name}
            assert {name.replace(aside, "tiny", 1): data for name, data in after.items()
                    if name.startswith(aside + "/")} == before, line
            os.rename(parent / aside, preset)  # by hand, as the docs say
        else:
            assert {n: d for n, d in after.items() if n not in hidden} == before, line
        assert all(".tmp-" in name or ".old-" in name for name in hidden), hidden
        _assert_weights(BertBackbone.from_preset(str(preset)), old_weights)
        put_back(parent, before)  # the temporary folders deleted, as by hand
        print(f"killed {line}: the previous preset loads equal")


_EXPORT_PAUSED = """
import json, sys
from kzoo import cli
from kzoo.testing.write_faults import list_writes, pause_at

model, output, version, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
command = ["export", "--model", model, "--output", output, "--version", version]
if k == 0:  # export to the end, listing the write operations
    print(json.dumps(list_writes(lambda: cli.main(command))), flush=True)
else:
    with pause_at(k):
        cli.main(command)
"""


@pytest.mark.large  # a fresh TensorFlow process per kill
def test_kzoo_export_version_killed_at_each_stage_leaves_the_previous_versions(tmp_path):
    """``kzoo export --version 2`` killed with SIGKILL before its first
    write, before it rewrites ``saved_model.pb`` and before the rename that
    puts the version folder in place: version 1 stays byte for byte what it
    was and no version 2 appears; the next export writes it."""
    import json
    import subprocess
    import sys

    pytest.importorskip("tensorflow")
    model = tmp_path / "classifier"
    tiny_classifier().save_to_preset(str(model))
    root = tmp_path / "serving"
    env = {**os.environ, "KERAS_BACKEND": "tensorflow"}

    def export(version, k):
        return subprocess.run(
            [sys.executable, "-c", _EXPORT_PAUSED, str(model), str(root), str(version),
             str(k)], capture_output=True, text=True, cwd=ROOT, env=env, check=True)

    operations = json.loads(export(1, 0).stdout.strip().splitlines()[-1])
    before = snapshot(root)
    assert {name.split("/")[0] for name in before} == {"1"}
    points = [1, operations.index("open saved_model.pb") + 1, len(operations)]
    assert operations[-1] == "os.rename", operations
    for k in points:
        line = _kill_paused(_EXPORT_PAUSED, model, root, 2, k, env=env)
        after = snapshot(root)
        hidden = {name for name in after if name.startswith(".")}
        assert {n: d for n, d in after.items() if n not in hidden} == before, line
        assert all(".tmp-" in name for name in hidden), hidden
        put_back(root, before)
        print(f"killed {line}: version 1 whole, no version 2")
    export(2, 0)
    after = snapshot(root)
    assert {n: d for n, d in after.items() if n.startswith("1/")} == before
    assert "2/saved_model.pb" in after
