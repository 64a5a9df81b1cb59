"""Turns a preset (name, folder, checkpoint or remote handle) into objects.

This and ``preset_saver`` are the only modules that know the preset files.
"""

import inspect
from pathlib import Path

import keras

from kzoo.presets import preset_registry, remote
from kzoo.presets.size_limits import check_backbone_config
from kzoo.presets.errors import PresetError
from kzoo.presets.preset_source import (
    PresetSource,
    check_class,
    source_for_file,
    source_for_folder,
)


def get_source(preset):
    """The ``PresetSource`` for any accepted preset argument (a source is
    returned as it is: resolve a preset once, then pass its source down)."""
    if isinstance(preset, PresetSource):
        return preset
    if isinstance(preset, Path):
        preset = str(preset)
    if not isinstance(preset, str) or not preset:
        raise TypeError(
            "`preset` must be a registered preset name, a folder path or a "
            f"remote handle (a non-empty str), got {type(preset).__name__} "
            f"{preset!r}."
        )
    if remote.is_remote(preset):
        return source_for_folder(remote.fetch(preset))
    registered = preset_registry.registered_presets()
    if preset in registered:
        return source_for_folder(preset_registry.resolve_registered(preset))
    path = Path(preset).expanduser()
    if path.is_dir():
        return source_for_folder(path)
    if path.exists():
        return source_for_file(path)
    known = ", ".join(sorted(registered)) or "none"
    raise PresetError(
        f"Unknown preset {preset!r}: it is neither a registered name nor an "
        f"existing folder. Registered presets: {known}. Pass a local folder "
        "path, or a remote handle such as 'hf://owner/name' where the network "
        "allows."
    )


def _deserialize_class(config, what, path):
    name = config.get("registered_name") if isinstance(config, dict) else None
    obj_cls = keras.saving.get_registered_object(name) if name else None
    if obj_cls is None:
        raise PresetError(
            f"{path} names the {what} class {name!r}, which is not registered. "
            "Is `import kzoo` done (and, for a family outside kzoo, its module "
            "imported: KZOO_FAMILIES), and is this kzoo version recent enough?"
        )
    return obj_cls


def _check_sizes(source, backbone_cls, init_config, overrides):
    """Refuses absurd sizes before a layer is built (see ``size_limits``),
    naming each field as the source's file writes it (an override is named
    as it was passed)."""
    where, field_names = source.config_field_names()
    field_names = {ours: theirs for ours, theirs in field_names.items()
                   if ours not in overrides}
    check_backbone_config(init_config, where, backbone_cls.__name__, field_names)


def load_backbone(preset, cls=None, load_weights=True, **config_overrides):
    source = get_source(preset)
    config = source.backbone_config()
    backbone_cls = _deserialize_class(config, "backbone", source.path)
    check_class(backbone_cls, cls, "backbone", source.path)
    init_config = dict(config.get("config", {}))
    init_config.update(config_overrides)
    _check_sizes(source, backbone_cls, init_config, config_overrides)
    backbone = backbone_cls.from_config(init_config)
    if load_weights:
        source.load_backbone_weights(backbone)
    return backbone


def load_tokenizer(preset, cls=None, **kwargs):
    return get_source(preset).load_tokenizer(cls=cls, **kwargs)


def load_preprocessor(preset, cls=None, **kwargs):
    source = get_source(preset)
    config = source.preprocessor_config()
    tokenizer_cls = getattr(cls, "tokenizer_cls", None)
    tokenizer = source.load_tokenizer(cls=tokenizer_cls)
    if config is not None:
        saved_cls = _deserialize_class(config, "preprocessor", source.path)
        if cls is None or issubclass(saved_cls, cls):
            init_config = dict(config.get("config", {}))
            init_config.update(kwargs)
            init_config["tokenizer"] = tokenizer
            return saved_cls.from_config(init_config)
        # Another task's preprocessor: keep what both take (sequence_length).
        accepted = inspect.signature(cls.__init__).parameters
        for key, value in config.get("config", {}).items():
            if key in accepted and key not in ("tokenizer", "name"):
                kwargs.setdefault(key, value)
    if cls is None:
        raise PresetError(f"{source.path} holds no preprocessor.json.")
    return cls(tokenizer=tokenizer, **kwargs)


def _split_kwargs(cls, kwargs):
    """Task constructor kwargs vs preprocessor kwargs (by signature)."""
    task_params = inspect.signature(cls.__init__).parameters
    pre_cls = getattr(cls, "preprocessor_cls", None)
    pre_params = inspect.signature(pre_cls.__init__).parameters if pre_cls else {}
    task_kwargs, pre_kwargs = {}, {}
    for key, value in kwargs.items():
        if key in task_params or key in pre_params:
            # Both take some (GPTClassifier's `symmetric`): both get them.
            if key in task_params:
                task_kwargs[key] = value
            if key in pre_params and key not in ("self", "kwargs", "tokenizer"):
                pre_kwargs[key] = value
        else:
            raise TypeError(
                f"{cls.__name__}.from_preset got an unexpected argument {key!r}; "
                f"{cls.__name__} takes {sorted(k for k in task_params if k not in ('self', 'kwargs'))}"
                + (f" and its preprocessor takes "
                   f"{sorted(k for k in pre_params if k not in ('self', 'kwargs'))}"
                   if pre_params else "")
                + "."
            )
    return task_kwargs, pre_kwargs


