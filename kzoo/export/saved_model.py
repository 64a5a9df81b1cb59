"""TensorFlow SavedModel export with tokenization inside the graph.

``saved_model(task, path)`` writes a SavedModel whose ``serving_default``
signature takes raw strings (``text``, and ``text_pair`` for pair tasks: a
``tf.string`` batch each) and returns the task's named outputs (a classifier:
``logits`` and ``probabilities``). TF Serving, ``tf.saved_model.load`` (after
``import tensorflow_text``) and ``saved_model_cli run`` can all use it.
Each task names its inputs and outputs (``serving_input_names`` /
``serving_outputs``, or its own ``serving_endpoints``: a masked LM reads the
mask token written in the text, a causal LM adds ``generate``); word vectors
(``WordVectors`` or a word2vec task) look words up. ``version=N`` writes TF
Serving's ``<path>/<N>/`` layout.

Any backend: on TensorFlow the task is exported in-process. JAX cannot
trace string inputs and torch cannot export at all in Keras 3.15, so there
the task is saved as a preset and a TensorFlow-backed copy is rebuilt and
exported in a subprocess (``KERAS_BACKEND=tensorflow``); the weights are the
same numbers, so the outputs match the original model.
"""

import logging
import os
import shutil
import subprocess
import sys
import tempfile

import keras

from kzoo.preprocessing.engine import require_tensorflow

logger = logging.getLogger(__name__)


def saved_model(task, path, sequence_length=None, version=None):
    """Writes ``task`` (with its preprocessor) as a TF SavedModel at ``path``.

    Args:
        task: a kzoo ``Task`` with a preprocessor, or word vectors: a
            ``WordVectors`` or a word2vec task (then the signatures look
            words up: see ``kzoo.export.word_vectors.export_word_vectors``).
        path: the SavedModel folder to write (replaced atomically); with
            ``version``, TF Serving's model base path.
        sequence_length: int. The fixed sequence length of the exported
            graph; defaults to the preprocessor's.
        version: int or None. Writes TF Serving's layout
            ``<path>/<version>/`` (the model server serves the highest
            version under ``path``); other versions there are kept.

    Returns:
        The folder written: ``path``, or ``<path>/<version>``.
    """
    require_tensorflow("Exporting a SavedModel")
    from kzoo.export.word_vectors import export_word_vectors
    from kzoo.models.task import Task
    from kzoo.models.word2vec.word2vec_task import Word2VecTask
    from kzoo.models.word2vec.word_vectors import WordVectors

    path = versioned_path(path, version)
    if isinstance(task, WordVectors):
        return write_saved_model(path, lambda tmp: export_word_vectors(task, tmp))
    if isinstance(task, Word2VecTask):  # the vectors, looked up as trained
        lowercase = bool(getattr(task.preprocessor.tokenizer, "lowercase", False))
        vectors = task.word_vectors()
        return write_saved_model(
            path, lambda tmp: export_word_vectors(vectors, tmp, lowercase=lowercase))
    if not isinstance(task, Task):
        raise TypeError(
            f"`task` must be a kzoo Task or WordVectors, got {type(task).__name__}.")
    if getattr(task, "preprocessor", None) is None:
        raise ValueError(
            "Export needs the task's preprocessor (tokenization runs inside "
            "the exported graph): build the task with `preprocessor=`."
        )
    return write_saved_model(
        path,
        lambda tmp: _export_in_process(task, tmp, sequence_length),
        lambda tmp: _export_through_tensorflow(task, tmp, sequence_length),
    )


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
        if os.path.exists(path):
            shutil.rmtree(path)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def _export_in_process(task, path, sequence_length):
    import tensorflow as tf

    preprocessor = task.preprocessor
    if sequence_length is not None and sequence_length != getattr(
        preprocessor, "sequence_length", sequence_length
    ):
        config = preprocessor.get_config()
        config.update(sequence_length=sequence_length, tokenizer=preprocessor.tokenizer)
        preprocessor = type(preprocessor).from_config(config)
    names = task.serving_input_names()

    # keras' ExportArchive tracks the variables so that both loaders work:
    # TF2's tf.saved_model.load and TF1 sessions (saved_model_cli, Serving).
    archive = keras.export.ExportArchive()
    archive.track(task)
    # The tokenizer's tables and models are TF objects: track them too.
    archive._tf_trackable.preprocessor = preprocessor
    archive._tf_trackable.tokenizer = preprocessor.tokenizer

    def serve(*texts):
        x = preprocessor(texts if len(texts) > 1 else texts[0])
        outputs = task.serving_outputs(task(x, training=False))
        return {k: tf.convert_to_tensor(v) for k, v in outputs.items()}

    # A task may define its own signatures (a causal LM: token ids in,
    # next-token logits out) instead of the raw-text serving_default.
    endpoints = (task.serving_endpoints(sequence_length)
                 if hasattr(task, "serving_endpoints") else None)
    if endpoints is None:
        endpoints = {"serving_default": (
            serve, [tf.TensorSpec([None], tf.string, name=n) for n in names])}
    for name, (fn, input_signature) in endpoints.items():
        archive.add_endpoint(name, fn, input_signature=input_signature)
    archive.write_out(path, verbose=False)


def _export_through_tensorflow(task, path, sequence_length):
    backend = keras.config.backend()
    logger.warning(
        "The %s backend cannot write a SavedModel with string inputs; kzoo "
        "saves the task as a preset and exports a TensorFlow-backed copy of it "
        "(same weights) in a subprocess.", backend,
    )
    with tempfile.TemporaryDirectory() as tmp:
        preset = os.path.join(tmp, "preset")
        task.save_to_preset(preset)
        command = [sys.executable, "-m", "kzoo.export", preset, path]
        if sequence_length is not None:
            command.append(str(sequence_length))
        env = dict(os.environ, KERAS_BACKEND="tensorflow")
        result = subprocess.run(command, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(
                "Exporting through a TensorFlow-backed copy failed:\n"
                + result.stderr[-3000:]
            )


def main(argv):
    """``python -m kzoo.export PRESET PATH [SEQUENCE_LENGTH]`` (TF backend)."""
    import kzoo.models  # noqa: F401  (registers the classes)
    from kzoo.presets import preset_loader
    from kzoo.presets.preset_source import read_json

    preset, path = argv[0], argv[1]
    sequence_length = int(argv[2]) if len(argv) > 2 else None
    task_config = read_json(os.path.join(preset, "task.json"))
    task_cls = keras.saving.get_registered_object(task_config["registered_name"])
    task = preset_loader.load_task(preset, cls=task_cls)
    _export_in_process(task, path, sequence_length)
