"""Reading Hugging Face checkpoint folders (shared by the family converters).

A folder holds ``config.json`` and ``model.safetensors`` or
``pytorch_model.bin`` (or sharded versions with an ``.index.json``). The
``.bin`` format is a pickle: it is read with ``torch.load(weights_only=True)``
only, which refuses anything but tensors, since a checkpoint from the
internet is untrusted input.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from kzoo.presets.atomic_files import replace_folder
from kzoo.presets.errors import PresetError
from kzoo.presets.preset_source import read_json

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
TORCH_FILE = "pytorch_model.bin"


def read_config(path):
    """The ``config.json`` of a checkpoint folder, as a dict."""
    config = read_json(Path(path) / CONFIG_FILE)
    if not isinstance(config, dict):
        raise PresetError(f"{Path(path) / CONFIG_FILE} does not hold a JSON object.")
    return config


def config_number(config, key, where):
    """``config[key]`` as a float; a PresetError naming the field and
    ``where`` (its file) when the file holds anything but a number there."""
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PresetError(
            f"`{key}` in {where} must be a number, got {value!r:.100}. Fix the "
            "value in that file.")
    return float(value)


def class_labels(config, where):
    """``(num_classes, label_names)`` of a classification head's config.

    The names are ``id2label`` in id order, None when they are
    transformers' default ``LABEL_0``, ``LABEL_1``, ... (what it writes for
    a model given no names) or for one output (a regression). Without
    ``id2label`` the count is ``num_labels`` (transformers' default: 2).
    A PresetError naming ``where`` (the file) says what does not fit.
    """
    id2label = config.get("id2label")
    num_labels = config.get("num_labels")
    if id2label:
        if not isinstance(id2label, dict):
            raise PresetError(f"`id2label` in {where} must map ids to names, got "
                              f"{id2label!r:.100}.")
        try:
            ids = sorted(int(key) for key in id2label)
        except (TypeError, ValueError):
            raise PresetError(f"`id2label` in {where} has keys that are not ids: "
                              f"{sorted(map(str, id2label))[:5]}.") from None
        if ids != list(range(len(ids))):
            raise PresetError(f"`id2label` in {where} must number the labels 0 to "
                              f"{len(ids) - 1}, got the ids {ids[:8]}.")
        names = [id2label[key] for key in sorted(id2label, key=int)]
        if num_labels is not None and num_labels != len(names):
            raise PresetError(f"{where} says num_labels={num_labels!r} but names "
                              f"{len(names)} labels in `id2label`.")
    else:
        names = None
        num_labels = 2 if num_labels is None else num_labels
        if (not isinstance(num_labels, int) or isinstance(num_labels, bool)
                or num_labels < 1):
            raise PresetError(f"`num_labels` in {where} must be a positive int, "
                              f"got {num_labels!r:.100}.")
    num_classes = len(names) if names else num_labels
    if names is not None and (num_classes == 1 or names == [
            f"LABEL_{i}" for i in range(num_classes)]):
        names = None
    if names is not None:
        bad = [n for n in names if not isinstance(n, str) or not n]
        repeated = sorted({n for n in names if names.count(n) > 1} - set(bad), key=str)
        if bad or repeated:
            raise PresetError(
                f"`id2label` in {where} does not name the classes as kzoo needs: "
                + (f"{bad[:3]!r} are not non-empty strings" if bad else
                   f"it repeats {repeated[:3]!r}")
                + "; each class needs its own name.")
    return num_classes, names


def listing(names, limit=8):
    """A short, sorted listing of tensor names for error messages."""
    names = sorted(names)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def weight_files(path):
    """``("safetensors" | "torch", [files])`` of a checkpoint folder."""
    path = Path(path)
    for kind, name in (("safetensors", SAFETENSORS_FILE), ("torch", TORCH_FILE)):
        if (path / name).is_file():
            return kind, [path / name]
        index = path / f"{name}.index.json"
        if index.is_file():
            weight_map = read_json(index).get("weight_map") or {}
            files = sorted({path / f for f in weight_map.values()})
            missing = [f.name for f in files if not f.is_file()]
            if missing:
                raise PresetError(
                    f"{index} lists weight shards that are not in the folder: "
                    f"{', '.join(missing)}."
                )
            return kind, files
    other = [p.name for p in path.glob("*.h5")] + [p.name for p in path.glob("*.msgpack")]
    raise PresetError(
        f"The Hugging Face folder {path} has no {SAFETENSORS_FILE} or "
        f"{TORCH_FILE} (nor a sharded index of them)"
        + (f"; it has {', '.join(other)}, TensorFlow/Flax weights that kzoo "
           "does not read: re-save the model with transformers' "
           "save_pretrained (safetensors)" if other else "")
        + ". Pass load_weights=False to build the architecture only."
    )


def _read_safetensors(files, select):
    from safetensors import safe_open

    tensors = {}
    for file in files:
        try:
            with safe_open(str(file), framework="numpy") as f:
                for key in f.keys():
                    if select(key):
                        tensors[key] = f.get_tensor(key)
        except Exception as exc:  # noqa: BLE001 — SafetensorsError and kin
            raise PresetError(
                f"Could not read {file} as safetensors ({exc}): its header "
                "or data is damaged (a truncated download, or offsets past the "
                "end of the file). Download or save the checkpoint again."
            ) from exc
    return tensors


def _read_torch(files, select):
    try:
        import torch
    except ImportError as exc:
        raise PresetError(
            f"Reading {files[0]} needs torch (pip install torch), or save the "
            "checkpoint as model.safetensors, which kzoo reads without torch."
        ) from exc
    tensors = {}
    for file in files:
        try:
            # weights_only: a checkpoint is untrusted input; never unpickle code.
            state = torch.load(str(file), map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 — re-raised with context
            raise PresetError(
                f"Could not read {file} as a plain PyTorch state dict "
                f"(torch.load with weights_only=True: {exc}). Checkpoints that "
                "hold more than tensors are refused for safety; convert the "
                "model to safetensors with transformers."
            ) from exc
        for key, value in state.items():
            if not isinstance(value, torch.Tensor) or not select(key):
                continue
            value = value.detach().cpu()
            if value.is_floating_point():
                value = value.to(torch.float32)
            tensors[key] = value.numpy()
    return tensors


def read_hf_tensors(path, select=None):
    """The tensors of a Hugging Face checkpoint folder, as numpy arrays.

    Args:
        path: the checkpoint folder.
        select: optional predicate on the stored name; only the tensors it
            accepts are read (lazily for safetensors).

    Returns:
        A dict from the stored name (a model prefix such as ``bert.`` is
        kept) to a numpy
        array. Floating tensors of a ``pytorch_model.bin`` are converted to
        float32; safetensors keep their dtype (``ml_dtypes.bfloat16`` for
        bf16).
    """
    kind, files = weight_files(path)
    select = select or (lambda name: True)
    if kind == "safetensors":
        return _read_safetensors(files, select)
    return _read_torch(files, select)


def write_hf_folder(path, config, tensors, write_tokenizer=None):
    """Writes a Hugging Face checkpoint folder atomically.

    The folder holds ``config.json``, ``model.safetensors`` (written with
    numpy, float32 unless a tensor says otherwise) and, through
    ``write_tokenizer(folder)``, the tokenizer's files. It is written into a
    temporary sibling of ``path`` that then replaces ``path``; on failure
    ``path`` is left as it was.

    Args:
        path: the folder to write.
        config: dict, the ``config.json`` (transformers' keys).
        tensors: ``{name: array}`` in transformers' names and layouts.
        write_tokenizer: None, or ``write_tokenizer(folder)``.

    Returns:
        The absolute ``path``.
    """
    try:
        from safetensors.numpy import save_file
    except ImportError as error:
        raise ImportError(
            "Writing a Hugging Face folder needs the safetensors package: "
            "pip install safetensors (or kzoo[transformers]).") from error

    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.tmp-", dir=parent)
    try:
        with open(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, sort_keys=True)
        save_file({name: np.ascontiguousarray(value) for name, value in tensors.items()},
                  os.path.join(tmp, SAFETENSORS_FILE), metadata={"format": "pt"})
        if write_tokenizer is not None:
            write_tokenizer(tmp)
        replace_folder(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def write_json(path, value):
    """Writes ``value`` as indented JSON (a tokenizer's config files)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
