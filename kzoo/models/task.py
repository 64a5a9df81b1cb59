"""Base class of every kzoo task: backbone + head (+ preprocessor)."""

import contextlib
import json
import warnings

import keras
import numpy as np

from kzoo.ops import memory as kzoo_memory
from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.layers.vocabulary_mask import VocabularyMask
from kzoo.models.model_lock import locked
from kzoo.preprocessing.batches import (
    PreprocessedBatches,
    RawBatches,
    num_examples,
)
from kzoo.preprocessing.engine import (
    data_engine,
    engine_scope,
    is_tensorflow_value,
)
from kzoo.preprocessing.pipeline import prefetched
from kzoo.preprocessing.preprocessing_layer import to_tf, use_python
from kzoo.presets import preset_loader, preset_saver


def _is_dataset(x):
    """True for a ``tf.data.Dataset`` (False, without importing TensorFlow,
    when TensorFlow is not imported)."""
    return is_tensorflow_value(x) and isinstance(x, tf.data.Dataset)


def _is_raw_text(x):
    """True when ``x`` holds strings (a task then needs its preprocessor)."""
    leaves = tf.nest.flatten(x) if is_tensorflow_value(x) else keras.tree.flatten(x)
    if not leaves:
        return False
    leaf = leaves[0]
    if isinstance(leaf, (str, bytes)):
        return True
    if isinstance(leaf, np.ndarray):
        return leaf.dtype.kind in "USO"
    if is_tensorflow_value(leaf) and isinstance(
            leaf, (tf.Tensor, tf.RaggedTensor, tf.TensorSpec, tf.RaggedTensorSpec)):
        return leaf.dtype == tf.string
    if isinstance(leaf, (list, tuple)) and leaf:
        return _is_raw_text(leaf[0])
    return False


def _is_empty(x):
    """True when ``x`` (or any of its members) holds no examples."""
    if isinstance(x, dict):
        x = tuple(x.values())
    if isinstance(x, tuple):
        return bool(x) and any(_is_empty(leaf) for leaf in x)
    if isinstance(x, list):
        return len(x) == 0
    shape = getattr(x, "shape", None)  # numpy, TF or backend tensors
    return shape is not None and len(shape) > 0 and shape[0] == 0


def _has_text(x):
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, np.ndarray) and x.dtype == object:
        x = x.tolist()
    return isinstance(x, (list, tuple)) and any(
        isinstance(v, (str, bytes)) for v in keras.tree.flatten(x))


def _check_text_items(x, where="the text batch", strict=False):
    """A TypeError naming the first item of a text batch that is not text.

    A batch is text when it holds a str somewhere (with ``strict``, the
    caller knows it is: a segment of a pair whose other segment is text).
    """
    if isinstance(x, (dict, tuple)):
        strict = strict or _has_text(x)
        items = x.items() if isinstance(x, dict) else enumerate(x)
        for key, value in items:
            _check_text_items(value, f"`{key}`" if isinstance(x, dict)
                              else f"segment {key} of the text batch", strict)
        return
    if isinstance(x, np.ndarray) and x.dtype == object:
        x = x.tolist()
    if not isinstance(x, list) or not (strict or _has_text(x)):
        return
    for i, item in enumerate(x):
        if isinstance(item, (list, tuple)):  # a sentence given as words
            bad = [w for w in item if not isinstance(w, (str, bytes))]
            if bad:
                raise TypeError(
                    f"Item {i} of {where} holds {type(bad[0]).__name__} "
                    f"{bad[0]!r}: every word must be a str.")
        elif not isinstance(item, (str, bytes)):
            raise TypeError(
                f"Item {i} of {where} is {type(item).__name__} {item!r}, not a "
                "str: every item must be a str (use \"\" for an empty text).")


