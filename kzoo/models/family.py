"""Family records: what the generic parts of kzoo need to know of a family.

The ``kzoo`` command, the training recipes, ``kzoo.analysis`` and
``kzoo.export`` name no model family. Each family registers one ``Family``
in its package's ``__init__.py`` (next to its converters), and those parts
read the registry: which backbones and foreign formats are its, how
``kzoo pretrain`` builds and trains it, which task fills each generic task
shape (``TextClassifier`` → ``BertClassifier``), how ``kzoo embed`` and
``kzoo.analysis`` get vectors from it, and what ``kzoo export`` writes.

A family outside kzoo registers the same way; the ``kzoo`` command imports
the modules named in ``KZOO_FAMILIES`` (comma-separated) and those of the
``kzoo.families`` entry-point group before it reads the registry.

Example:
>>> get_family("bert").task(kzoo.models.TextClassifier).__name__
'BertClassifier'
>>> family_of(kzoo.models.WordVectors(np.eye(2), ["a", "b"])).name
'word2vec'
"""

import dataclasses
import importlib
import os
from collections.abc import Callable, Mapping

#: the modules of families outside kzoo that the registry imports
FAMILIES_ENV = "KZOO_FAMILIES"
ENTRY_POINT_GROUP = "kzoo.families"

_REGISTRY = {}
_plugins_loaded = False


@dataclasses.dataclass(frozen=True)
class Pretraining:
    """How ``kzoo pretrain <family>`` trains a family from plain text.

    Args:
        build: ``build(documents, options) -> (task, fit_kwargs)``.
            ``documents`` is a list of documents, each a list of lines;
            ``options`` has an attribute per ``kzoo pretrain`` option (the
            family's ``defaults`` filled in). ``fit_kwargs`` go to
            ``kzoo.training.resumable_fit``: ``data_for_epoch`` (a function
            of the epoch) or ``data`` (one stream), plus ``fit`` arguments.
        defaults: the family's values for the shared options
            (``batch_size``, ``learning_rate``, ``vocabulary_size``,
            ``sequence_length``, ``hidden_dim``, ``num_layers``,
            ``num_heads``) where the user gives none; None: no default.
        add_arguments: ``add_arguments(group)`` adds the family's own
            options to an ``argparse`` group (ELMo's ``--projection-dim``).
        evaluate: ``evaluate(task, documents, batch_size) -> str``: the
            held-out measure of the trained task on documents, cut as the
            recipe cuts them (``kzoo evaluate --corpus``); None: none.
        task: the task class ``build`` returns (what ``evaluate`` takes).
        example: a ``kzoo pretrain`` command line for the help text.
        continue_from: ``continue_from(preset, documents, options) ->
            (task, fit_kwargs, evaluate)``: ``kzoo pretrain --from PRESET``,
            continued pretraining. The task comes from the preset (its
            tokenizer, config and weights; a new head where it has none),
            compiled; ``fit_kwargs`` as ``build``'s; ``evaluate`` as
            above, for the task it returns (the held-out measure printed
            before and after training). ``options``' size options are None
            (the preset sets them) and so are ``learning_rate`` and
            ``sequence_length`` where the user gave none. None: the family
            cannot continue from a preset.
        prepare: a ``kzoo.data.Preparation``: how ``kzoo prepare`` turns a
            corpus into this family's tokenizer and token shards; None: the
            family trains from text in memory only.
        from_shards: ``from_shards(shards, options) -> (task, fit_kwargs)``:
            ``kzoo pretrain --data``, training streamed from a
            ``kzoo.data.TokenShards`` (the tokenizer is the shards'). Its
            ``fit_kwargs`` go to ``resumable_fit``: ``batches_for_epoch``
            (a function of the epoch and the first batch, for a run that
            resumes mid-epoch) or ``data``, plus ``fit`` arguments.
        held_out: ``held_out(task, documents, batch_size) -> dict`` of
            floats: the numbers behind ``evaluate`` (``{"loss": ..,
            "perplexity": ..}``), for code that compares families
            (``kzoo.analysis.compare``); None: none.
        budget_options: ``budget_options(minutes) -> dict``: the model-size
            options (``kzoo pretrain`` option names) for a training budget
            of ``minutes`` on a 2-core CPU, chosen alike across families so
            that ``kzoo compare`` trains them at comparable sizes; None: the
            ``defaults``.
    """

    build: Callable
    defaults: Mapping = dataclasses.field(default_factory=dict)
    add_arguments: Callable | None = None
    evaluate: Callable | None = None
    task: type | None = None
    example: str = ""
    continue_from: Callable | None = None
    prepare: object | None = None
    from_shards: Callable | None = None
    held_out: Callable | None = None
    budget_options: Callable | None = None


