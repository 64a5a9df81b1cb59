"""keras-hub preset folders, read and written without keras-hub.

A folder written by keras-hub's ``save_to_preset`` (as Kaggle's cache holds
it) has ``config.json`` (``"registered_name": "keras_hub>BertBackbone"``),
``model.weights.h5``, ``tokenizer.json`` and ``assets/tokenizer/``, and may
have ``preprocessor.json``, ``task.json`` and ``task.weights.h5``.

Weights are read and written with h5py in the layout ``keras.saving`` gives
a keras-hub model: a layer's variables are the datasets
``layers/<layer>/vars/<i>``, ``<layer>`` being its class in snake case
numbered in the model's layer order (``transformer_encoder_1``) and nested
layers their attribute names (``_self_attention_layer/query_dense``). Each
family maps its variables to those paths with ``Link`` objects, once, and
both directions use the map: reading checks every tensor's shape before
assigning any; writing gives keras-hub files its ``load_weights`` reads.

``KerasHubSource`` is the base of the families' converters; ``write_preset``
writes a folder that ``keras_hub.models.<Class>.from_preset`` loads.
"""

import dataclasses
import json
import os
import warnings
from pathlib import Path

import keras
import numpy as np

from kzoo.presets.atomic_files import new_folder
from kzoo.presets.errors import PresetError
from kzoo.presets.hugging_face import listing
from kzoo.presets.preset_source import (
    CONFIG_FILE,
    METADATA_FILE,
    PREPROCESSOR_FILE,
    TASK_FILE,
    TASK_WEIGHTS_FILE,
    TOKENIZER_ASSETS_DIR,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    PresetSource,
    read_json,
)

#: the Keras packages whose registered names mark a keras-hub folder
PACKAGES = ("keras_hub", "keras_nlp")
#: the keras-hub release whose folder format ``write_preset`` writes
KERAS_HUB_VERSION = "0.32.0"


def registered_name(path):
    """The ``registered_name`` of a folder's ``config.json`` ("" when there
    is none or it is not a JSON object)."""
    config = Path(path) / CONFIG_FILE
    if not config.is_file():
        return ""
    try:
        value = read_json(config)
    except PresetError:
        return ""
    if not isinstance(value, dict):
        return ""
    return value.get("registered_name") or ""


def class_name(serialized):
    """``"BertBackbone"`` of ``{"registered_name": "keras_hub>BertBackbone"}``."""
    name = serialized.get("registered_name") or serialized.get("class_name") or ""
    return name.split(">")[-1]


def serialize(module, name, config):
    """A keras-hub object's ``serialize_keras_object`` form; ``module``
    below ``keras_hub.src.models`` (``"bert.bert_backbone"``), whose last
    part is the object's default name, as keras-hub names it."""
    return {"module": f"keras_hub.src.models.{module}", "class_name": name,
            "config": {"name": module.rsplit(".", 1)[-1], **config},
            "registered_name": f"keras_hub>{name}"}


def dtype_policy(name):
    """A ``DTypePolicy``'s serialized form, as keras-hub's configs hold it."""
    return {"module": "keras", "class_name": "DTypePolicy",
            "config": {"name": name}, "registered_name": None}


def float_dtype_name(backbone):
    """The name of ``backbone``'s float dtype policy; a ValueError for a
    quantized (per-layer) policy, which keras-hub's configs do not hold."""
    policy = backbone.dtype_policy
    if isinstance(policy, keras.dtype_policies.DTypePolicyMap) or policy.quantization_mode:
        raise ValueError(
            f"The {type(backbone).__name__} is quantized; a keras-hub preset "
            "is written from a float model (quantize after loading it).")
    return policy.name


