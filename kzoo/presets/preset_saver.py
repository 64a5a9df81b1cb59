"""Writes preset folders atomically.

Every save builds the complete new folder beside the target (starting from a
copy of what the target already holds, so that saving a backbone and then a
tokenizer into one folder composes), then swaps it into place with renames:
a crash or an error mid-save leaves the old folder (or nothing) untouched,
never a half-written preset.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

import keras

from kzoo.presets.atomic_files import replace_folder
from kzoo.presets import preset_source as files
from kzoo.presets import weights
from kzoo.version import __version__


def _write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def _metadata(backbone):
    metadata = {
        "kzoo_version": __version__,
        "keras_version": keras.__version__,
        "saved_with_backend": keras.config.backend(),
    }
    if backbone is not None:
        metadata["parameter_count"] = int(backbone.count_params())
        metadata["backbone"] = type(backbone).__name__
    return metadata


def _readme(backbone, tokenizer, task):
    parts = [type(x).__name__ for x in (backbone, tokenizer, task) if x is not None]
    return (
        "# kzoo preset\n\n"
        f"Holds: {', '.join(parts)}.\n\n"
        "Load with `kzoo.<Class>.from_preset(\"<this folder>\")`.\n"
    )


def save_preset(preset_dir, backbone=None, tokenizer=None, preprocessor=None,
                task=None):
    """Writes the given parts into ``preset_dir`` atomically."""
    target = Path(preset_dir).expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a folder.")
    if tokenizer is None and preprocessor is not None:
        tokenizer = getattr(preprocessor, "tokenizer", None)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        if target.is_dir():
            _copy_files(target, tmp)
        if backbone is not None:
            _write_json(tmp / files.CONFIG_FILE,
                        keras.saving.serialize_keras_object(backbone))
            weights.save_weights(backbone, tmp / files.WEIGHTS_FILE)
        if tokenizer is not None:
            _write_json(tmp / files.TOKENIZER_FILE,
                        keras.saving.serialize_keras_object(tokenizer))
            assets = tmp / files.TOKENIZER_ASSETS_DIR
            if assets.exists():
                shutil.rmtree(assets)
            assets.mkdir(parents=True)
            tokenizer.save_assets(str(assets))
        if preprocessor is not None:
            _write_json(tmp / files.PREPROCESSOR_FILE,
                        keras.saving.serialize_keras_object(preprocessor))
        if task is not None:
            _write_json(tmp / files.TASK_FILE,
                        keras.saving.serialize_keras_object(task))
            weights.save_weights(
                task, tmp / files.TASK_WEIGHTS_FILE,
                objects_to_skip=weights.not_head(task),
            )
        metadata_path = tmp / files.METADATA_FILE
        metadata = _metadata(backbone)
        if metadata_path.exists() and backbone is None:
            with open(metadata_path, encoding="utf-8") as f:
                metadata = {**json.load(f), **{k: v for k, v in metadata.items()
                                              if k != "parameter_count"}}
        _write_json(metadata_path, metadata)
        if not (tmp / "README.md").exists():
            (tmp / "README.md").write_text(_readme(backbone, tokenizer, task))
        replace_folder(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OSError(
            exc.errno, f"{exc.strerror or exc} while saving the preset {target}; "
            "the folder was left as it was") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return str(target)


def _copy_files(source, destination):
    """Copies the folder's files one by one (``shutil.copytree`` would
    gather the errors into one ``shutil.Error`` and lose their errno)."""
    for root, _, names in os.walk(source):
        folder = destination / Path(root).relative_to(source)
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            shutil.copy2(os.path.join(root, name), folder / name)
