"""Layout maps from sharding rules, and the checks that run before placing.

A backbone's sharding is a dict of rules: a regex over variable paths (as
``variable.path`` prints them) and, for each axis of the matching variables,
``"model"`` (split over the model-parallel mesh axis) or ``None``
(replicated along that axis). ``layout_map`` turns such rules into a
``keras.distribution.LayoutMap`` for a concrete mesh; ``check_layouts``
verifies a model's variables against a map before anything is placed.

Only keras (no backend) is imported here: the rules and their checks are the
same on every backend, even where the engine that applies them is absent.
"""

import re

import keras

# The placeholder in rules for the model-parallel mesh axis.
MODEL = "model"
# Paths may carry the names of the layers around the backbone (a task, a
# wrapper layer): every rule matches after any such prefix.
PREFIX = r"(?:.*/)?"


def layout_map(device_mesh, rules, model_parallel_dim_name="model",
               data_parallel_dim_name="batch"):
    """A ``keras.distribution.LayoutMap`` over ``device_mesh`` from ``rules``.

    Args:
        device_mesh: a ``keras.distribution.DeviceMesh`` with both axes.
        rules: dict of path regex (matched in full after any layer prefix)
            to a tuple with ``MODEL`` or ``None`` per variable axis.
        model_parallel_dim_name: str. The mesh axis the weights are split
            over.
        data_parallel_dim_name: str. The mesh axis the batch is split over.

    Returns:
        A ``LayoutMap``. Variables that match no rule are replicated.
    """
    if not isinstance(device_mesh, keras.distribution.DeviceMesh):
        raise ValueError(
            "`device_mesh` must be a keras.distribution.DeviceMesh, got "
            f"{type(device_mesh).__name__}. Make one with keras.distribution."
            "DeviceMesh(shape=(batch, model), axis_names=('batch', 'model'), "
            "devices=keras.distribution.list_devices())."
        )
    for role, name in (("model_parallel_dim_name", model_parallel_dim_name),
                       ("data_parallel_dim_name", data_parallel_dim_name)):
        if name not in device_mesh.axis_names:
            raise ValueError(
                f"`{role}`={name!r} is not an axis of the device mesh, whose "
                f"axes are {list(device_mesh.axis_names)}."
            )
    result = keras.distribution.LayoutMap(device_mesh)
    for pattern, axes in rules.items():
        result[PREFIX + pattern] = tuple(
            model_parallel_dim_name if axis == MODEL else axis for axis in axes
        )
    return result


def matching_rules(layouts, path):
    """The patterns of ``layouts`` (a LayoutMap) that match ``path`` in full."""
    return [pattern for pattern in layouts if re.fullmatch(pattern, path)]


def check_variable(layouts, variable):
    """Raises a ValueError unless ``variable`` can take its layout.

    Checks that at most one rule matches, that the layout has one entry per
    axis, and that the mesh size of every split axis divides the variable's
    dimension there. Returns the matching pattern, or None.
    """
    patterns = matching_rules(layouts, variable.path)
    if len(patterns) > 1:
        raise ValueError(
            f"Variable '{variable.path}' matches {len(patterns)} layout rules "
            f"({patterns}); each variable may match at most one."
        )
    if not patterns:
        return None
    axes = layouts[patterns[0]].axes
    shape = tuple(variable.shape)
    if len(axes) != len(shape):
        raise ValueError(
            f"Layout rule '{patterns[0]}' gives {len(axes)} axes {axes} but "
            f"variable '{variable.path}' has shape {shape} ({len(shape)} axes)."
        )
    mesh = layouts.device_mesh
    sizes = dict(zip(mesh.axis_names, mesh.shape))
    for index, (axis, dim) in enumerate(zip(axes, shape)):
        if axis is not None and dim % sizes[axis]:
            raise ValueError(
                f"Cannot split variable '{variable.path}' (shape {shape}) "
                f"over the '{axis}' mesh axis: its axis {index} has {dim} "
                f"entries, which the '{axis}' size {sizes[axis]} does not "
                f"divide. Choose a '{axis}' size that divides {dim} (the "
                "model-parallel size must divide the number of heads, the "
                "hidden and intermediate widths and any other split axis)."
            )
    return patterns[0]


def check_layouts(layouts, variables, require_every_rule=False):
    """Checks every variable against ``layouts`` before any is placed.

    Args:
        layouts: a ``keras.distribution.LayoutMap``.
        variables: the model's variables.
        require_every_rule: bool. Also raise if a rule matches no variable
            (a typo in a hand-written rule would otherwise shard nothing).

    Returns:
        A dict from each rule to the paths it matched.
    """
    matched = {pattern: [] for pattern in layouts}
    for variable in variables:
        pattern = check_variable(layouts, variable)
        if pattern is not None:
            matched[pattern].append(variable.path)
    unused = [pattern for pattern, paths in matched.items() if not paths]
    if require_every_rule and unused:
        examples = ", ".join(v.path for v in list(variables)[:4])
        raise ValueError(
            f"Layout rule(s) {unused} match no variable of the model (its "
            f"variable paths look like: {examples}, ...). Rules are regexes "
            "matched against the whole `variable.path`."
        )
    return matched