# --- weights -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Link:
    """One kzoo variable and the keras-hub dataset(s) that hold it.

    With one path the dataset is the variable reshaped to ``shapes[0]``
    (``(heads, head_dim, hidden)`` for a ``(hidden, hidden)`` kernel); with
    several, the variable is their concatenation along its last axis, each
    reshaped to ``variable.shape[:-1] + (-1,)`` (a fused query/key/value
    kernel from three per-head kernels).
    """

    variable: object
    paths: tuple
    shapes: tuple

    def value(self, arrays):
        """The variable's value from the file's ``arrays`` (by path)."""
        lead = tuple(self.variable.shape)[:-1]
        if len(self.paths) == 1:
            return np.reshape(arrays[self.paths[0]], tuple(self.variable.shape))
        return np.concatenate(
            [np.reshape(arrays[p], lead + (-1,)) for p in self.paths], axis=-1)

    def arrays(self):
        """``{path: array}``: the variable as the file stores it."""
        value = keras.ops.convert_to_numpy(self.variable)
        parts = [value] if len(self.paths) == 1 else np.split(
            value, len(self.paths), axis=-1)
        return {p: np.reshape(part, s)
                for p, part, s in zip(self.paths, parts, self.shapes)}


def arrays_of(links):
    """``{dataset path: array}`` of every linked variable, as keras-hub's
    files store them."""
    arrays = {}
    for entry in links:
        arrays.update(entry.arrays())
    return arrays


def link(variable, path, shape=None):
    """A ``Link`` of one dataset, of the variable's shape unless given."""
    return Link(variable, (path,), (tuple(shape or variable.shape),))


def pair_links(first, second, path):
    """A layer's two variables at ``path/vars/0`` and ``path/vars/1`` (a
    dense layer's kernel and bias, a layer norm's gamma and beta)."""
    return [link(first, f"{path}/vars/0"), link(second, f"{path}/vars/1")]


def block_links(block, key):
    """The layer norms and feed-forward layers of a kzoo Transformer block
    (encoder or decoder) at keras-hub's paths of its block, ``key``
    (``layers/transformer_encoder_1``); attention differs by family."""
    links = []
    for name in ("self_attention_layer_norm", "feedforward_layer_norm"):
        layer = getattr(block, name)
        links += pair_links(layer.gamma, layer.beta, f"{key}/_{name}")
    for name in ("feedforward_intermediate_dense", "feedforward_output_dense"):
        layer = getattr(block, name)
        links += pair_links(layer.kernel, layer.bias, f"{key}/_{name}")
    return links


def layer_key(name, index):
    """Keras' key of the ``index``-th top-level layer of a class:
    ``transformer_encoder``, ``transformer_encoder_1``, ..."""
    return name if index == 0 else f"{name}_{index}"


def read_h5(path):
    """Every dataset of a Keras ``.weights.h5`` file, ``{path: array}``
    (a bfloat16 dataset, which Keras marks with a ``dtype`` attribute, as
    ``ml_dtypes.bfloat16``); a PresetError when it is not HDF5."""
    import h5py
    import ml_dtypes

    arrays = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            value = obj[()]
            if obj.attrs.get("dtype") == "bfloat16":
                value = np.asarray(value).view(ml_dtypes.bfloat16)
            arrays[name] = np.asarray(value)

    try:
        with h5py.File(path, "r") as f:
            f.visititems(visit)
    except (OSError, ValueError) as exc:
        raise PresetError(
            f"Could not read {path} as a Keras weights file (HDF5: {exc}). "
            "Download or save the preset again.") from exc
    return arrays


def load_links(links, path, model, ignored=()):
    """Assigns the file's datasets to the linked variables, all or nothing.

    Every dataset is found and its shape checked before any variable is
    assigned; a missing or misshapen one raises a PresetError naming it and
    both shapes, and the model keeps its weights. Datasets of the file that
    no link reads (other than those under ``ignored`` prefixes) are named in
    a warning.
    """
    arrays = read_h5(path)
    problems, plan = [], []
    for entry in links:
        fits = True
        for p, shape in zip(entry.paths, entry.shapes):
            if p not in arrays:
                problems.append(f"{p} is missing")
                fits = False
            elif tuple(arrays[p].shape) != tuple(shape):
                problems.append(f"{p} has shape {tuple(arrays[p].shape)} in the file "
                                f"but the {type(model).__name__} expects {tuple(shape)}")
                fits = False
            elif not np.issubdtype(arrays[p].dtype, np.floating) and not (
                    arrays[p].dtype.name == "bfloat16"):
                problems.append(f"{p} holds {arrays[p].dtype} values, not floats")
                fits = False
        if fits:
            plan.append((entry.variable, entry.value(
                {p: arrays[p].astype("float32") for p in entry.paths})))
    if problems:
        raise PresetError(
            f"The weights in {path} do not fit the {type(model).__name__} built "
            f"from its config: {'; '.join(problems)}. Check that the config and "
            "the weights come from the same keras-hub preset. Nothing was loaded.")
    for variable, value in plan:
        variable.assign(value)
    used = {p for entry in links for p in entry.paths}
    unused = [p for p in arrays if p not in used and not p.startswith(tuple(ignored))]
    if unused:
        warnings.warn(f"{path} holds weights the {type(model).__name__} does not "
                      f"use: {listing(unused)}.", stacklevel=3)