def _dtype_overrides(source, dtype):
    """The backbone config override for a `dtype=` given to `from_preset`
    (keras-hub's argument: the backbone and the heads built on it run in
    that policy)."""
    if dtype is None:
        return {}
    saved = source.backbone_config().get("config", {}).get("dtype")
    if isinstance(saved, dict) and isinstance(keras.dtype_policies.deserialize(saved),
                                              keras.dtype_policies.DTypePolicyMap):
        raise PresetError(
            f"{source.path} holds a quantized backbone (a per-layer dtype "
            f"map); it loads only in the dtypes it was saved in. Drop "
            f"dtype={dtype!r}, or quantize a float preset after loading it.")
    if isinstance(dtype, str):
        keras.dtype_policies.get(dtype)  # an unknown name fails here, clearly
    return {"dtype": dtype}


def load_task(preset, cls, load_weights=True, load_task_head=True, dtype=None,
              **kwargs):
    source = get_source(preset)
    overrides = _dtype_overrides(source, dtype)
    accepted = inspect.signature(cls.__init__).parameters
    for key, value in source.task_defaults().items():
        if key in accepted:
            kwargs.setdefault(key, value)
    task_kwargs, pre_kwargs = _split_kwargs(cls, kwargs)
    task_config = source.task_config() if load_task_head else None
    if task_config is not None:
        saved_cls = _deserialize_class(task_config, "task", source.path)
        if issubclass(saved_cls, cls):
            saved = task_config.get("config", {})
            for key, value in task_kwargs.items():
                if key in saved and not _same(saved[key], value):
                    raise PresetError(
                        f"{source.path} holds a fine-tuned "
                        f"{_fine_tuned_name(source, saved_cls)} with "
                        f"{key}={saved[key]!r}, but {key}={value!r} was "
                        f"asked. Pass load_task_head=False to put a new head "
                        f"with {key}={value!r} on the preset's backbone."
                    )
            return _restore_task(source, saved_cls, task_config, pre_kwargs,
                                 load_weights, overrides)
        if any(issubclass(cls, head) for head in source.head_task_classes()):
            raise PresetError(
                f"{source.path} holds a fine-tuned "
                f"{_fine_tuned_name(source, saved_cls)}, not a {cls.__name__}: "
                f"load it with {saved_cls.__name__}.from_preset, or pass "
                f"load_task_head=False to put a new {cls.__name__} head on its "
                "backbone."
            )
    backbone = load_backbone(source, cls=cls.backbone_cls,
                             load_weights=load_weights, **overrides)
    preprocessor = None
    if cls.preprocessor_cls is not None:
        preprocessor = load_preprocessor(source, cls=cls.preprocessor_cls, **pre_kwargs)
    task = cls(backbone=backbone, preprocessor=preprocessor, **task_kwargs)
    if load_weights:
        # A converted checkpoint may hold pretrained heads (BERT's MLM, NSP).
        source.load_pretrained_head(task)
    return task


def _same(saved, asked):
    """Whether an asked argument equals the saved one (a list in JSON, a
    tuple in Python)."""
    if isinstance(saved, (list, tuple)) and isinstance(asked, (list, tuple)):
        return list(saved) == list(asked)
    return saved == asked


def _fine_tuned_name(source, saved_cls):
    """The fine-tuned task, as the folder's format names it."""
    architecture = source.task_architecture()
    if architecture and architecture != saved_cls.__name__:
        return f"{architecture} (kzoo's {saved_cls.__name__})"
    return saved_cls.__name__


def _restore_task(source, task_cls, task_config, pre_kwargs, load_weights,
                  backbone_overrides):
    """The task ``task_config`` describes (see ``PresetSource.task_config``):
    backbone, preprocessor (the saved one; for a converter's config, which
    has no ``"preprocessor"`` key, one built on the folder's tokenizer),
    head, then ``load_task_weights`` (backbone and head)."""
    config = dict(task_config.get("config", {}))
    backbone_config = source.backbone_config()
    backbone_cls = _deserialize_class(backbone_config, "backbone", source.path)
    init_config = {**backbone_config.get("config", {}), **backbone_overrides}
    _check_sizes(source, backbone_cls, init_config, backbone_overrides)
    backbone = backbone_cls.from_config(init_config)
    preprocessor = None
    if ("preprocessor" in config and config["preprocessor"] is not None) or (
            "preprocessor" not in config and task_cls.preprocessor_cls is not None):
        preprocessor = load_preprocessor(
            source, cls=task_cls.preprocessor_cls, **pre_kwargs
        )
    config.update(backbone=backbone, preprocessor=preprocessor)
    task = task_cls.from_config(config)
    if load_weights:
        source.load_task_weights(task)
    return task
