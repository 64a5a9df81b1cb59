"""TensorFlow SavedModel export: each object names its own signatures.

``saved_model(model, path)`` writes a SavedModel that TF Serving,
``tf.saved_model.load`` (after ``import tensorflow_text`` where the graph
tokenizes) and ``saved_model_cli run`` can all use. A task's
``serving_default`` takes raw strings (``text``, and ``text_pair`` for pair
tasks: a ``tf.string`` batch each) and tokenizes them inside the graph; it
returns the task's named outputs (a classifier: ``logits`` and
``probabilities``). ``version=N`` writes TF Serving's ``<path>/<N>/``
layout.

The protocol: ``saved_model`` knows no model family. It applies these
hooks, in this order, to every object it is given:

* ``serving_model()`` (optional): the object to write in its place, which
  then answers the hooks below (an ELMo backbone serves as its embedding
  with an equal mix; word vectors as a ``kzoo.export.word_table.WordTable``).
* ``serving_endpoints(sequence_length=None)`` (required): the signatures,
  ``{signature name: (fn, input_signature)}``, written exactly so (no
  ``serving_default`` alias is added). ``input_signature`` is a list of
  ``keras.InputSpec`` or ``tf.TensorSpec``, each named: the signature's
  input names. ``fn`` takes one tensor per spec and returns a dict of
  tensors: the signature's output names. Each ``fn`` is traced as
  ``tf.function(fn, input_signature, autograph=False)``, as Keras' own
  export does. ``sequence_length`` fixes the graph's sequence length where
  the object has one (None: its own). ``kzoo.models.Task`` gives the
  raw-text ``serving_default`` (``serving_input_names`` /
  ``serving_outputs``); a masked LM, a causal LM (``generate``), an ELMo
  embedding (TF-Hub's ``default`` and ``tokens``) and word tables give
  their own.
* ``serving_trackables()`` (optional): ``{name: trackable}``, the
  TensorFlow objects the endpoints read besides variables (a tokenizer's
  lookup tables), kept on the SavedModel's root under these names. The
  variables the endpoints read are found by tracing and kept with them.
* ``serving_method_names()`` (optional): ``{signature name: method name}``
  for signatures that are not predict signatures (a classifier's
  ``classify``: ``tensorflow/serving/classify``, TF Serving's Classify API).
* ``serving_warmup_inputs()`` (optional): ``{signature name: [{input name:
  nested list}, ...]}``, the requests written to
  ``assets.extra/tf_serving_warmup_requests`` (which the model server
  replays at load). A signature the object gives none for gets
  ``serving_warmup.default_warmup_inputs`` (an empty string, a word and a
  long text for string inputs). Each request is run before it is written;
  a guessed one that fails is left out, with a warning.

Any backend: a Keras object (a task, a model or a layer) is traced on the
TensorFlow backend, in process. JAX cannot trace string inputs and torch
cannot export at all in Keras 3.15, so there a TensorFlow-backed copy of it
(the same weights, so the same outputs) is exported in a subprocess
(``KERAS_BACKEND=tensorflow``): an object with ``save_to_preset`` (whose
class has ``from_preset``) travels as a preset, any other Keras layer as a
``.keras`` file. Any other object (a ``tf.Module`` such as a word table) is
plain TensorFlow and is exported in process on every backend.
``saved_models({path: model, ...})`` writes several, with one such
subprocess for all of them.
"""

import importlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile

import keras

from kzoo.export import serving_warmup
from kzoo.presets.atomic_files import replace_folder
from kzoo.preprocessing.engine import require_tensorflow

logger = logging.getLogger(__name__)


def saved_model(model, path, sequence_length=None, version=None):
    """Writes ``model`` as a TF SavedModel at ``path``.

    Args:
        model: a kzoo ``Task`` (with its preprocessor: the raw-text
            signature), or any object with ``serving_endpoints`` or
            ``serving_model`` (the protocol above).
        path: the SavedModel folder to write (replaced atomically); with
            ``version``, TF Serving's model base path.
        sequence_length: int. The fixed sequence length of the exported
            graph; defaults to the model's (its preprocessor's).
        version: int or None. Writes TF Serving's layout
            ``<path>/<version>/`` (the model server serves the highest
            version under ``path``); other versions there are kept.

    Returns:
        The folder written: ``path``, or ``<path>/<version>``.
    """
    return saved_models({path: model}, sequence_length, version)[0]