def write_h5(path, arrays):
    """Writes ``{dataset path: array}`` as Keras writes a ``.weights.h5``
    (each layer's ``vars`` group, bfloat16 marked by a ``dtype``
    attribute, an empty root ``vars`` group)."""
    import h5py

    with h5py.File(path, "w") as f:
        f.create_group("vars")
        for name, value in arrays.items():
            value = np.asarray(value)
            dataset = f.create_dataset(name, data=value)
            if value.dtype.name == "bfloat16":
                dataset.attrs["dtype"] = "bfloat16"


# --- reading -----------------------------------------------------------------


class KerasHubSource(PresetSource):
    """A keras-hub preset folder of one backbone class (a family's
    converter sets the class attributes and the ``*_links`` methods).

    ``matches`` accepts a folder whose ``config.json`` names
    ``keras_hub>{backbone_class}`` (or keras-nlp's older
    ``keras_nlp>``); ``task.json`` and ``preprocessor.json`` are mapped
    to the kzoo classes ``tasks`` and ``preprocessors`` name, keeping the
    arguments both sides take.
    """

    #: the keras-hub backbone class this source reads ("BertBackbone")
    backbone_class = None
    #: the kzoo backbone's registered name ("kzoo>BertBackbone")
    kzoo_backbone = None
    #: keras-hub task class → (kzoo registered name, the config keys kept)
    tasks = {}
    #: keras-hub preprocessor class → (kzoo registered name, the config keys
    #: kept); an unknown class keeps ``sequence_length`` in ``fallback``
    preprocessors = {}
    fallback_preprocessor = None
    #: the dataset prefixes of a task file that hold no head (keras-hub
    #: saves the optimizer's step and learning rate there)
    task_file_extras = ("optimizer/",)
    #: the Keras packages whose names a kzoo preset folder never uses
    registered_packages = PACKAGES

    @classmethod
    def matches(cls, path):
        return registered_name(path) in {f"{p}>{cls.backbone_class}" for p in PACKAGES}

    def _json(self, name, required=True):
        path = self.path / name
        if not path.is_file():
            if required:
                raise PresetError(f"The keras-hub preset folder {self.path} has no {name}.")
            return None
        value = read_json(path)
        if not isinstance(value, dict) or not isinstance(value.get("config"), dict):
            raise PresetError(f"{path} does not hold a serialized Keras object "
                              "(a JSON object with a \"config\" object).")
        return value

    # Subclass hooks.
    def kzoo_backbone_config(self, config):
        """The kzoo backbone's arguments for keras-hub's ``config``."""
        raise NotImplementedError

    def backbone_links(self, backbone):
        raise NotImplementedError

    def head_links(self, task):
        """The ``Link``s of ``task``'s head in ``task.weights.h5`` (empty
        for a task whose head has no weights of its own)."""
        return []

    def backbone_config(self):
        config = self._json(CONFIG_FILE)["config"]
        dtype = config.get("dtype")
        if isinstance(dtype, dict):
            if dtype.get("class_name") != "DTypePolicy":
                raise PresetError(
                    f"{self.path / CONFIG_FILE} holds a {dtype.get('class_name')} "
                    "(a quantized keras-hub model), which kzoo does not read; "
                    "use a float preset.")
            dtype = (dtype.get("config") or {}).get("name")
        kzoo_config = self.kzoo_backbone_config(config)
        if isinstance(dtype, str):
            kzoo_config["dtype"] = dtype
        module, _, name = self.kzoo_backbone.partition(">")
        return {"module": module, "class_name": name, "registered_name": self.kzoo_backbone,
                "config": kzoo_config}

    def load_backbone_weights(self, backbone):
        path = self.path / WEIGHTS_FILE
        if not path.is_file():
            raise PresetError(f"The keras-hub preset folder {self.path} has no "
                              f"{WEIGHTS_FILE}. Pass load_weights=False to build the "
                              "architecture only.")
        load_links(self.backbone_links(backbone), path, backbone)

    def _mapped(self, serialized, table):
        name = class_name(serialized)
        if name not in table:
            return None
        kzoo_name, keys = table[name]
        config = serialized["config"]
        return {"registered_name": kzoo_name,
                "config": {k: config[k] for k in keys if k in config}}

    def preprocessor_config(self):
        saved = self._json(PREPROCESSOR_FILE, required=False)
        if saved is None:
            return None
        mapped = self._mapped(saved, self.preprocessors)
        if mapped is None and "sequence_length" in saved["config"]:
            mapped = {"registered_name": self.fallback_preprocessor,
                      "config": {"sequence_length": saved["config"]["sequence_length"]}}
        return mapped

    def task_config(self):
        saved = self._json(TASK_FILE, required=False)
        if saved is None:
            return None
        mapped = self._mapped(saved, self.tasks)
        if mapped is not None and mapped["config"].get("activation") == "linear":
            mapped["config"]["activation"] = None
        return mapped

    def task_architecture(self):
        saved = self._json(TASK_FILE, required=False)
        return f"keras-hub {class_name(saved)}" if saved else None

    def load_task_weights(self, task):
        """``model.weights.h5`` into the backbone, ``task.weights.h5`` into
        the head; either failing leaves both as they were."""
        links = self.head_links(task)
        before = [keras.ops.convert_to_numpy(v) for v in task.weights]
        try:
            if links:
                load_links(links, self.path / TASK_WEIGHTS_FILE, task,
                           ignored=self.task_file_extras)
            self.load_backbone_weights(task.backbone)
        except BaseException:
            for variable, value in zip(task.weights, before):
                variable.assign(value)
            raise

    def load_pretrained_head(self, task):
        """A task whose head the folder's keras-hub task has but kzoo does
        not read keeps a new head, with a warning naming it."""
        saved = self._json(TASK_FILE, required=False)
        if saved is not None and class_name(saved) not in self.tasks:
            warnings.warn(
                f"{self.path} holds a keras-hub {class_name(saved)}, whose head "
                f"kzoo does not read: the {type(task).__name__} gets a new head "
                f"(kzoo reads the heads of {', '.join(sorted(self.tasks))}).",
                stacklevel=4)
        return False

    def tokenizer_config(self, keras_hub_class):
        """The ``config`` of ``tokenizer.json`` (a PresetError unless it is
        a ``keras_hub_class``) and the assets folder."""
        saved = self._json(TOKENIZER_FILE)
        if class_name(saved) != keras_hub_class:
            raise PresetError(
                f"{self.path / TOKENIZER_FILE} holds a keras-hub {class_name(saved)}; "
                f"kzoo reads a {keras_hub_class} beside a {self.backbone_class}.")
        return saved["config"], self.path / TOKENIZER_ASSETS_DIR


