"""Loading weight files all-or-nothing, with errors that name the shapes."""

import re
import warnings

import keras

from kzoo.presets.errors import PresetError

_SHAPES = re.compile(
    r"variable\.shape=(\([^)]*\)), Received: value\.shape=(\([^)]*\))"
    r".*?Target variable: <Variable path=([^,]+),",
    re.S,
)


def _file_shapes(group):
    shapes = []
    group.visititems(
        lambda name, obj: shapes.append(tuple(obj.shape))
        if hasattr(obj, "shape") else None
    )
    return sorted(shapes)


def _shape_mismatches(model, path):
    """Per top-level layer, the variable shapes the model and the file hold."""
    import h5py

    from keras.src.utils.naming import to_snake_case

    lines, used = [], {}
    try:
        with h5py.File(path, "r") as f:
            for layer in model.layers:
                # Keras names each layer's group by its class, in order.
                key = to_snake_case(type(layer).__name__)
                if key in used:
                    used[key] += 1
                    key = f"{key}_{used[key]}"
                else:
                    used[key] = 0
                wanted = sorted(tuple(v.shape) for v in layer.weights)
                group = f.get(f"layers/{key}")
                got = _file_shapes(group) if group is not None else None
                if got is None and wanted:
                    lines.append(f"layer {layer.name!r} is missing from the file")
                elif got is not None and got != wanted:
                    lines.append(
                        f"layer {layer.name!r} has shapes {wanted} in the model "
                        f"but {got} in the file"
                    )
    except OSError:
        return None
    return lines


def _explain(exc, model, path):
    text = str(exc)
    mismatches = _shape_mismatches(model, path)
    if mismatches:
        return (
            f"The weights in {path} do not match the {type(model).__name__} "
            f"built from its config: " + "; ".join(mismatches) + ". Check that "
            "the config and the weights come from the same checkpoint."
        )
    match = _SHAPES.search(text)
    if match:
        wanted, got, var = match.groups()
        return (
            f"The weights in {path} do not match the {type(model).__name__} "
            f"built from its config: variable {var} has shape {wanted} in the "
            f"model but {got} in the file. Check that the config and the "
            "weights come from the same checkpoint."
        )
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return (
        f"Could not load the weights in {path} into {type(model).__name__} "
        f"({first}). The file may be corrupt or saved from another config."
    )


def load_weights(model, path, objects_to_skip=None):
    """Loads a Keras ``.weights.h5`` file into ``model``; on any failure the
    model keeps the weights it had and a ``PresetError`` explains why."""
    snapshot = [keras.ops.convert_to_numpy(v) for v in model.weights]
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Skipping nested container")
            keras.saving.load_weights(
                model, str(path), objects_to_skip=objects_to_skip
            )
    except Exception as exc:  # noqa: BLE001 — re-raised with context below
        for variable, value in zip(model.weights, snapshot):
            variable.assign(value)
        raise PresetError(_explain(exc, model, path)) from exc
    _restart_lora(model)


def _restart_lora(model):
    """Keras loads LoRA layers with the adapters merged into the kernel and
    both adapter matrices zero, where no gradient reaches them: ``A`` gets a
    fresh initialization (``B`` stays zero, so the outputs do not change)."""
    for layer in model._flatten_layers():
        if getattr(layer, "lora_enabled", False):
            a = layer.lora_kernel_a
            a.assign(keras.initializers.HeUniform()(a.shape))


def not_head(task):
    """What ``task.weights.h5`` leaves out: the backbone and the optimizer."""
    skip = list(task.backbone._flatten_layers())
    if getattr(task, "optimizer", None) is not None:
        skip.append(task.optimizer)
    return skip


def save_weights(model, path, objects_to_skip=None):
    keras.saving.save_weights(model, str(path), objects_to_skip=objects_to_skip)