def saved_models(models, sequence_length=None, version=None):
    """Writes several objects as TF SavedModels, as ``saved_model`` writes
    each, and on JAX and torch exports all their TensorFlow-backed copies
    in one subprocess (TensorFlow and the tokenizers load once, not once
    per model).

    Args:
        models: dict, ``{path: model}``; each as ``saved_model``'s
            ``path`` and ``model``.
        sequence_length: int or None, for every model (``saved_model``).
        version: int or None, for every model (``saved_model``).

    Returns:
        The folders written, in the order of ``models``. Each folder is
        replaced atomically; the TensorFlow-backed copies are written all
        or none (a failed export leaves each of their folders as it was).
    """
    require_tensorflow("Exporting a SavedModel")
    if not isinstance(models, dict) or not models:
        raise ValueError(
            f"`models` must be a non-empty dict {{path: model}}, got "
            f"{type(models).__name__} {models!r:.80}.")
    jobs = []
    for path, model in models.items():
        path = os.path.abspath(os.fspath(versioned_path(path, version)))
        if path in (written for written, _, _ in jobs):
            raise ValueError(f"Two models would be written to the same folder {path}.")
        model = _serving_object(model)
        # Asked for here, on every backend: this checks that the model can
        # be exported (a task needs its preprocessor) before anything is
        # written.
        jobs.append((path, model, model.serving_endpoints(sequence_length)))
    through_tensorflow = keras.config.backend() != "tensorflow"
    copies = [job for job in jobs
              if through_tensorflow and isinstance(job[1], keras.layers.Layer)]
    if copies:
        _export_through_tensorflow(copies, sequence_length)
    for path, model, endpoints in jobs:
        if not any(path == copy[0] for copy in copies):
            write_saved_model(
                path, lambda tmp, model=model, endpoints=endpoints: write_endpoints(
                    model, endpoints, tmp))
    return [path for path, _, _ in jobs]


def _serving_object(model):
    serving_model = getattr(model, "serving_model", None)
    if serving_model is not None:
        model = serving_model()
    if not hasattr(model, "serving_endpoints"):
        raise TypeError(
            f"`model` must be a kzoo Task or another object with a "
            f"`serving_endpoints(sequence_length)` method (see "
            f"`kzoo.export.saved_model`), got {type(model).__name__}.")
    return model


def versioned_path(path, version):
    """``path``, or TF Serving's ``<path>/<version>`` when ``version`` is set."""
    if version is None:
        return path
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ValueError(
            f"`version` must be a non-negative int (TF Serving's version "
            f"folder name), got {version!r}.")
    return os.path.join(os.fspath(path), str(version))