# --- writing -----------------------------------------------------------------


def serialize_tokenizer(module, name, tokenizer):
    """A keras-hub tokenizer's ``tokenizer.json``: the keys every one has,
    then its own ``tokenizer`` settings."""
    return serialize(module, name, {
        "trainable": True, "dtype": dtype_policy("int32"),
        "config_file": TOKENIZER_FILE, "sequence_length": None, **tokenizer})


def serialize_backbone(module, name, backbone, sizes):
    """A keras-hub backbone's ``config.json``: ``backbone``'s ``sizes``
    (attributes of the same names on both sides) and float dtype."""
    return serialize(module, name, {
        "trainable": True, "dtype": dtype_policy(float_dtype_name(backbone)),
        **{k: getattr(backbone, k) for k in sizes}})


def serialize_preprocessor(module, name, tokenizer, preprocessor, keys):
    """A keras-hub preprocessor's JSON: its ``tokenizer.json`` form and the
    ``keys`` of ``preprocessor`` (attributes of the same names)."""
    return serialize(module, name, {
        "trainable": True, "dtype": dtype_policy("float32"), "tokenizer": tokenizer,
        "config_file": PREPROCESSOR_FILE, **{k: getattr(preprocessor, k) for k in keys}})


def write_preset(path, backbone, tasks, tokenizer=None, preprocessor=None, task=None):
    """Writes a keras-hub preset folder atomically (as ``save_to_preset``).

    Args:
        path: the folder (replaced; left as it was on failure).
        backbone: ``(config, links, parameter_count)``: the backbone's
            serialized keras-hub form and its ``Link``s.
        tasks: the keras-hub task shapes of the backbone, for
            ``metadata.json`` (``["CausalLM"]``).
        tokenizer: None or ``(config, {asset file: text})``.
        preprocessor: None or its serialized keras-hub form.
        task: None or ``(config, head arrays)``: the task's serialized form
            and ``{dataset path: array}`` of ``task.weights.h5`` (None:
            the task has no weights of its own and no such file).

    Returns:
        The absolute ``path``.
    """
    with new_folder(path) as tmp:

        def dump(name, value):
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(json.dumps(value, indent=4))

        config, links, parameter_count = backbone
        dump(CONFIG_FILE, config)
        write_h5(os.path.join(tmp, WEIGHTS_FILE), arrays_of(links))
        dump(METADATA_FILE, {
            "keras_version": keras.__version__,
            "keras_hub_version": KERAS_HUB_VERSION,
            "parameter_count": int(parameter_count),
            "tasks": sorted(tasks),
        })
        if tokenizer is not None:
            config, assets = tokenizer
            dump(TOKENIZER_FILE, config)
            folder = os.path.join(tmp, TOKENIZER_ASSETS_DIR)
            os.makedirs(folder)
            for name, text in assets.items():
                with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                    f.write(text)
        if preprocessor is not None:
            dump(PREPROCESSOR_FILE, preprocessor)
        if task is not None:
            config, head = task
            dump(TASK_FILE, config)
            if head is not None:
                write_h5(os.path.join(tmp, TASK_WEIGHTS_FILE), head)
    return os.path.abspath(os.fspath(path))