def _check_not_empty(x, method):
    """A clear error for an empty batch (Keras fails deep inside otherwise)."""
    if isinstance(x, dict):
        x = tuple(x.values())
    for leaf in x if isinstance(x, tuple) else (x,):
        if isinstance(leaf, (tuple, dict)):
            _check_not_empty(leaf, method)
        elif isinstance(leaf, (list, np.ndarray)) and len(leaf) == 0:
            raise ValueError(
                f"`{method}` got an empty batch (no examples). Pass at least "
                "one example, e.g. a list with one string."
            )


def tokenizer_vocabulary_mask(backbone, preprocessor, task_name):
    """The ``VocabularyMask`` a vocabulary head needs, or None.

    A task that predicts token ids (a causal or masked LM) may only predict
    ids its tokenizer can turn back into text. When the backbone's token
    embedding has more rows than the tokenizer has tokens (a checkpoint
    padded to a multiple of 64 or 128), the extra ids are masked out of the
    logits, with a warning; fewer rows than tokens is an error, since some
    token ids would have no embedding. Without a preprocessor (or its
    tokenizer) there is nothing to check and no mask.
    """
    tokenizer = getattr(preprocessor, "tokenizer", None)
    if tokenizer is None:
        return None
    if getattr(tokenizer, "vocabulary", None) is None:
        # Loading a saved task: the tokenizer's vocabulary (an asset) comes
        # after the model is built, so the mask reads its size when called.
        # The sizes were checked when the task was first built.
        return VocabularyMask(tokenizer, name="vocabulary_mask")
    num_tokens = tokenizer.vocabulary_size()
    num_ids = backbone.token_embedding.input_dim
    if num_ids < num_tokens:
        raise ValueError(
            f"The tokenizer has {num_tokens} tokens but the backbone's token "
            f"embedding only {num_ids} rows: token ids {num_ids} to "
            f"{num_tokens - 1} would have no embedding. Build the backbone "
            f"with vocabulary_size={num_tokens} (tokenizer.vocabulary_size()) "
            "or more, or use the tokenizer the backbone was trained with.")
    if num_ids == num_tokens:
        return None
    warnings.warn(
        f"{task_name}: the backbone has {num_ids} token ids but the tokenizer "
        f"only {num_tokens}; ids {num_tokens} to {num_ids - 1} have no text, so "
        "their logits are masked out (never predicted or generated).",
        stacklevel=3)
    return VocabularyMask(num_tokens, name="vocabulary_mask")


def _is_ragged(x):
    """True for a Python list of sequences of different lengths."""
    return (isinstance(x, list) and bool(x)
            and all(isinstance(v, (list, tuple, np.ndarray)) for v in x)
            and len({len(v) for v in x}) > 1)


