"""Where a preset's parts come from: a kzoo preset folder, or a converter.

A source answers the questions the loader asks (what backbone config, which
weights, which tokenizer, is there a fine-tuned task) for one folder. The kzoo
folder format (STYLE.md §6) is one source; converters for other libraries'
formats are others, registered with ``register_converter``.
"""

import json
import warnings
from pathlib import Path

import keras

from kzoo.presets import weights
from kzoo.presets.errors import PresetError

#: what a masked LM built on a checkpoint without a masked-LM head says of
#: its new head (``kzoo.layers.MaskedLMHead`` in a ``MaskedLM``)
NEW_HEAD_NOTE = (
    "a new one is initialized as BERT does: dense + GELU + layer norm, the "
    "decoder tied to the token embedding, a zero output bias, kernels drawn "
    "from a truncated normal of stddev 0.02; it needs training (fit on raw "
    "text continues masked-LM pretraining)")

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_ASSETS_DIR = "assets/tokenizer"
PREPROCESSOR_FILE = "preprocessor.json"
TASK_FILE = "task.json"
TASK_WEIGHTS_FILE = "task.weights.h5"
METADATA_FILE = "metadata.json"


#: the largest JSON file of a preset (configs; a GPT-2 vocab.json is 1 MB)
MAX_JSON_BYTES = 64 << 20


def read_json(path):
    """A preset's JSON file; a PresetError naming it when it is not UTF-8
    JSON or is past ``MAX_JSON_BYTES``."""
    size = Path(path).stat().st_size
    if size > MAX_JSON_BYTES:
        raise PresetError(
            f"{path} holds {size} bytes, more than the {MAX_JSON_BYTES} a "
            "preset's JSON file may: it is damaged or not a preset file. "
            "Write it again (`save_to_preset`).")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PresetError(
            f"{path} is not valid UTF-8 JSON ({exc}). Write it again "
            "(`save_to_preset`), or fix it by hand.") from exc


def check_class(obj_cls, wanted_cls, what, path):
    if wanted_cls is not None and not issubclass(obj_cls, wanted_cls):
        raise PresetError(
            f"{path} holds a {obj_cls.__name__} {what}, which is not a "
            f"{wanted_cls.__name__}. Load it with {obj_cls.__name__}.from_preset "
            "or pick a preset of the right family."
        )