def optimizer_arrays(learning_rate):
    """The optimizer datasets keras-hub's ``task.weights.h5`` holds (its
    step and learning rate), so keras-hub's loader restores them quietly."""
    return {"optimizer/vars/0": np.asarray(0, "int64"),
            "optimizer/vars/1": np.asarray(learning_rate, "float32")}


def task_parts(model, tokenizer, backbone_cls, task_cls, names):
    """``(backbone, tokenizer, preprocessor)`` of a backbone or task to
    write: the tokenizer given, else the task's preprocessor's.

    Args:
        model: the backbone or task.
        tokenizer: None or the tokenizer to write.
        backbone_cls, task_cls: the kzoo classes the family writes.
        names: keras-hub's names of those classes
            (``("BertBackbone", "BertTextClassifier")``).

    A model of other classes is a ValueError that says what to write.
    """
    backbone = getattr(model, "backbone", model)
    if not isinstance(backbone, backbone_cls) or (
            model is not backbone and not isinstance(model, task_cls)):
        raise ValueError(
            f"A keras-hub preset is written from a {backbone_cls.__name__} (keras-hub's "
            f"{names[0]}) or a {task_cls.__name__} ({names[1]}); a "
            f"{type(model).__name__} is neither"
            + (": write `model.backbone` for its backbone alone."
               if isinstance(backbone, backbone_cls) else "."))
    preprocessor = getattr(model, "preprocessor", None)
    if tokenizer is None and preprocessor is not None:
        tokenizer = getattr(preprocessor, "tokenizer", None)
    return backbone, tokenizer, preprocessor