def _as_slices(x):
    if isinstance(x, dict):
        return {k: _as_slices(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(_as_slices(v) for v in x)
    if isinstance(x, (list, np.ndarray)) and _is_raw_text(x):
        if isinstance(x, list) and x and isinstance(x[0], (list, tuple)):
            return to_tf([list(v) for v in x], "string")  # words: ragged
        return tf.constant(np.asarray(x, dtype=object).tolist(), dtype=tf.string)
    if isinstance(x, (tf.Tensor, tf.RaggedTensor)):
        return x
    if _is_ragged(x):  # e.g. one label per word: ragged, which tf.data slices
        return to_tf([list(v) for v in x])
    return np.asarray(x)


def _repeated(dataset):
    """``dataset`` repeated, and its batches per epoch (None: left as is).

    Given ``steps_per_epoch``, Keras keeps one iterator for the whole ``fit``
    instead of a new one each epoch, whose first batch pays for setting up
    the tokenizer's graph again (a pause for WordPiece). A shuffled
    dataset is reshuffled on each repetition, as on each new iterator.
    """
    batches = int(dataset.cardinality())
    if batches <= 0:  # unknown, infinite or empty: Keras' own handling
        return dataset, None
    return dataset.repeat(), batches


@kzoo_export("kzoo.models.Task")
class Task(keras.Model):
    """A backbone with a head, a default ``compile()`` and a preprocessor.

    ``fit``, ``evaluate`` and ``predict`` take raw data when the task has a
    preprocessor: Python lists or numpy arrays of strings (with labels), or a
    ``tf.data.Dataset`` of raw batches. With the TensorFlow preprocessing
    engine the preprocessor is mapped over the data in ``tf.data``; with the
    Python engine (TensorFlow not installed, or chosen: see
    ``kzoo.preprocessing.engine``) a ``keras.utils.PyDataset`` runs it in
    worker threads. Already preprocessed tensors pass straight to the model
    when ``preprocessor`` is None.

    Subclasses build a functional model (``backbone`` and head layers first,
    then ``super().__init__(inputs=..., outputs=...)``), set
    ``backbone_cls`` / ``preprocessor_cls`` and extend ``get_config``.
    """

    backbone_cls = None
    preprocessor_cls = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

    def __setattr__(self, name, value):
        # See Backbone.__setattr__: torch refuses submodules before
        # Module.__init__, and tasks assign their layers first.
        try:
            super().__setattr__(name, value)
        except (AttributeError, RuntimeError):
            object.__setattr__(self, name, value)

    def make_train_function(self, force=False):
        # With KZOO_MALLOC_TUNING=1 on PyTorch, let malloc keep the step's
        # freed CPU memory for the next step (`kzoo.ops.memory`; by default
        # nothing).
        kzoo_memory.tune_malloc_if_asked()
        return super().make_train_function(force=force)

    # --- config ---
    def get_config(self):
        config = {
            "backbone": keras.layers.serialize(self.backbone),
            "preprocessor": (
                keras.layers.serialize(self.preprocessor)
                if getattr(self, "preprocessor", None) is not None
                else None
            ),
            "name": self.name,
            "trainable": self.trainable,
        }
        quantized_head = self._quantized_head()
        if quantized_head:
            config["quantized_head"] = quantized_head
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        quantized_head = config.pop("quantized_head", None)
        for key in ("backbone", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = keras.layers.deserialize(config[key])
        task = cls(**config)
        if quantized_head:
            task._quantize_head(quantized_head)
        return task

    # --- quantization ---
    def quantize(self, mode=None, config=None, **kwargs):
        """Keras' post-training quantization of the backbone's and the
        head's dense and embedding layers (see ``Backbone.quantize``: the
        same modes and ``config``). ``save_to_preset`` / ``from_preset``
        round-trip both: the backbone's config records its layers' policies,
        the task's config the quantized head layers."""
        from kzoo.models.backbone import quantize_model

        quantize_model(self, super().quantize, self.backbone.quantization_modes,
                       mode, config, **kwargs)

    def _head_layers(self):
        inside = {id(layer) for layer in self.backbone._flatten_layers()}
        return [layer for layer in self._flatten_layers(include_self=False)
                if id(layer) not in inside]

    def _quantized_head(self):
        """``{layer path: {"mode", "config"}}`` for the head's quantized
        layers (the head is built from the backbone's float policy)."""
        return {
            layer.path: {
                "mode": layer.quantization_mode,
                "config": keras.saving.serialize_keras_object(
                    getattr(layer, "quantization_config", None)),
            }
            for layer in self._head_layers()
            if getattr(layer, "quantization_mode", None) is not None}

    def _quantize_head(self, quantized_head):
        """Quantizes the head layers a saved config names, as they were: their
        variables take the int8 layout, for the saved weights to load into."""
        layers = {layer.path: layer for layer in self._head_layers() if layer.path}
        unknown = sorted(set(quantized_head) - set(layers))
        if unknown:
            raise ValueError(
                f"The config's `quantized_head` names layers that this "
                f"{type(self).__name__} does not have: {unknown[:3]} (it has "
                f"{sorted(layers)[:6]}). Re-save the preset from the model.")
        for path, entry in quantized_head.items():
            config = entry.get("config")
            if config is not None:
                config = keras.saving.deserialize_keras_object(config)
            layers[path].quantize(entry["mode"], config=config)

    # --- data ---
    def _preprocess_dataset(self, x, y=None, sample_weight=None, batch_size=None,
                            shuffle=False, passes=None):
        """Raw data → batches with the preprocessor applied: a batched
        ``tf.data.Dataset`` with the preprocessor mapped (the TensorFlow
        engine, or a dataset given), or a ``PreprocessedBatches`` (the Python
        engine; no TensorFlow).

        ``passes=1`` says the data is read once (``predict``,
        ``evaluate``): nothing is prepared ahead for a next pass.

        Under a ``keras.distribution`` (JAX's data or model parallelism) the
        batches are whole (a partial last batch is dropped: it could not be
        split evenly over the devices) and their size is static, which
        Keras needs to shard the dataset over several processes.
        """
        batch_size = batch_size or 32
        static_batch = (keras.distribution.distribution() is not None
                        and not _is_dataset(x))
        if isinstance(x, RawBatches):  # raw batches in their own order
            return PreprocessedBatches(
                self.preprocessor, *x.data, batch_size=x.batch_size,
                drop_remainder=static_batch, engine=self._data_engine(x),
                read_next_epoch=passes != 1)
        if self._python_pipeline(x):
            return PreprocessedBatches(
                self.preprocessor, x, y, sample_weight, batch_size=batch_size,
                shuffle=shuffle, drop_remainder=static_batch, engine="python",
                read_next_epoch=passes != 1)
        if _is_dataset(x):
            ds = x
        else:
            # Always a tuple (x[, y[, sample_weight]]): tf.data passes its
            # members as positional arguments, and a pair x = (a, b) stays x.
            items = tuple(
                _as_slices(v) for v in (x, y, sample_weight) if v is not None
            )
            ds = tf.data.Dataset.from_tensor_slices(items)
            if shuffle:
                ds = ds.shuffle(ds.cardinality(), reshuffle_each_iteration=True)
            ds = ds.batch(batch_size, drop_remainder=static_batch)

        return prefetched(ds.map(
            self._preprocess_function(batch_size if static_batch else None),
            num_parallel_calls=tf.data.AUTOTUNE))

    def _data_engine(self, x):
        """The engine that preprocesses raw data ``x`` (``data_engine``:
        by the chosen engine, the backend and the number of examples; a
        ``RawBatches`` is read in Python whatever its size)."""
        if isinstance(x, RawBatches):
            return data_engine()
        return data_engine(num_examples(x))

    def _python_pipeline(self, x):
        """Whether raw data ``x`` goes through the Python engine's pipeline."""
        return (not _is_dataset(x)
                and use_python((x,), engine_name=self._data_engine(x))
                and hasattr(self.preprocessor, "python_call"))

    def _preprocess_function(self, static_batch_size=None):
        """The function mapped over raw batches, as a ``tf.function`` kept on
        the task for its preprocessor's current config: every new dataset
        (each ``fit``, ``evaluate`` or ``predict``) reuses its trace instead of
        tracing the tokenizer again (slow for WordPiece)."""
        preprocessor = self.preprocessor
        key = (id(preprocessor), static_batch_size,
               json.dumps(preprocessor.get_config(), sort_keys=True, default=str))
        cache = self.__dict__.get("_preprocess_functions")
        if cache is None or len(cache) > 8:
            # Not a tracked attribute: no Keras or tf.Module bookkeeping.
            cache = {}
            object.__setattr__(self, "_preprocess_functions", cache)
        if key not in cache:
            def apply(*data):
                # Boolean masks go in as int32 (the backbones' declared input
                # dtype): under a tf.distribute strategy Keras 3.15 averages
                # the first batch over the replicas, which fails on booleans.
                outputs = tf.nest.map_structure(
                    lambda t: tf.cast(t, "int32") if t.dtype == tf.bool else t,
                    preprocessor(*data))
                if static_batch_size is not None:
                    outputs = tf.nest.map_structure(
                        lambda t: tf.ensure_shape(t, [static_batch_size] + t.shape[1:]),
                        outputs)
                return outputs

            # Plain TF ops: traced as they are. Autograph's conversion of
            # the preprocessor's calls slowed each first trace.
            cache[key] = tf.function(apply, autograph=False)
        return cache[key]

    def _needs_preprocessing(self, x):
        if getattr(self, "preprocessor", None) is None:
            return False
        if _is_dataset(x):
            return _is_raw_text(x.element_spec)
        if isinstance(x, RawBatches):
            return _is_raw_text(x.data[0])
        return _is_raw_text(x)

    def _check_raw_text(self, x):
        if getattr(self, "preprocessor", None) is not None:
            _check_text_items(x)

    def _empty_batch(self, x, y=None, sample_weight=None):
        """The model's inputs (and targets) for an empty raw or tensor batch."""
        python = self._python_pipeline(x)

        def empty(value, dtype, rank=1):
            if isinstance(value, tuple):
                return tuple(empty(v, dtype, rank) for v in value)
            if is_tensors(value):
                return value
            if python:
                # One blank example, cut to none after preprocessing (a
                # Python list of no texts reads as one empty sequence).
                if dtype == "string":
                    return [""]
                return [[]] if rank == 2 else np.zeros([1], dtype)
            return tf.zeros([0] * rank, dtype)

        def is_tensors(value):
            leaves = keras.tree.flatten(value)
            return bool(leaves) and all(
                getattr(v, "dtype", None) is not None and not _is_raw_text(v)
                for v in leaves)

        if getattr(self, "preprocessor", None) is None or is_tensors(x):
            return x, y, sample_weight
        with engine_scope("python") if python else contextlib.nullcontext():
            try:  # one label per example (most tasks) ...
                rank = 1
                data = self.preprocessor(*(
                    empty(v, d) for v, d in ((x, "string"), (y, "int32"),
                                             (sample_weight, "float32")) if v is not None))
            except ValueError:
                if y is None:
                    raise
                # ... or one label per word (token classification).
                rank = 2
            if rank == 2:
                data = self.preprocessor(empty(x, "string"), *(
                    empty(v, d, rank=2) for v, d in ((y, "int32"), (sample_weight, "float32"))
                    if v is not None))
        if python:
            data = keras.tree.map_structure(
                lambda t: keras.ops.convert_to_numpy(t)[:0], data)
        return keras.utils.unpack_x_y_sample_weight(data)

    @locked
    def fit(self, x=None, y=None, batch_size=None, sample_weight=None,
            validation_data=None, shuffle=True, **kwargs):
        _check_not_empty(x, "fit")
        self._check_raw_text(x)
        if self._needs_preprocessing(x):
            raw_dataset = _is_dataset(x) or isinstance(x, RawBatches)
            x = self._preprocess_dataset(
                x, y, sample_weight, batch_size, shuffle=shuffle and not raw_dataset
            )
            y = sample_weight = None
            shuffle = False  # done above, or the dataset's own business
            if (_is_dataset(x) and not raw_dataset
                    and kwargs.get("steps_per_epoch") is None):
                x, kwargs["steps_per_epoch"] = _repeated(x)
        batched = (_is_dataset(validation_data)
                   or isinstance(validation_data, RawBatches))
        if validation_data is not None and self._needs_preprocessing(
            validation_data if batched else validation_data[0]
        ):
            if batched:
                validation_data = self._preprocess_dataset(validation_data)
            else:
                validation_data = self._preprocess_dataset(
                    *validation_data, batch_size=batch_size
                )
                if (_is_dataset(validation_data)
                        and kwargs.get("validation_steps") is None):
                    validation_data, kwargs["validation_steps"] = _repeated(
                        validation_data)
                    object.__setattr__(self, "_keep_validation_iterator",
                                       kwargs["validation_steps"] is not None)
        if _is_dataset(x) or isinstance(x, keras.utils.PyDataset):
            batch_size = None
        try:
            return super().fit(x=x, y=y, batch_size=batch_size,
                               sample_weight=sample_weight, shuffle=shuffle,
                               validation_data=validation_data, **kwargs)
        finally:
            object.__setattr__(self, "_keep_validation_iterator", False)

    @locked
    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None,
                 return_dict=False, **kwargs):
        """Keras' ``evaluate``, on raw data too. An empty batch gives the
        usual structure (the loss and each metric) with NaN values: there is
        no example to average over (Keras itself fails there)."""
        self._check_raw_text(x)
        if kwargs.get("_use_cached_eval_dataset") and self.__dict__.get(
                "_keep_validation_iterator"):
            # fit's validation pass on raw text that fit repeated (with
            # `validation_steps` one pass long): Keras resets the iterator
            # it keeps for validation before each pass, so each epoch would
            # set up the tokenizer's graph again (a pause for WordPiece).
            # Reading on where the last pass ended reads the same batches.
            iterator = getattr(self, "_eval_epoch_iterator", None)
            if iterator is not None:
                iterator.reset = lambda: None
        if _is_empty(x):
            x, y, sample_weight = self._empty_batch(x, y, sample_weight)
            logs = self.test_on_batch(x, y, sample_weight, return_dict=True)
            logs = {k: float("nan") for k in logs}
            if return_dict:
                return logs
            values = [logs.pop("loss")] + list(logs.values())
            return values[0] if len(values) == 1 else values
        if self._needs_preprocessing(x):
            x = self._preprocess_dataset(x, y, sample_weight, batch_size, passes=1)
            y = sample_weight = batch_size = None
        return super().evaluate(x=x, y=y, batch_size=batch_size,
                                sample_weight=sample_weight, return_dict=return_dict,
                                **kwargs)

    @locked
    def predict(self, x, batch_size=None, **kwargs):
        """Keras' ``predict``, on raw data too. An empty batch gives outputs
        with 0 rows and the usual other dimensions (Keras itself fails
        there)."""
        self._check_raw_text(x)
        if _is_empty(x):
            x, _, _ = self._empty_batch(x)
            return keras.tree.map_structure(
                keras.ops.convert_to_numpy, self(x, training=False))
        if self._needs_preprocessing(x):
            x = self._preprocess_dataset(x, batch_size=batch_size, passes=1)
            batch_size = None
        return super().predict(x, batch_size=batch_size, **kwargs)

    # --- serving ---
    def serving_input_names(self):
        """Names of the raw-string inputs of the exported serving signature."""
        return ("text",)

    def serving_outputs(self, outputs):
        """Named outputs of the exported serving signature (a dict)."""
        if isinstance(outputs, dict):
            return dict(outputs)
        return {"outputs": outputs}

    def onnx_outputs(self, outputs, inputs=None):
        """Named outputs of the exported ONNX graph (``kzoo.export.onnx``)
        for the task's ``outputs`` on ``inputs``: ``serving_outputs`` (tasks
        whose serving outputs hold strings give the numeric ones)."""
        return self.serving_outputs(outputs)

    def onnx_inputs(self):
        """The exported ONNX graph's inputs, ``{name: Keras input}`` (the
        task's own inputs; onnxruntime feeds each as int64 ``[batch, ...,
        sequence]``), or None for a task that takes no dict of tensors."""
        inputs = getattr(self, "input", None)
        return dict(inputs) if isinstance(inputs, dict) else None

    def onnx_call(self, inputs):
        """The exported ONNX graph: ``inputs`` (a dict keyed as
        ``onnx_inputs()``) → its named outputs, ``onnx_outputs`` of the
        task's outputs."""
        return self.onnx_outputs(self(inputs, training=False), inputs)

    def export(self, filepath, format="tf_saved_model", **kwargs):
        """Keras' ``export``, and ``format="onnx"``: ``model.onnx`` and
        ``tokenizer.json`` in the folder ``filepath``
        (``kzoo.export.onnx``; ``sequence_length=`` fixes the length the
        tokenizer pads to)."""
        if format == "onnx":
            from kzoo.export.onnx import onnx

            return onnx(self, filepath, **kwargs)
        return super().export(filepath, format=format, **kwargs)

    def serving_endpoints(self, sequence_length=None):
        """The SavedModel signature ``kzoo.export.saved_model`` writes.

        ``serving_default`` takes raw strings, one ``tf.string [batch]``
        input per name of ``serving_input_names()`` (``text``; ``text_pair``
        too for pair tasks), tokenized inside the graph by the preprocessor
        (rebuilt with ``sequence_length`` when that differs from its own),
        and returns ``serving_outputs`` of the task's outputs.

        Returns:
            ``{"serving_default": (fn, input_signature)}``.
        """
        preprocessor = getattr(self, "preprocessor", None)
        if preprocessor is None:
            raise ValueError(
                "Export needs the task's preprocessor (tokenization runs inside "
                "the exported graph): build the task with `preprocessor=`."
            )
        if sequence_length is not None and sequence_length != getattr(
                preprocessor, "sequence_length", sequence_length):
            config = preprocessor.get_config()
            config.update(sequence_length=sequence_length,
                          tokenizer=preprocessor.tokenizer)
            preprocessor = type(preprocessor).from_config(config)

        def serve(*texts):
            x = preprocessor(texts if len(texts) > 1 else texts[0])
            outputs = self.serving_outputs(self(x, training=False))
            return {k: tf.convert_to_tensor(v) for k, v in outputs.items()}

        signature = [keras.InputSpec(shape=(None,), dtype="string", name=name)
                     for name in self.serving_input_names()]
        return {"serving_default": (serve, signature)}

    def serving_trackables(self):
        """The preprocessor and its tokenizer, whose lookup tables the
        serving graph reads (``kzoo.export.saved_model`` keeps them)."""
        preprocessor = getattr(self, "preprocessor", None)
        if preprocessor is None:
            return {}
        return {"preprocessor": preprocessor, "tokenizer": preprocessor.tokenizer}

    # --- presets ---
    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Builds backbone, preprocessor and head from a preset.

        Called on a generic task shape (``kzoo.models.TextClassifier``,
        ``CausalLM``, ``TextEmbedder`` ...), it builds the preset's family's
        task of that shape (the fine-tuned one the preset holds, when it is
        one), as keras-hub's base classes do.

        Args:
            preset: a registered name, a kzoo preset folder, or a checkpoint
                folder that a converter reads.
            load_weights: load pretrained backbone (and head, if the preset
                holds a fine-tuned task) weights.
            **kwargs: task constructor arguments (``num_classes=2``),
                ``sequence_length`` for the preprocessor, and ``dtype`` (a
                dtype policy name such as ``"bfloat16"``, as in keras-hub):
                the backbone, and the head built on it, in that policy.

        Example:
        >>> model = kzoo.models.TextClassifier.from_preset(  # doctest: +SKIP
        ...     "minilm_l6_en_uncased", num_classes=2)
        >>> type(model).__name__  # doctest: +SKIP
        'BertClassifier'
        """
        source = preset_loader.get_source(preset)
        if cls.backbone_cls is None:
            cls = _family_task(cls, source, kwargs.get("load_task_head", True))
        return preset_loader.load_task(
            source, cls=cls, load_weights=load_weights, **kwargs
        )

    def save_to_preset(self, preset_dir):
        """Writes the backbone, preprocessor and the task head (``task.json``
        and ``task.weights.h5``) to ``preset_dir`` atomically."""
        preset_saver.save_preset(
            preset_dir,
            backbone=self.backbone,
            preprocessor=getattr(self, "preprocessor", None),
            task=self,
        )


def label_lookup(names, ids):
    """The names of the label ``ids`` inside an exported graph: a string
    tensor shaped like ``ids``."""
    return tf.gather(tf.constant(list(names)), tf.cast(ids, "int32"))


def _family_task(shape, source, load_task_head):
    """The task class ``shape.from_preset`` builds for ``source``: the
    preset's saved task when it is a ``shape``, else its family's."""
    from kzoo.models.family import family_of_preset

    saved = source.task_config() if load_task_head else None
    if saved is not None:
        saved_cls = keras.saving.get_registered_object(saved.get("registered_name"))
        if isinstance(saved_cls, type) and issubclass(saved_cls, shape):
            return saved_cls
    return family_of_preset(source).task(shape)