class PresetSource:
    """Interface of a preset source. ``path`` is a local folder."""

    #: a short name for error messages ("kzoo preset", "Hugging Face BERT")
    format_name = "preset"
    #: True when ``matches`` may accept a single file, not only a folder
    reads_files = False
    #: the Keras packages of the ``registered_name``s whose folders this
    #: converter reads (keras-hub's ``"keras_hub"``): never a kzoo folder
    registered_packages = ()

    def __init__(self, path):
        self.path = Path(path)

    @classmethod
    def matches(cls, path):
        """True when the folder is in this source's format."""
        raise NotImplementedError

    def backbone_config(self):
        """``keras.saving.serialize_keras_object`` form of the backbone."""
        raise NotImplementedError

    def load_backbone_weights(self, backbone):
        raise NotImplementedError

    def config_field_names(self):
        """Where ``backbone_config`` reads its sizes, for error messages.

        Returns:
            ``(file, {kzoo argument: the field's name in that file})``. A
            converter whose file names the sizes otherwise (Hugging Face's
            ``num_hidden_layers`` for ``num_layers``) lists them, so a
            refused size is named as the file writes it. The default is the
            folder's ``config.json`` (the folder itself where there is none)
            in kzoo's own names.
        """
        file = self.path / CONFIG_FILE
        return (file if file.is_file() else self.path), {}

    def load_tokenizer(self, cls=None, **kwargs):
        raise NotImplementedError

    def preprocessor_config(self):
        """The preprocessor the folder holds, in
        ``keras.saving.serialize_keras_object`` form without its tokenizer,
        or None. ``load_preprocessor`` builds it on ``load_tokenizer()``
        (explicit arguments win); a task of another shape keeps the
        arguments its own preprocessor takes (``sequence_length``). A
        converter may synthesize one from its folder (transformers'
        ``model_max_length`` as ``sequence_length``)."""
        return None

    def task_config(self):
        """The fine-tuned task the folder holds, or None.

        The form of ``keras.saving.serialize_keras_object(task)``:
        ``{"registered_name": "kzoo>BertClassifier", "config": {...}}``. A
        kzoo folder returns its ``task.json``. A converter whose checkpoint
        holds a trained head (transformers' ``BertForSequenceClassification``)
        returns the same form, synthesized from the checkpoint's config: the
        task's constructor arguments other than ``backbone`` and
        ``preprocessor`` (``num_classes``, ``label_names``, ``dropout``),
        without a ``"preprocessor"`` key. ``from_preset`` then builds the
        backbone (``backbone_config``), the preprocessor (the task class's
        ``preprocessor_cls`` on ``load_tokenizer()``, with
        ``preprocessor_config()`` when there is one; a kzoo ``task.json``
        saved without a preprocessor says ``"preprocessor": null``), the
        task (``from_config``), and calls ``load_task_weights``.

        With the task's class (or a generic shape it fills:
        ``kzoo.models.TextClassifier.from_preset(folder)``), ``from_preset``
        restores it; an explicit argument that contradicts the config
        (``num_classes=5`` on a 3-label head) raises a PresetError, and
        ``load_task_head=False`` gives the backbone with a new head instead.
        Asking for a task of ``head_task_classes()`` other than the saved one
        raises a PresetError naming ``task_architecture()``; other tasks
        (backbone-only ones such as a text embedder, a masked LM through
        ``load_pretrained_head``) build on the backbone as from any folder.
        """
        return None

    def load_task_weights(self, task):
        """Loads the weights of ``task``, built from ``task_config()``:
        its backbone's (as ``load_backbone_weights``) and its head's.

        All or nothing: every tensor is matched and its shape checked
        first; one that is missing or does not fit raises a PresetError
        naming it, and the task keeps the weights it had.
        """
        raise PresetError(f"{self.path} holds no task weights.")

    def head_task_classes(self):
        """The task classes whose trained heads this format can hold (a
        converter of transformers BERT: the classifier, token classifier,
        question answerer and multiple choice of its architecture table).

        When the folder holds a fine-tuned task, ``from_preset`` on another
        of these classes raises a PresetError (naming the class to use, or
        ``load_task_head=False`` for a new head) rather than put a random
        head where the folder's trained one was meant. The default, (),
        refuses nothing: another task gets a new head (a kzoo folder).
        """
        return ()

    def task_architecture(self):
        """The fine-tuned task's name in the folder's own format, for
        messages (transformers' ``"BertForSequenceClassification"``);
        None: the kzoo class name says it."""
        return None

    def task_defaults(self):
        """Task arguments the checkpoint implies (e.g. the pooling of a
        sentence-transformers folder); ``from_preset`` applies those the
        task takes, explicit arguments win."""
        return {}

    def load_pretrained_head(self, task):
        """Loads the head weights of a foreign checkpoint into a new ``task``
        (e.g. the masked LM head of a Hugging Face BERT).

        The loader calls it after building a task from a source without a
        saved kzoo head. Sources that know no heads keep the task's fresh
        head.

        Returns:
            True when weights were loaded.
        """
        return False


