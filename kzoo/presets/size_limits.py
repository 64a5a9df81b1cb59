"""Refuses a backbone config whose sizes cannot be built, before building it.

A config read from a file is outside input: a ``vocabulary_size`` of 10^12
makes XLA abort the whole process while allocating the embedding, and
``num_layers`` of 10^6 builds for minutes. ``check_backbone_config`` checks
every size field the families share (a positive int, ``num_layers`` at most
``MAX_LAYERS``) and an estimate of the parameter memory against the memory
the machine has, and names the file, the field, the value and the fix.
"""

import os

from kzoo.presets.errors import PresetError

#: size fields that must be positive ints where a config has them
POSITIVE_SIZES = (
    "vocabulary_size", "hidden_dim", "intermediate_dim", "num_layers",
    "num_heads", "max_sequence_length", "num_segments", "projection_dim",
    "character_dim", "num_characters", "max_word_length",
)
#: size fields that may be 0
NON_NEGATIVE_SIZES = ("num_highway_layers",)
#: the deepest stack a preset may ask for
MAX_LAYERS = 512
_TABLE_ROWS = ("vocabulary_size", "max_sequence_length", "num_segments",
               "num_characters")
_WIDTHS = ("hidden_dim", "projection_dim", "character_dim")
_BYTES_PER_PARAMETER = 4  # float32 variables (a safe bound for 16-bit ones)


def estimated_parameters(config):
    """An upper estimate of the parameter count a config implies: the
    embedding tables (rows x widest width) plus, per layer, a transformer
    block's (or an LSTM's) weights, ``4 h^2 + 2 h i``."""
    width = max((config.get(name) or 0) for name in _WIDTHS) or 1
    rows = sum(config.get(name) or 0 for name in _TABLE_ROWS)
    inner = config.get("intermediate_dim") or width
    layers = (config.get("num_layers") or 0) + (config.get("num_highway_layers") or 0)
    return rows * width + layers * (4 * width * width + 2 * width * inner)


def available_memory_bytes():
    """The memory the machine can give now (``MemAvailable``), or its total
    physical memory where ``/proc/meminfo`` is not there."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_backbone_config(config, where, backbone_name="backbone"):
    """Raises a ``PresetError`` naming ``where`` (the config's file) when a
    size in ``config`` (a backbone's constructor arguments) is not a
    positive int, asks for more than ``MAX_LAYERS`` layers, or implies more
    parameter memory than the machine has."""
    fix = f"Fix the value in {where}, or pass it to from_preset as an override."
    for name in POSITIVE_SIZES + NON_NEGATIVE_SIZES:
        if name not in config:
            continue
        value = config[name]
        low = 0 if name in NON_NEGATIVE_SIZES else 1
        if not _is_int(value) or value < low:
            kind = "an int >= 0" if low == 0 else "a positive int"
            raise PresetError(
                f"{where}: the {backbone_name} config's `{name}` must be "
                f"{kind}, got {value!r}. {fix}")
    layers = (config.get("num_layers") or 0) + (config.get("num_highway_layers") or 0)
    if layers > MAX_LAYERS:
        raise PresetError(
            f"{where}: the {backbone_name} config asks for {layers} layers "
            f"(`num_layers`={config.get('num_layers')!r}); kzoo builds at most "
            f"{MAX_LAYERS}. {fix}")
    parameters = estimated_parameters(config)
    limit = available_memory_bytes()
    if limit is not None and parameters * _BYTES_PER_PARAMETER > limit:
        sizes = ", ".join(f"`{name}`={config[name]!r}" for name in POSITIVE_SIZES
                          if name in config)
        raise PresetError(
            f"{where}: the {backbone_name} config ({sizes}) implies about "
            f"{parameters:.3g} parameters, {parameters * _BYTES_PER_PARAMETER / 2**30:.3g} "
            f"GiB, more than the {limit / 2**30:.3g} GiB of memory available. "
            f"{fix}")