def write_saved_model(path, export_in_process, export_through_tensorflow=None):
    """Writes a SavedModel folder atomically, on any backend.

    ``export_in_process(tmp)`` runs on the TensorFlow backend (and on every
    backend when ``export_through_tensorflow`` is None),
    ``export_through_tensorflow(tmp)`` (a TensorFlow-backed copy in a
    subprocess) on the others; either writes into a fresh temporary folder
    beside ``path``, which then replaces ``path``. On failure ``path`` is
    left as it was.

    Returns:
        The absolute ``path``.
    """
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.tmp-", dir=parent)
    try:
        if (keras.config.backend() == "tensorflow"
                or export_through_tensorflow is None):
            export_in_process(tmp)
        else:
            export_through_tensorflow(tmp)
        replace_folder(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def write_endpoints(model, endpoints, path):
    """Traces ``endpoints`` (``model.serving_endpoints(...)``) and writes
    them, with the variables they read and ``model.serving_trackables()``,
    as a SavedModel in ``path``, in this process (on the TensorFlow backend
    for a Keras object)."""
    import tensorflow as tf

    # An AutoTrackable, as Keras' ExportArchive uses: a tf.Module's
    # `variables` is a read-only property.
    root = tf.__internal__.tracking.AutoTrackable()
    signatures = {}
    for name, (fn, input_signature) in endpoints.items():
        specs = [_tensor_spec(spec) for spec in input_signature]
        function = tf.function(fn, input_signature=specs, autograph=False)
        setattr(root, name, function)
        signatures[name] = function.get_concrete_function()
    # The variables the endpoints read, so that both loaders find them: TF2's
    # tf.saved_model.load and TF1 sessions (saved_model_cli, TF Serving).
    trainable, other = {}, {}
    for concrete in signatures.values():
        for variable in concrete.trainable_variables:
            trainable.setdefault(id(variable), variable)
        for variable in concrete.variables:
            if id(variable) not in trainable:
                other.setdefault(id(variable), variable)
    root.trainable_variables = list(trainable.values())
    root.non_trainable_variables = list(other.values())
    root.variables = root.trainable_variables + root.non_trainable_variables
    trackables = getattr(model, "serving_trackables", None)
    for name, trackable in (trackables() if trackables else {}).items():
        setattr(root, name, trackable)
    tf.saved_model.save(root, path, signatures=signatures)
    method_names = getattr(model, "serving_method_names", None)
    methods = method_names() if method_names else {}
    if methods:
        serving_warmup.set_method_names(path, methods)
    requests, defaults = warmup_requests(model, signatures)
    serving_warmup.write_warmup_requests(path, signatures, requests, methods, defaults)


def warmup_requests(model, signatures):
    """``({signature: [inputs]}, defaults)``: the object's
    ``serving_warmup_inputs()`` where it gives them, else
    ``serving_warmup.default_warmup_inputs`` (those signatures are in
    ``defaults``)."""
    given = getattr(model, "serving_warmup_inputs", None)
    requests = dict(given()) if given else {}
    defaults = set()
    for name, function in signatures.items():
        if name not in requests:
            inputs = serving_warmup.default_warmup_inputs(
                serving_warmup.input_specs(function))
            if inputs:
                requests[name] = inputs
                defaults.add(name)
    return requests, defaults


def _tensor_spec(spec):
    import tensorflow as tf

    if isinstance(spec, tf.TensorSpec):
        return spec
    if isinstance(spec, keras.InputSpec):
        return tf.TensorSpec(spec.shape, spec.dtype, name=spec.name)
    raise TypeError(
        f"An endpoint's input_signature holds keras.InputSpec or tf.TensorSpec "
        f"items, got {type(spec).__name__}.")


def _export_through_tensorflow(jobs, sequence_length):
    """Writes ``jobs`` (``(path, model, endpoints)``) from TensorFlow-backed
    copies, all in one subprocess; each folder replaced once all are
    written."""
    backend = keras.config.backend()
    for _, model, _ in jobs:
        logger.warning(
            "The %s backend cannot write a SavedModel with string inputs; kzoo "
            "exports a TensorFlow-backed copy of the %s (same weights) in a "
            "subprocess.", backend, type(model).__name__,
        )
    tmps = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            command = [sys.executable, "-m", "kzoo.export"]
            if sequence_length is not None:
                command += ["--sequence-length", str(sequence_length)]
            for i, (path, model, _) in enumerate(jobs):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                tmps.append(tempfile.mkdtemp(
                    prefix=f".{os.path.basename(path)}.tmp-", dir=os.path.dirname(path)))
                copy = _save_copy(model, os.path.join(folder, str(i)))
                cls = type(model)
                command += [f"{cls.__module__}:{cls.__qualname__}", copy, tmps[-1]]
            env = dict(os.environ, KERAS_BACKEND="tensorflow")
            result = subprocess.run(command, env=env, capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(
                    "Exporting through a TensorFlow-backed copy failed:\n"
                    + result.stderr[-3000:]
                )
        for tmp, (path, _, _) in zip(tmps, jobs):
            replace_folder(tmp, path)
    except BaseException:
        for tmp in tmps:
            shutil.rmtree(tmp, ignore_errors=True)
        raise


def _save_copy(model, folder):
    """Saves ``model`` for a TensorFlow-backed process to rebuild: a preset
    folder when it has ``save_to_preset`` (and its class ``from_preset``),
    else a ``.keras`` file holding it."""
    os.makedirs(folder, exist_ok=True)
    if hasattr(model, "save_to_preset") and hasattr(type(model), "from_preset"):
        preset = os.path.join(folder, "preset")
        model.save_to_preset(preset)
        return preset
    saved = os.path.join(folder, "model.keras")
    keras.saving.save_model(model, saved)  # any Keras layer, built
    return saved


def _load_copy(cls, copy):
    if copy.endswith(".keras"):
        # Safe mode: a file that would run saved Python code (a Lambda
        # layer's bytecode) is refused, whoever wrote it.
        return keras.saving.load_model(copy, safe_mode=True)
    return cls.from_preset(copy)


def main(argv):
    """``python -m kzoo.export [--sequence-length N] MODULE:CLASS COPY PATH
    [MODULE:CLASS COPY PATH ...]``: rebuilds each ``CLASS`` object saved in
    its ``COPY`` (a preset folder or a ``.keras`` file) and writes its
    SavedModel to its ``PATH`` (TensorFlow backend)."""
    import kzoo.models  # noqa: F401  (registers kzoo's classes)

    sequence_length = None
    if argv[:1] == ["--sequence-length"]:
        sequence_length, argv = int(argv[1]), argv[2:]
    if not argv or len(argv) % 3:
        raise SystemExit(
            "usage: python -m kzoo.export [--sequence-length N] "
            "MODULE:CLASS COPY PATH [MODULE:CLASS COPY PATH ...]")
    for i in range(0, len(argv), 3):
        module, _, qualname = argv[i].partition(":")
        cls = importlib.import_module(module)  # registers the class and its parts
        for name in qualname.split("."):
            cls = getattr(cls, name)
        model = _load_copy(cls, argv[i + 1])
        write_endpoints(model, model.serving_endpoints(sequence_length), argv[i + 2])