class KzooPresetSource(PresetSource):
    """A folder written by ``save_to_preset``."""

    format_name = "kzoo preset"

    @classmethod
    def matches(cls, path):
        config = Path(path) / CONFIG_FILE
        if not config.is_file():
            # A tokenizer-only preset has tokenizer.json and no config.json.
            return (Path(path) / TOKENIZER_FILE).is_file()
        try:
            registered = read_json(config).get("registered_name") or ""
        except (PresetError, AttributeError):
            return False
        # "kzoo>BertBackbone", or a family outside kzoo ("package>Class"); not
        # a package whose folders a converter reads ("keras_hub>BertBackbone").
        package, sep, _ = registered.partition(">")
        return bool(sep) and package not in {
            p for c in _CONVERTERS for p in c.registered_packages}

    def _file(self, name, required=True):
        path = self.path / name
        if required and not path.is_file():
            raise PresetError(f"The preset folder {self.path} has no {name}.")
        return path

    def backbone_config(self):
        return read_json(self._file(CONFIG_FILE))

    def load_backbone_weights(self, backbone):
        weights.load_weights(backbone, self._file(WEIGHTS_FILE))

    def load_tokenizer(self, cls=None, **kwargs):
        config = read_json(self._file(TOKENIZER_FILE))
        config.setdefault("config", {}).update(kwargs)
        tokenizer = keras.saving.deserialize_keras_object(config)
        check_class(type(tokenizer), cls, "tokenizer", self.path)
        assets = self.path / TOKENIZER_ASSETS_DIR
        try:
            tokenizer.load_assets(str(assets))
        except (ValueError, OSError) as exc:
            raise PresetError(
                f"The tokenizer files in {assets} cannot be loaded: {exc} "
                "Save the tokenizer to the preset again "
                "(`tokenizer.save_to_preset`).") from exc
        return tokenizer

    def preprocessor_config(self):
        path = self._file(PREPROCESSOR_FILE, required=False)
        return read_json(path) if path.is_file() else None

    def task_config(self):
        path = self._file(TASK_FILE, required=False)
        return read_json(path) if path.is_file() else None

    def load_task_weights(self, task):
        """``model.weights.h5`` into the backbone, ``task.weights.h5`` into
        the head; either failing leaves both as they were."""
        inside = {id(v) for v in task.backbone.weights}
        head = [v for v in task.weights if id(v) not in inside]
        before = [keras.ops.convert_to_numpy(v) for v in head]
        weights.load_weights(
            task,
            self._file(TASK_WEIGHTS_FILE),
            objects_to_skip=weights.not_head(task),
        )
        try:
            self.load_backbone_weights(task.backbone)
        except BaseException:
            for variable, value in zip(head, before):
                variable.assign(value)
            raise

    def load_pretrained_head(self, task):
        """A masked LM built on a folder that holds another task with a
        masked-LM head (``BertPretrainer``: masked LM + next sentence) gets
        that head's weights; without one it keeps its fresh head and says
        so. Other tasks keep their fresh heads.

        Returns:
            True when a head was loaded.
        """
        head = getattr(task, "masked_lm_head", None)
        if head is None:
            return False
        saved_config = self.task_config()
        if saved_config is not None:
            saved_cls = keras.saving.get_registered_object(
                saved_config.get("registered_name"))
            saved = None
            if isinstance(saved_cls, type):
                from kzoo.presets.preset_loader import load_task

                saved = load_task(self, saved_cls)
            saved_head = getattr(saved, "masked_lm_head", None)
            if saved_head is not None:
                pairs = list(zip(head.weights, saved_head.weights))
                if len(head.weights) != len(saved_head.weights) or any(
                        tuple(a.shape) != tuple(b.shape) for a, b in pairs):
                    raise PresetError(
                        f"The masked LM head of the {saved_cls.__name__} in "
                        f"{self.path} does not fit this {type(task).__name__}'s "
                        "head; load the preset with its own task class.")
                for variable, value in pairs:
                    variable.assign(value)
                return True
        warnings.warn(f"{self.path} has no masked LM head: {NEW_HEAD_NOTE}.",
                      stacklevel=4)
        return False


#: converter source classes, tried in order after the kzoo format
_CONVERTERS = []


def register_converter(source_cls):
    """Registers a ``PresetSource`` subclass that reads a foreign format.

    Each family registers its converters in its ``__init__.py`` (e.g. the
    BERT family registers a reader of Hugging Face BERT folders). Returns
    the class.
    """
    if source_cls not in _CONVERTERS:
        _CONVERTERS.append(source_cls)
    return source_cls


def converters():
    return list(_CONVERTERS)


def source_for_file(path):
    """The source that reads a single-file checkpoint (word vectors), or a
    PresetError saying why none."""
    path = Path(path)
    for source_cls in _CONVERTERS:
        if getattr(source_cls, "reads_files", False) and source_cls.matches(path):
            return source_cls(path)
    names = ", ".join(c.format_name for c in _CONVERTERS
                      if getattr(c, "reads_files", False)) or "none registered"
    raise PresetError(
        f"{path} is a file that no converter reads (file formats: {names}); "
        "other presets are folders (kzoo preset, Hugging Face checkpoint "
        "folder, ...)."
    )


def source_for_folder(path):
    """The source that reads a local folder, or a PresetError saying why none."""
    path = Path(path)
    if KzooPresetSource.matches(path):
        return KzooPresetSource(path)
    for source_cls in _CONVERTERS:
        if source_cls.matches(path):
            return source_cls(path)
    if (path / CONFIG_FILE).is_file():
        read_json(path / CONFIG_FILE)  # a damaged config.json says so itself
    names = ", ".join(c.format_name for c in _CONVERTERS) or "none registered"
    listing = ", ".join(sorted(p.name for p in path.iterdir())[:12])
    raise PresetError(
        f"{path} is not a kzoo preset folder (no config.json with a Keras "
        f"registered_name such as 'kzoo>BertBackbone') nor a format a converter reads "
        f"(converters: {names}). It contains: {listing or 'nothing'}."
    )
