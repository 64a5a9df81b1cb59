"""Resolving presets: names, folders, and every failure (remote handles: remote_test.py)."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from kzoo.presets import preset_saver, weights
from kzoo.presets.errors import PresetError
from kzoo.models.backbone import Backbone
from tests.toy_models import ToyBackbone, toy_classifier

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _saved_backbone(path, hidden_dim=4):
    keras.utils.set_random_seed(1)
    backbone = ToyBackbone(vocabulary_size=8, hidden_dim=hidden_dim)
    backbone.save_to_preset(path)
    return backbone


def test_unknown_name_lists_registered_presets(tmp_path, monkeypatch):
    registry = tmp_path / "registry"
    registry.mkdir()
    (registry / "toy_tiny_en.json").write_text(json.dumps(
        {"name": "toy_tiny_en", "family": "toy",
         "source": {"type": "folder", "path": str(tmp_path / "nowhere")}}))
    monkeypatch.setenv("KZOO_PRESETS_PATH", str(registry))
    with pytest.raises(PresetError, match="Unknown preset 'bert_nope'.*toy_tiny_en"):
        ToyBackbone.from_preset("bert_nope")
    with pytest.raises(PresetError, match="does not exist"):
        ToyBackbone.from_preset("toy_tiny_en")
    with pytest.raises(TypeError, match="`preset` must be"):
        ToyBackbone.from_preset(3)


def test_registered_name_resolves_to_its_folder(tmp_path, monkeypatch):
    original = _saved_backbone(tmp_path / "weights")
    registry = tmp_path / "registry"
    registry.mkdir()
    (registry / "toy_tiny_en.json").write_text(json.dumps(
        {"name": "toy_tiny_en", "family": "toy", "description": "test",
         "source": {"type": "folder", "path": str(tmp_path / "weights")}}))
    (registry / "toy_pip_en.json").write_text(json.dumps(
        {"name": "toy_pip_en", "family": "toy",
         "source": {"type": "pip_package", "module": "kzoo_no_such_pkg",
                    "pip": "kzoo-no-such-pkg", "path": "model"}}))
    monkeypatch.setenv("KZOO_PRESETS_PATH", str(registry))
    import kzoo

    assert {"toy_tiny_en", "toy_pip_en"} <= set(kzoo.list_presets())
    assert kzoo.list_presets(family="toy") == ["toy_pip_en", "toy_tiny_en"]
    loaded = ToyBackbone.from_preset("toy_tiny_en")
    np.testing.assert_array_equal(loaded.get_weights()[0], original.get_weights()[0])
    with pytest.raises(PresetError, match="pip install --no-deps kzoo-no-such-pkg"):
        ToyBackbone.from_preset("toy_pip_en")


def test_folder_errors(tmp_path):
    (tmp_path / "not_a_preset").mkdir()
    (tmp_path / "not_a_preset" / "notes.txt").write_text("hi")
    with pytest.raises(PresetError, match="not a kzoo preset folder.*notes.txt"):
        ToyBackbone.from_preset(str(tmp_path / "not_a_preset"))
    (tmp_path / "file.h5").write_text("x")
    with pytest.raises(PresetError, match="is a file"):
        ToyBackbone.from_preset(str(tmp_path / "file.h5"))


def test_wrong_family_is_named(tmp_path):
    _saved_backbone(tmp_path / "p")

    @keras.saving.register_keras_serializable(package="kzoo_test")
    class OtherBackbone(Backbone):
        pass

    with pytest.raises(PresetError, match="holds a ToyBackbone backbone, which is not a OtherBackbone"):
        OtherBackbone.from_preset(str(tmp_path / "p"))


def test_config_weight_mismatch_names_shapes_and_changes_nothing(tmp_path):
    _saved_backbone(tmp_path / "p", hidden_dim=4)
    config_path = tmp_path / "p" / "config.json"
    config = json.loads(config_path.read_text())
    config["config"]["hidden_dim"] = 6
    config_path.write_text(json.dumps(config))
    with pytest.raises(PresetError, match=r"token_embedding' has shapes \[\(8, 6\)\] in the model but \[\(8, 4\)\] in the file"):
        ToyBackbone.from_preset(str(tmp_path / "p"))
    # A failed load into an existing model leaves it as it was.
    target = ToyBackbone(vocabulary_size=8, hidden_dim=6)
    before = [w.copy() for w in target.get_weights()]
    with pytest.raises(PresetError):
        weights.load_weights(target, tmp_path / "p" / "model.weights.h5")
    for a, b in zip(target.get_weights(), before):
        np.testing.assert_array_equal(a, b)


def test_corrupt_weights_file(tmp_path):
    _saved_backbone(tmp_path / "p")
    path = tmp_path / "p" / "model.weights.h5"
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(PresetError, match="corrupt"):
        ToyBackbone.from_preset(str(tmp_path / "p"))


def test_save_is_atomic(tmp_path, monkeypatch):
    original = _saved_backbone(tmp_path / "p")
    before = sorted(os.listdir(tmp_path / "p"))
    model = toy_classifier()

    def fail(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(weights, "save_weights", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        model.save_to_preset(tmp_path / "p")
    # The old preset is intact and no temporary folder is left behind.
    assert sorted(os.listdir(tmp_path / "p")) == before
    assert sorted(os.listdir(tmp_path)) == ["p"]
    loaded = ToyBackbone.from_preset(str(tmp_path / "p"))
    np.testing.assert_array_equal(loaded.get_weights()[0], original.get_weights()[0])
    monkeypatch.undo()
    preset_saver.save_preset(tmp_path / "p", backbone=model.backbone)
    assert sorted(os.listdir(tmp_path)) == ["p"]


def test_preset_saved_on_another_backend_loads_here(tmp_path):
    other = {"tensorflow": "jax", "jax": "torch", "torch": "tensorflow"}[
        keras.config.backend()]
    script = (
        "import keras, numpy as np\n"
        "from tests.toy_models import ToyBackbone\n"
        "keras.utils.set_random_seed(3)\n"
        "b = ToyBackbone(vocabulary_size=8, hidden_dim=4)\n"
        f"b.save_to_preset({str(tmp_path / 'p')!r})\n"
        f"np.save({str(tmp_path / 'w.npy')!r}, b.get_weights()[0])\n"
    )
    env = dict(os.environ, KERAS_BACKEND=other, PYTHONPATH=ROOT)
    subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=ROOT,
                   capture_output=True)
    loaded = ToyBackbone.from_preset(str(tmp_path / "p"))
    np.testing.assert_array_equal(loaded.get_weights()[0], np.load(tmp_path / "w.npy"))
    metadata = json.loads((tmp_path / "p" / "metadata.json").read_text())
    assert metadata["saved_with_backend"] == other
    assert metadata["parameter_count"] == loaded.count_params()


def test_from_preset_dtype_builds_backbone_and_head_in_that_policy(tmp_path):
    # keras-hub's `from_preset(..., dtype=...)`: for a fine-tuned task preset
    # (its head restored) and for a new head on that preset's backbone.
    from kzoo.models.bert.bert_classifier import BertClassifier
    from tests.models.bert.bert_classifier_test import TEXTS, tiny_classifier

    model = tiny_classifier()
    expected = model.predict(TEXTS, verbose=0)
    model.save_to_preset(tmp_path / "tuned")
    restored = BertClassifier.from_preset(str(tmp_path / "tuned"), dtype="bfloat16")
    fresh = BertClassifier.from_preset(str(tmp_path / "tuned"), num_classes=3,
                                       load_task_head=False, dtype="bfloat16")
    for task in (restored, fresh):
        assert task.backbone.dtype_policy.name == "bfloat16"
        assert task.output_dense.dtype_policy.name == "bfloat16"
        assert keras.backend.standardize_dtype(
            task.backbone.token_embedding.embeddings.dtype) == "bfloat16"
    found = restored.predict(TEXTS, verbose=0).astype("float32")
    assert np.abs(found - expected).max() < 0.05 * np.abs(expected).max()
    assert BertClassifier.from_preset(
        str(tmp_path / "tuned")).backbone.dtype_policy.name == "float32"
    with pytest.raises(ValueError, match="bfloat17"):
        BertClassifier.from_preset(str(tmp_path / "tuned"), dtype="bfloat17")
    model.backbone.quantize("int8")
    model.save_to_preset(tmp_path / "int8")
    with pytest.raises(PresetError, match=r"quantized backbone .* Drop dtype='bfloat16'"):
        BertClassifier.from_preset(str(tmp_path / "int8"), dtype="bfloat16")
