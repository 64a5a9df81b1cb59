"""Refuses a backbone config whose sizes cannot be built, before building it.

A config read from a file is outside input: a ``vocabulary_size`` of 10^12
makes XLA abort the whole process while allocating the embedding, and
``num_layers`` of 10^6 builds for minutes. ``check_backbone_config`` checks
every size field the families share (a positive int, ``num_layers`` at most
``MAX_LAYERS``, ELMo's character ``filters`` as ``[width, count]`` pairs)
and an estimate of the parameter memory against the memory the machine has,
and names the file, the field, the value and the fix.

A converted checkpoint names its fields otherwise (Hugging Face's
``num_hidden_layers`` for ``num_layers``, ELMo's ``lstm.n_layers``): its
source says so (``PresetSource.config_field_names``) and the errors name
the field as the file writes it, with kzoo's name beside it.
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
#: the most character ids per word a character model may read (ELMo: 50)
MAX_WORD_LENGTH = 1024
_TABLE_ROWS = ("vocabulary_size", "max_sequence_length", "num_segments",
               "num_characters")
_WIDTHS = ("hidden_dim", "projection_dim", "character_dim")
_BYTES_PER_PARAMETER = 4  # float32 variables (a safe bound for 16-bit ones)


def estimated_parameters(config):
    """An upper estimate of the parameter count a config implies: the
    embedding tables (rows x widest width) plus, per layer, a transformer
    block's (or an LSTM's, or a highway layer's) weights, ``4 h^2 + 2 h i``,
    plus a character CNN's kernels (``filters``: width x count x
    ``character_dim`` each, the counts' sum being one more width)."""
    filters = config.get("filters") or ()
    filter_total = sum(count for _, count in filters)
    width = max([config.get(name) or 0 for name in _WIDTHS] + [filter_total]) or 1
    rows = sum(config.get(name) or 0 for name in _TABLE_ROWS)
    inner = config.get("intermediate_dim") or width
    layers = (config.get("num_layers") or 0) + (config.get("num_highway_layers") or 0)
    kernels = sum(w * count for w, count in filters) * (config.get("character_dim") or 1)
    return rows * width + layers * (4 * width * width + 2 * width * inner) + kernels


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


def _is_pair_list(filters):
    return isinstance(filters, (list, tuple)) and all(
        isinstance(pair, (list, tuple)) and len(pair) == 2
        and all(_is_int(v) and v > 0 for v in pair)
        for pair in filters)


class _Names:
    """How the errors name a field: as the file writes it, kzoo's name
    beside it where the two differ."""

    def __init__(self, where, backbone_name, field_names):
        self.where, self.backbone_name = where, backbone_name
        self.field_names = field_names or {}

    def subject(self, name):
        theirs = self.field_names.get(name, name)
        if theirs == name:
            return f"{self.where}: the {self.backbone_name} config's `{name}`"
        return f"`{theirs}` in {self.where} (kzoo's {self.backbone_name} `{name}`)"

    def value(self, name, value, ours=False):
        theirs = self.field_names.get(name, name)
        mine = f" (kzoo's `{name}`)" if ours and theirs != name else ""
        return f"`{theirs}`={value!r:.100}{mine}"

    def fix(self, *names):
        ours = " or ".join(f"`{n}=`" for n in names)
        return (f"Fix the value in {self.where}, or pass {ours} to from_preset "
                "as an override.")


def check_backbone_config(config, where, backbone_name="backbone", field_names=None):
    """Refuses a backbone config that cannot be built here.

    Args:
        config: dict, a backbone's constructor arguments.
        where: the file (or folder) the config was read from.
        backbone_name: the backbone class's name, for the message.
        field_names: optional dict from kzoo's argument name to the name
            the file gives that field (``{"num_layers": "num_hidden_layers"}``
            for a Hugging Face ``config.json``); the errors use the file's
            names.

    Raises:
        PresetError: a size is not a positive int, ``filters`` is not a
            list of ``[width, count]`` pairs of positive ints, the config
            asks for more than ``MAX_LAYERS`` layers or more than
            ``MAX_WORD_LENGTH`` characters per word, or it implies more
            parameter memory than the machine has. The message names the
            file, the field and the fix.
    """
    names = _Names(where, backbone_name, field_names)
    for name in POSITIVE_SIZES + NON_NEGATIVE_SIZES:
        if name not in config:
            continue
        value = config[name]
        low = 0 if name in NON_NEGATIVE_SIZES else 1
        if not _is_int(value) or value < low:
            kind = "an int >= 0" if low == 0 else "a positive int"
            raise PresetError(
                f"{names.subject(name)} must be {kind}, got {value!r:.100}. "
                f"{names.fix(name)}")
    if "filters" in config and not _is_pair_list(config["filters"]):
        raise PresetError(
            f"{names.subject('filters')} must be a list of [width, count] pairs "
            f"of positive ints, got {config['filters']!r:.200}. {names.fix('filters')}")
    layers = (config.get("num_layers") or 0) + (config.get("num_highway_layers") or 0)
    if layers > MAX_LAYERS:
        counted = [n for n in ("num_layers", "num_highway_layers") if config.get(n)]
        raise PresetError(
            f"{where}: the {backbone_name} config asks for {layers} layers "
            f"({', '.join(names.value(n, config[n], ours=True) for n in counted)}); kzoo "
            f"builds at most {MAX_LAYERS}. {names.fix(*counted)}")
    if (config.get("max_word_length") or 0) > MAX_WORD_LENGTH:
        raise PresetError(
            f"{names.subject('max_word_length')} asks for "
            f"{config['max_word_length']} characters per word; kzoo reads at "
            f"most {MAX_WORD_LENGTH}. {names.fix('max_word_length')}")
    parameters = estimated_parameters(config)
    limit = available_memory_bytes()
    if limit is not None and parameters * _BYTES_PER_PARAMETER > limit:
        sized = [n for n in POSITIVE_SIZES + NON_NEGATIVE_SIZES if n in config]
        if config.get("filters"):
            sized.append("filters")
        sizes = ", ".join(names.value(n, config[n]) for n in sized)
        raise PresetError(
            f"{where}: the {backbone_name} config ({sizes}) implies about "
            f"{parameters:.3g} parameters, {parameters * _BYTES_PER_PARAMETER / 2**30:.3g} "
            f"GiB, more than the {limit / 2**30:.3g} GiB of memory available. "
            f"Fix the values in {where}, or pass smaller ones to from_preset "
            "as overrides.")