@dataclasses.dataclass(frozen=True)
class Family:
    """One model family, as the generic parts of kzoo see it.

    Args:
        name: the short name (``"bert"``): ``kzoo pretrain bert``.
        title: the name in messages (``"BERT"``).
        backbones: its backbone classes (a preset whose backbone is one of
            them is this family's).
        converters: its ``PresetSource`` classes for foreign formats (each
            registered with ``register_converter``; a preset they read is
            this family's).
        tasks: its task classes; ``task(TextClassifier)`` picks the one
            that fills a generic task shape.
        classes: other classes whose objects are this family's
            (``WordVectors``, ``ElmoEmbedder``).
        pretraining: a ``Pretraining``, or None.
        embed: ``embed(preset, texts, batch_size, sequence_length)`` →
            float array ``[len(texts), dim]``: ``kzoo embed``'s vectors.
        word_vectors: ``word_vectors(preset)`` → a ``WordVectors``, for
            a family of static vectors (``kzoo similar``, the word-vector
            benchmarks of ``kzoo evaluate``).
        word_in_context: ``word_in_context(model, batch_size)`` → a
            ``kzoo.analysis.WordInContext``; ``model`` is one of the
            family's objects or a preset (name or path).
        export: ``export(preset)`` → the object ``kzoo export`` writes
            (anything ``kzoo.export.saved_model`` takes); None: the
            preset's task.
        hugging_face: ``hugging_face(model, path, tokenizer=None)`` writes
            one of the family's objects as a Hugging Face (transformers)
            folder (``kzoo export --format transformers``); None: it has
            no transformers equivalent.
        published: when the family's paper appeared, ``"YYYY-MM"``
            (``"2013-01"`` for word2vec): the order in which comparisons
            list the families; "" sorts after the dated ones.
        keras_hub: ``keras_hub(model, path, tokenizer=None)`` writes one of
            the family's objects as a keras-hub preset folder (``kzoo export
            --format keras-hub``); None: keras-hub has no equivalent.
    """

    name: str
    title: str
    backbones: tuple
    converters: tuple = ()
    tasks: tuple = ()
    classes: tuple = ()
    pretraining: Pretraining | None = None
    embed: Callable | None = None
    word_vectors: Callable | None = None
    word_in_context: Callable | None = None
    export: Callable | None = None
    hugging_face: Callable | None = None
    keras_hub: Callable | None = None
    published: str = ""

    def task(self, shape):
        """This family's task class that is a ``shape`` (a generic task
        class such as ``kzoo.models.TextClassifier``), or ``shape`` itself
        when it is already one of the family's own."""
        if shape in self.tasks:
            return shape
        found = [cls for cls in self.tasks if issubclass(cls, shape)]
        if not found:
            have = sorted(f.title for f in families() if f.tasks_of(shape))
            raise ValueError(
                f"{self.title} has no {shape.__name__}; "
                + (f"the families with one: {', '.join(have)}." if have
                   else "no registered family has one."))
        return found[0]

    def tasks_of(self, shape):
        """This family's task classes that are a ``shape``."""
        return [cls for cls in self.tasks if issubclass(cls, shape)]

    def owns(self, obj):
        """Whether ``obj`` (a model, task, backbone or one of ``classes``;
        or such a class) is this family's."""
        cls = obj if isinstance(obj, type) else type(obj)
        if issubclass(cls, self.backbones + self.tasks + self.classes):
            return True
        backbone = getattr(obj, "backbone", None)
        return backbone is not None and isinstance(backbone, self.backbones)


def lazy(path):
    """A function that imports ``"module:name"`` on its first call and
    calls it: a record names its adapters without importing them (so
    ``import kzoo.models`` stays light).

    Example:
    >>> lazy("os.path:join")("a", "b")
    'a/b'
    """
    module, _, name = path.partition(":")
    if not module or not name:
        raise ValueError(f"`path` must be 'module:name', got {path!r}.")

    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{path}`` (imported on the first call)."
    return call


def register_family(family):
    """Adds ``family`` to the registry (registering a name again replaces
    the record: a module reloaded).

    Returns:
        ``family``.
    """
    if not isinstance(family, Family):
        raise TypeError(f"`family` must be a kzoo.models.Family, got "
                        f"{type(family).__name__}.")
    _REGISTRY[family.name] = family
    return family


def load_plugins():
    """Imports the families outside kzoo: the modules in ``KZOO_FAMILIES``
    (comma-separated; read at every call) and the ``kzoo.families`` entry
    points (once per process). A module that fails to import raises,
    naming it."""
    global _plugins_loaded
    import kzoo.models  # noqa: F401  (kzoo's own families first)

    names = [n.strip() for n in os.environ.get(FAMILIES_ENV, "").split(",") if n.strip()]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            raise ImportError(
                f"{FAMILIES_ENV} names the module {name!r}, which does not import "
                f"({error}). Put its folder on PYTHONPATH or fix the name.") from error
    if not _plugins_loaded:
        _plugins_loaded = True
        from importlib.metadata import entry_points

        for entry in entry_points(group=ENTRY_POINT_GROUP):
            entry.load()


def families():
    """Every registered ``Family``, kzoo's and the plugins', by name."""
    load_plugins()
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def get_family(name):
    """The ``Family`` registered as ``name``; a ``ValueError`` lists the
    names there are."""
    load_plugins()
    if name not in _REGISTRY:
        raise ValueError(f"No model family {name!r}; the families: "
                         f"{', '.join(sorted(_REGISTRY))}.")
    return _REGISTRY[name]


def family_of(obj):
    """The ``Family`` of a model, task, backbone or other family object (or
    class); a ``TypeError`` when none owns it."""
    for family in families():
        if family.owns(obj):
            return family
    raise TypeError(f"{type(obj).__name__} belongs to no registered model family "
                    f"({', '.join(f.name for f in families())}).")


def family_of_preset(preset):
    """The ``Family`` of a preset (registered name, folder, or a file a
    converter reads): the family whose converter reads it, else the one
    whose backbone it holds; ``ValueError`` when none."""
    from kzoo.presets.preset_loader import get_source

    source = get_source(preset)
    records = families()
    for family in records:
        if isinstance(source, family.converters):
            return family
    config = source.backbone_config() or {}
    name = config.get("registered_name", "")
    for family in records:
        for backbone in family.backbones:
            if name in (_registered_name(backbone), backbone.__name__):
                return family
    raise ValueError(f"{preset} holds a {name.split('>')[-1] or 'model'} backbone, "
                     f"which no registered family has "
                     f"({', '.join(f.name for f in records)}).")


def _registered_name(cls):
    import keras

    return keras.saving.get_registered_name(cls)
