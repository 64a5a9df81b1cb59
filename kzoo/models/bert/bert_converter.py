"""Reads Hugging Face BERT checkpoint folders as kzoo presets.

A folder written by transformers' ``save_pretrained`` for ``BertModel``,
``BertForPreTraining``, ``BertForMaskedLM``, ... (``config.json`` with
``"model_type": "bert"``, weights in ``model.safetensors`` or
``pytorch_model.bin``, possibly sharded, and ``vocab.txt`` or a WordPiece
``tokenizer.json``) loads with ``BertBackbone.from_preset(folder)``: the
config is mapped to BertBackbone arguments and every tensor is checked,
then copied, into the backbone. A fine-tuned checkpoint
(``BertForSequenceClassification``, ``BertForTokenClassification``,
``BertForQuestionAnswering``, ``BertForMultipleChoice``) loads as its kzoo
task with its trained head and label names (``FINE_TUNED``).

Safetensors files are read with numpy (no torch needed). A
``pytorch_model.bin`` is read only with ``torch.load(weights_only=True)``,
which refuses pickled code: checkpoints are untrusted input.
"""

import inspect
import warnings
from pathlib import Path

import keras
import numpy as np

from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.presets.errors import PresetError
from kzoo.presets.hugging_face import (
    CONFIG_FILE,
    class_labels,
    config_number,
    listing,
    read_config,
    read_hf_tensors,
    weight_files,
)
from kzoo.presets.preset_source import NEW_HEAD_NOTE, PresetSource, read_json
from kzoo.tokenizers.tokenizer import Tokenizer
from kzoo.tokenizers.word_piece_tokenizer import WordPieceTokenizer

VOCABULARY_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
#: the ``tokenizers`` library's file (transformers 5 saves only this one)
FAST_TOKENIZER_FILE = "tokenizer.json"
#: sentence-transformers' module list (Transformer → Pooling → Normalize)
MODULES_FILE = "modules.json"
#: sentence-transformers ``Pooling`` flags → ``SequencePooling`` modes
_POOLINGS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_max_tokens": "max",
             "pooling_mode_cls_token": "first"}

#: transformers.BertConfig defaults, for keys a config.json leaves out
_HF_DEFAULTS = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
}

#: BertBackbone sizes → the ``config.json`` fields they come from, passed as
#: the file writes them: the loader's size check refuses what is not a
#: positive int, naming the file's field
_SIZE_FIELDS = {
    "vocabulary_size": "vocab_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "hidden_dim": "hidden_size",
    "intermediate_dim": "intermediate_size",
    "max_sequence_length": "max_position_embeddings",
    "num_segments": "type_vocab_size",
}

#: Hugging Face ``hidden_act`` → BertBackbone ``activation``
_ACTIVATIONS = {
    "gelu": "gelu",  # exact (erf) GELU
    "gelu_python": "gelu",
    "gelu_new": "gelu_approximate",  # tanh approximation
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu_fast": "gelu_approximate",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
}

#: tensors a backbone does not use: pretraining heads and buffers
_HEAD_PREFIX = "cls."
_BUFFERS = ("embeddings.position_ids",)
#: tensors a checkpoint may lack (BertForMaskedLM has no pooler): the
#: backbone keeps their random initialisation and a warning says so
_OPTIONAL_PREFIX = "pooler."

#: transformers' fine-tuned BERT heads → (kzoo task, the head's tensor
#: prefix, whether the head reads the pooler); ``bert_hf_writer`` writes
#: the same table backwards
FINE_TUNED = {
    "BertForSequenceClassification": ("BertClassifier", "classifier", True),
    "BertForTokenClassification": ("BertTokenClassifier", "classifier", False),
    "BertForQuestionAnswering": ("BertQuestionAnswerer", "qa_outputs", False),
    "BertForMultipleChoice": ("BertMultipleChoice", "classifier", True),
}


def _is_bert_config(config):
    model_type = config.get("model_type")
    if model_type is not None:
        return model_type == "bert"
    # Very old configs have no model_type: go by the architecture names.
    return any(
        isinstance(a, str) and a.startswith("Bert")
        for a in config.get("architectures") or ()
    )


def _canonical_name(name):
    """Strips the ``bert.`` prefix and maps old ``gamma``/``beta`` names."""
    if name.startswith("bert."):
        name = name[len("bert."):]
    if ".LayerNorm." in name or name.startswith("LayerNorm."):
        if name.endswith(".gamma"):
            name = name[: -len("gamma")] + "weight"
        elif name.endswith(".beta"):
            name = name[: -len("beta")] + "bias"
    return name


def _fast_tokenizer_settings(path):
    """``(vocabulary, lowercase, strip_accents)`` of a WordPiece
    ``tokenizer.json`` (transformers 5 saves BERT's tokenizer as that file
    alone), or None without one; a PresetError for one that kzoo's
    ``BertTokenizer`` cannot reproduce."""
    file = Path(path) / FAST_TOKENIZER_FILE
    if not file.is_file():
        return None
    spec = read_json(file)
    spec = spec if isinstance(spec, dict) else {}
    model = spec.get("model") or {}
    normalizer = spec.get("normalizer") or {}
    vocab = model.get("vocab")
    problems = []
    if model.get("type") != "WordPiece" or not isinstance(vocab, dict):
        problems.append(f"its model is {model.get('type')!r}, not WordPiece")
    elif sorted(vocab.values()) != list(range(len(vocab))):
        problems.append("its vocabulary's ids are not 0 to its size - 1")
    if model.get("continuing_subword_prefix", "##") != "##":
        problems.append("its pieces are not marked with ##")
    if normalizer.get("type") != "BertNormalizer":
        problems.append(f"its normalizer is {normalizer.get('type')!r}, not BertNormalizer")
    if (spec.get("pre_tokenizer") or {}).get("type") != "BertPreTokenizer":
        problems.append("its pre-tokenizer is not BertPreTokenizer")
    if problems:
        raise PresetError(
            f"{file} is not the WordPiece tokenizer of BERT that kzoo reads: "
            + "; ".join(problems) + f". Put the checkpoint's {VOCABULARY_FILE} beside it.")
    lowercase = bool(normalizer.get("lowercase", True))
    strip_accents = normalizer.get("strip_accents")
    return (sorted(vocab, key=vocab.get), lowercase,
            lowercase if strip_accents is None else bool(strip_accents))


def hf_tokenizer_settings(path):
    """WordPiece settings of a Hugging Face BERT folder.

    Args:
        path: the checkpoint folder, holding ``vocab.txt`` (and usually
            ``tokenizer_config.json``) or, as transformers 5 saves it, a
            WordPiece ``tokenizer.json``.

    Returns:
        A dict ``{"vocabulary": str or list, "lowercase": bool,
        "strip_accents": bool}``: the vocabulary is the ``vocab.txt`` path
        (the tokens of ``tokenizer.json`` in id order without one);
        ``do_lower_case`` (default True, as ``BertTokenizer``) and
        ``strip_accents`` (when unset, it follows ``lowercase``, as
        ``BertTokenizer``), from ``tokenizer.json``'s ``BertNormalizer``
        where the vocabulary comes from there.
    """
    path = Path(path)
    vocabulary = path / VOCABULARY_FILE
    if not vocabulary.is_file():
        fast = _fast_tokenizer_settings(path)
        if fast is None:
            raise PresetError(
                f"The Hugging Face BERT folder {path} has no {VOCABULARY_FILE} "
                f"nor {FAST_TOKENIZER_FILE}, the WordPiece vocabulary: copy the "
                "tokenizer files of the original checkpoint there."
            )
        tokens, lowercase, strip_accents = fast
        return {"vocabulary": tokens, "lowercase": lowercase,
                "strip_accents": strip_accents}
    settings = {}
    config_path = path / TOKENIZER_CONFIG_FILE
    if config_path.is_file():
        settings = read_json(config_path)
    lowercase = settings.get("do_lower_case")
    lowercase = True if lowercase is None else bool(lowercase)
    strip_accents = settings.get("strip_accents")
    strip_accents = lowercase if strip_accents is None else bool(strip_accents)
    return {
        "vocabulary": str(vocabulary),
        "lowercase": lowercase,
        "strip_accents": strip_accents,
    }


def _hf_shape(variable_shape, layout):
    """The checkpoint shape that a variable of ``variable_shape`` takes."""
    s = tuple(variable_shape)
    if layout == "copy":
        return s
    if layout == "linear":  # kernel (in, out) <- torch Linear (out, in)
        return (s[1], s[0])
    if layout == "qkv_kernel":  # (hidden, heads, head_dim) <- (heads*head_dim, hidden)
        return (s[1] * s[2], s[0])
    if layout == "qkv_bias":  # (heads, head_dim) <- (heads*head_dim,)
        return (s[0] * s[1],)
    if layout == "attention_output_kernel":  # (heads, head_dim, hidden) <- (hidden, heads*head_dim)
        return (s[2], s[0] * s[1])
    raise ValueError(layout)


def _to_variable_layout(array, variable_shape, layout):
    if layout in ("linear", "qkv_kernel", "attention_output_kernel"):
        array = array.T
    return np.reshape(array, tuple(variable_shape))


def _weight_map(backbone):
    """``[(checkpoint name, variable, layout)]`` for every backbone variable."""
    needed = ("token_embedding", "position_embedding", "segment_embedding",
              "embeddings_layer_norm", "transformer_layers", "pooled_dense")
    absent = [n for n in needed if not hasattr(backbone, n)]
    if absent:
        raise PresetError(
            f"A Hugging Face BERT checkpoint loads into a BertBackbone; "
            f"{type(backbone).__name__} lacks {', '.join(absent)}."
        )
    entries = [
        ("embeddings.word_embeddings.weight", backbone.token_embedding.embeddings, "copy"),
        ("embeddings.position_embeddings.weight",
         backbone.position_embedding.embeddings, "copy"),
        ("embeddings.token_type_embeddings.weight",
         backbone.segment_embedding.embeddings, "copy"),
        ("embeddings.LayerNorm.weight", backbone.embeddings_layer_norm.gamma, "copy"),
        ("embeddings.LayerNorm.bias", backbone.embeddings_layer_norm.beta, "copy"),
    ]
    for i, block in enumerate(backbone.transformer_layers):
        prefix = f"encoder.layer.{i}."
        attention = block.self_attention_layer
        for name, dense in (("query", attention.query_dense),
                            ("key", attention.key_dense),
                            ("value", attention.value_dense)):
            entries.append((f"{prefix}attention.self.{name}.weight", dense.kernel,
                            "qkv_kernel"))
            entries.append((f"{prefix}attention.self.{name}.bias", dense.bias,
                            "qkv_bias"))
        entries += [
            (f"{prefix}attention.output.dense.weight",
             attention.output_dense.kernel, "attention_output_kernel"),
            (f"{prefix}attention.output.dense.bias",
             attention.output_dense.bias, "copy"),
            (f"{prefix}attention.output.LayerNorm.weight",
             block.self_attention_layer_norm.gamma, "copy"),
            (f"{prefix}attention.output.LayerNorm.bias",
             block.self_attention_layer_norm.beta, "copy"),
            (f"{prefix}intermediate.dense.weight",
             block.feedforward_intermediate_dense.kernel, "linear"),
            (f"{prefix}intermediate.dense.bias",
             block.feedforward_intermediate_dense.bias, "copy"),
            (f"{prefix}output.dense.weight",
             block.feedforward_output_dense.kernel, "linear"),
            (f"{prefix}output.dense.bias", block.feedforward_output_dense.bias, "copy"),
            (f"{prefix}output.LayerNorm.weight",
             block.feedforward_layer_norm.gamma, "copy"),
            (f"{prefix}output.LayerNorm.bias", block.feedforward_layer_norm.beta, "copy"),
        ]
    entries += [
        ("pooler.dense.weight", backbone.pooled_dense.kernel, "linear"),
        ("pooler.dense.bias", backbone.pooled_dense.bias, "copy"),
    ]
    return entries


_MLM_PREFIX = "cls.predictions."


def _masked_lm_head_plan(head, token_embedding, tensors, where):
    """Matches Hugging Face ``cls.predictions.*`` tensors to a ``MaskedLMHead``.

    Args:
        head: a built ``MaskedLMHead`` tied to ``token_embedding``.
        token_embedding: the backbone's (already loaded) token embedding.
        tensors: ``HuggingFaceBertSource.load_head_tensors()``.
        where: the checkpoint, for messages.

    Returns:
        ``[(variable, value)]`` to assign, or None when the checkpoint has no
        masked LM head. Raises PresetError, assigning nothing, when a tensor
        is missing or has the wrong shape, or when the checkpoint's decoder
        is not tied to its word embeddings.
    """
    if not any(name.startswith(_MLM_PREFIX) for name in tensors):
        return None
    entries = [
        ("transform.dense.weight", head.transform_dense.kernel, True),
        ("transform.dense.bias", head.transform_dense.bias, False),
        ("transform.LayerNorm.weight", head.transform_layer_norm.gamma, False),
        ("transform.LayerNorm.bias", head.transform_layer_norm.beta, False),
        ("bias", head.output_bias, False),
    ]
    plan, problems = [], []
    for name, variable, transpose in entries:
        name = _MLM_PREFIX + name
        if name not in tensors:
            problems.append(f"{name} is missing")
            continue
        value = np.asarray(tensors[name], dtype="float32")
        value = value.T if transpose else value
        if tuple(value.shape) != tuple(variable.shape):
            problems.append(
                f"{name} has shape {tuple(np.shape(tensors[name]))}, the head "
                f"expects {tuple(variable.shape)[::-1] if transpose else tuple(variable.shape)}"
            )
            continue
        plan.append((variable, value))
    decoder = tensors.get(_MLM_PREFIX + "decoder.weight")
    if decoder is not None and not problems:
        embeddings = keras.ops.convert_to_numpy(token_embedding.embeddings)
        decoder = np.asarray(decoder, dtype="float32")
        if decoder.shape != embeddings.shape or not np.allclose(
            decoder, embeddings, atol=1e-6
        ):
            problems.append(
                "cls.predictions.decoder.weight is not tied to (equal to) the "
                "word embeddings, and kzoo's head always ties them"
            )
    if problems:
        raise PresetError(
            f"The masked LM head in {where} does not fit: "
            + "; ".join(problems) + ". Nothing of the head was loaded."
        )
    return plan


def _next_sentence_head_plan(dense, tensors, where):
    """``[(variable, value)]`` for ``cls.seq_relationship.*`` into a 2-way
    ``Dense``; None when the checkpoint has no next sentence head."""
    weight, bias = (tensors.get(f"cls.seq_relationship.{n}") for n in ("weight", "bias"))
    if weight is None or bias is None:
        return None
    if tuple(weight.shape) != tuple(dense.kernel.shape)[::-1] or tuple(bias.shape) != (2,):
        raise PresetError(
            f"The next sentence head in {where} does not fit: "
            f"cls.seq_relationship.weight has shape {tuple(weight.shape)} "
            f"and .bias {tuple(bias.shape)}, expected "
            f"{tuple(dense.kernel.shape)[::-1]} and (2,). Nothing was loaded."
        )
    return [(dense.kernel, np.asarray(weight, dtype="float32").T),
            (dense.bias, np.asarray(bias, dtype="float32"))]


def _head_entries(task, prefix):
    """``[(checkpoint name, variable, layout)]`` of a fine-tuned head: its
    dense layer as a torch ``Linear`` named ``prefix``."""
    dense = task.span_dense if prefix == "qa_outputs" else task.output_dense
    return [(f"{prefix}.weight", dense.kernel, "linear"),
            (f"{prefix}.bias", dense.bias, "copy")]


class HuggingFaceBertSource(PresetSource):
    """A Hugging Face (transformers) BERT checkpoint folder.

    ``matches`` accepts a folder whose ``config.json`` says
    ``"model_type": "bert"`` (or, without a model type, names a ``Bert*``
    architecture); a missing weights file is reported when weights are
    loaded, so ``load_weights=False`` works with a config alone.

    The MLM and NSP heads of a pretraining checkpoint (``cls.*`` tensors) are
    not part of the backbone; ``load_head_tensors()`` returns them for the
    heads that need them.

    A fine-tuned checkpoint (``architectures`` naming one of ``FINE_TUNED``:
    ``BertForSequenceClassification``, ``BertForTokenClassification``,
    ``BertForQuestionAnswering``, ``BertForMultipleChoice``) holds its task:
    ``task_config`` maps its config to the kzoo task's arguments (the
    labels' count and names from ``id2label``, the head's dropout from
    ``classifier_dropout`` or ``hidden_dropout_prob``) and
    ``load_task_weights`` loads the backbone and the trained head, so
    ``BertClassifier.from_preset(folder)`` (or
    ``kzoo.models.TextClassifier.from_preset(folder)``) computes the
    checkpoint's logits.
    """

    format_name = "Hugging Face BERT"

    @classmethod
    def matches(cls, path):
        config = Path(path) / CONFIG_FILE
        if not config.is_file():
            return False
        try:
            return _is_bert_config(read_config(path))
        except PresetError:
            return False

    def _config(self):
        config = read_config(self.path)
        if not _is_bert_config(config):
            raise PresetError(f"{self.path / CONFIG_FILE} is not a BERT config.")
        return {**_HF_DEFAULTS, **config}

    def backbone_config(self):
        config = self._config()
        where = self.path / CONFIG_FILE
        position_type = config.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise PresetError(
                f"{where} has position_embedding_type={position_type!r}; "
                "BertBackbone has learned absolute positions only."
            )
        if config.get("is_decoder") or config.get("add_cross_attention"):
            raise PresetError(
                f"{where} describes a BERT decoder (is_decoder / "
                "add_cross_attention); BertBackbone is a bidirectional encoder."
            )
        act = config["hidden_act"]
        if not isinstance(act, str) or act not in _ACTIVATIONS:
            raise PresetError(
                f"{where} has hidden_act={act!r}, which kzoo does not map; "
                f"known: {', '.join(sorted(_ACTIVATIONS))}."
            )
        return {
            "module": "kzoo.models.bert.bert_backbone",
            "class_name": "BertBackbone",
            "registered_name": "kzoo>BertBackbone",
            "config": {
                **{ours: config[theirs] for ours, theirs in _SIZE_FIELDS.items()},
                "dropout": config_number(config, "hidden_dropout_prob", where),
                "layer_norm_epsilon": config_number(config, "layer_norm_eps", where),
                "activation": _ACTIVATIONS[act],
            },
        }

    def config_field_names(self):
        return self.path / CONFIG_FILE, dict(_SIZE_FIELDS)

    def _tensors(self, select=None):
        """Checkpoint tensors by canonical name (``bert.`` stripped)."""
        keep = None if select is None else (lambda name: select(_canonical_name(name)))
        return {
            _canonical_name(name): value
            for name, value in read_hf_tensors(self.path, keep).items()
        }

    def _where(self):
        return f"{self.path} ({weight_files(self.path)[1][0].name})"

    def _plan(self, entries, tensors, owner, optional=(_OPTIONAL_PREFIX,)):
        """``(plan, optional_missing)``: ``[(variable, value)]`` for every
        entry, each tensor's shape checked; a PresetError naming every
        missing or mismatched tensor, before anything is assigned. Entries
        whose name starts with one of ``optional`` may be missing."""
        missing, mismatched, optional_missing, plan = [], [], [], []
        for name, variable, layout in entries:
            if name not in tensors:
                (optional_missing if optional and name.startswith(optional)
                 else missing).append(name)
                continue
            array = tensors[name]
            wanted = _hf_shape(variable.shape, layout)
            if tuple(array.shape) != wanted:
                mismatched.append(
                    f"{name} has shape {tuple(array.shape)} in the checkpoint but "
                    f"the {owner} expects {wanted}"
                )
                continue
            plan.append((variable, _to_variable_layout(
                np.asarray(array, dtype="float32"), variable.shape, layout)))
        problems = []
        if mismatched:
            problems.append("; ".join(mismatched))
        if missing:
            problems.append(f"tensors missing from the checkpoint: {listing(missing)}")
        if problems:
            raise PresetError(
                f"The weights in {self._where()} do not fit the {owner} "
                f"built from its config: " + "; ".join(problems) + ". Check that "
                "config.json and the weights come from the same checkpoint (and "
                "that no config override changes a size). Nothing was loaded."
            )
        return plan, optional_missing

    def load_backbone_weights(self, backbone):
        """Copies the checkpoint into ``backbone``, all or nothing.

        Every tensor is matched and its shape checked before any variable is
        assigned: a shape mismatch or a missing tensor raises a PresetError
        (naming the tensors and shapes) and leaves the backbone untouched.
        A missing pooler keeps its random initialisation, and tensors the
        backbone does not use (other than the ``cls.*`` heads and the
        ``position_ids`` buffer) are named, each with a warning: a
        fine-tuned checkpoint's head as that head, with the task class that
        loads it.
        """
        entries = _weight_map(backbone)
        tensors = self._tensors()
        where = self._where()
        plan, optional_missing = self._plan(entries, tensors, type(backbone).__name__)
        used = {name for name, _, _ in entries}
        unexpected = [
            n for n in tensors
            if n not in used and not n.startswith(_HEAD_PREFIX) and n not in _BUFFERS
        ]
        architecture = self.task_architecture()
        head = []
        if architecture is not None:
            prefix = FINE_TUNED[architecture][1] + "."
            head = [n for n in unexpected if n.startswith(prefix)]
            unexpected = [n for n in unexpected if not n.startswith(prefix)]
        for variable, value in plan:
            variable.assign(value)
        if optional_missing:
            warnings.warn(
                f"{where} has no pooler ({listing(optional_missing)}): "
                "pooled_output uses a randomly initialised dense layer.",
                stacklevel=2,
            )
        if head:
            warnings.warn(
                f"{where} holds the trained head of a {architecture} "
                f"({listing(head)}), which the {type(backbone).__name__} does not "
                f"use; {FINE_TUNED[architecture][0]}.from_preset loads it with "
                "that head.",
                stacklevel=2,
            )
        if unexpected:
            warnings.warn(
                f"{where} holds tensors the {type(backbone).__name__} does not "
                f"use: {listing(unexpected)}.",
                stacklevel=2,
            )

    # --- fine-tuned heads ---
    def task_architecture(self):
        """The fine-tuned architecture ``config.json`` names (a key of
        ``FINE_TUNED``), or None for a checkpoint without a task head
        (``BertModel``, ``BertForMaskedLM``, ``BertForPreTraining``)."""
        architectures = self._config().get("architectures") or ()
        if not isinstance(architectures, (list, tuple)):
            return None
        return next((a for a in architectures
                     if isinstance(a, str) and a in FINE_TUNED), None)

    def head_task_classes(self):
        """The kzoo tasks of ``FINE_TUNED``."""
        return tuple(self._task_class(a) for a in FINE_TUNED)

    @staticmethod
    def _task_class(architecture):
        from kzoo.models import bert

        return getattr(bert, FINE_TUNED[architecture][0])

    def task_config(self):
        """The kzoo task of a fine-tuned checkpoint (see the class
        docstring), or None. A classifier with one label (or
        ``problem_type="regression"``) is a regressor (``num_classes=1``)."""
        architecture = self.task_architecture()
        if architecture is None:
            return None
        config = self._config()
        where = self.path / CONFIG_FILE
        task_cls = self._task_class(architecture)
        dropout = config.get("classifier_dropout")
        dropout = config_number(
            config, "hidden_dropout_prob" if dropout is None else "classifier_dropout",
            where)
        if architecture == "BertForQuestionAnswering":
            if config.get("num_labels", 2) != 2:
                raise PresetError(
                    f"{where} has num_labels={config['num_labels']!r}; a "
                    "BertForQuestionAnswering head scores a start and an end (2).")
            arguments = {}
        elif architecture == "BertForMultipleChoice":
            arguments = {"dropout": dropout}
        else:
            num_classes, label_names = class_labels(config, where)
            problem_type = config.get("problem_type")
            if problem_type == "regression" and num_classes != 1:
                raise PresetError(
                    f"{where} is a regression with {num_classes} outputs; kzoo's "
                    "regressor (num_classes=1) has one.")
            if problem_type == "multi_label_classification":
                warnings.warn(
                    f"{where} is a multi-label classifier; {task_cls.__name__} "
                    "computes the same logits but its loss and predict_labels "
                    "take the classes as exclusive (one label per text).",
                    stacklevel=3)
            arguments = {"num_classes": num_classes, "label_names": label_names,
                         "dropout": dropout}
        return {"module": task_cls.__module__, "class_name": task_cls.__name__,
                "registered_name": keras.saving.get_registered_name(task_cls),
                "config": arguments}

    def preprocessor_config(self):
        """For a fine-tuned checkpoint, its task's preprocessor with
        ``sequence_length`` the tokenizer's ``model_max_length`` (which
        ``bert_hf_writer`` writes from the kzoo preprocessor) when that fits
        the position table, else the preprocessor's default cut to that
        table; None where that default fits."""
        architecture = self.task_architecture()
        if architecture is None:
            return None
        tokenizer_config = self.path / TOKENIZER_CONFIG_FILE
        settings = read_json(tokenizer_config) if tokenizer_config.is_file() else {}
        length = settings.get("model_max_length") if isinstance(settings, dict) else None
        positions = self._config()["max_position_embeddings"]
        if not isinstance(positions, int) or isinstance(positions, bool):
            return None  # refused with the backbone's config
        preprocessor_cls = self._task_class(architecture).preprocessor_cls
        # Unset, transformers writes a huge number: the class default then,
        # cut to the position table.
        if (isinstance(length, bool) or not isinstance(length, int) or length < 1
                or length > positions):
            default = inspect.signature(preprocessor_cls).parameters[
                "sequence_length"].default
            if default <= positions:
                return None
            length = positions
        return {"module": preprocessor_cls.__module__,
                "class_name": preprocessor_cls.__name__,
                "registered_name": keras.saving.get_registered_name(preprocessor_cls),
                "config": {"sequence_length": length}}

    def load_task_weights(self, task):
        """Loads the backbone and the trained head (``classifier.*`` or
        ``qa_outputs.*``) of a fine-tuned checkpoint into ``task``, all or
        nothing: a missing tensor or a shape that does not fit raises a
        PresetError naming it, before anything is assigned. A head that
        does not read the pooled output (token classification, question
        answering) needs no pooler."""
        architecture = self.task_architecture()
        if architecture is None:
            raise PresetError(
                f"{self.path / CONFIG_FILE} names no fine-tuned BERT architecture "
                f"({', '.join(FINE_TUNED)}): the folder holds no task head.")
        task_cls = self._task_class(architecture)
        if not isinstance(task, task_cls):
            raise PresetError(
                f"{self.path} holds a {architecture}, whose head loads into a "
                f"{task_cls.__name__}, not a {type(task).__name__}.")
        _, prefix, pooled = FINE_TUNED[architecture]
        entries = _weight_map(task.backbone) + _head_entries(task, prefix)
        tensors = self._tensors()
        plan, _ = self._plan(entries, tensors, f"{type(task).__name__} ({architecture})",
                             optional=() if pooled else (_OPTIONAL_PREFIX,))
        used = {name for name, _, _ in entries}
        unexpected = [n for n in tensors if n not in used and n not in _BUFFERS
                      and not (not pooled and n.startswith(_OPTIONAL_PREFIX))]
        for variable, value in plan:
            variable.assign(value)
        if unexpected:
            warnings.warn(
                f"{self._where()} holds tensors the {type(task).__name__} does not "
                f"use: {listing(unexpected)}.",
                stacklevel=3,
            )

    def load_head_tensors(self):
        """The pretraining head tensors of the checkpoint, as stored.

        Returns:
            A dict from Hugging Face name to numpy array for every ``cls.*``
            tensor (empty for a plain ``BertModel``), in PyTorch layout
            (``Linear`` weights are ``[out, in]``): the MLM head
            ``cls.predictions.transform.dense.{weight,bias}``,
            ``cls.predictions.transform.LayerNorm.{weight,bias}``,
            ``cls.predictions.bias`` (output bias; the decoder weight, when
            present as ``cls.predictions.decoder.weight``, is tied to the
            token embeddings) and the next-sentence head
            ``cls.seq_relationship.{weight,bias}``.
        """
        return self._tensors(select=lambda name: name.startswith(_HEAD_PREFIX))

    def load_pretrained_head(self, task):
        """Loads ``cls.predictions.*`` (masked LM) and, for a task with a
        ``next_sentence_head``, ``cls.seq_relationship.*`` into ``task``.

        A head the checkpoint lacks keeps its fresh initialization, with a
        warning; a head that does not fit raises a PresetError and nothing
        is loaded.

        Returns:
            True when every head of the task was loaded.
        """
        head = getattr(task, "masked_lm_head", None)
        if head is None:
            return False
        tensors = self.load_head_tensors()
        plan = _masked_lm_head_plan(
            head, task.backbone.token_embedding, tensors, self.path)
        missing = [] if plan else ["masked LM head (cls.predictions.*)"]
        nsp_head = getattr(task, "next_sentence_head", None)
        if nsp_head is not None:
            nsp = _next_sentence_head_plan(nsp_head, tensors, self.path)
            if nsp is None:
                missing.append("next sentence head (cls.seq_relationship.*)")
            plan = (plan or []) + (nsp or [])
        for variable, value in plan or []:
            variable.assign(value)
        if missing:
            warnings.warn(
                f"{self.path} has no {' and no '.join(missing)}, as "
                "BertForMaskedLM / BertForPreTraining save: "
                + (NEW_HEAD_NOTE if plan is None else
                   "randomly initialized, it needs training") + ".",
                stacklevel=4,
            )
        return not missing

    def task_defaults(self):
        """A sentence-transformers folder's pooling: ``{"pooling": ...,
        "normalize": ...}`` from ``modules.json`` and the ``Pooling``
        module's ``config.json`` (empty for a plain transformers folder)."""
        if not (self.path / MODULES_FILE).is_file():
            return {}
        modules = read_json(self.path / MODULES_FILE)
        kinds = {m.get("type", "").rsplit(".", 1)[-1]: m for m in modules}
        defaults = {"normalize": "Normalize" in kinds}
        if "Pooling" in kinds:
            config = read_json(self.path / kinds["Pooling"].get("path", "") / CONFIG_FILE)
            modes = [mode for key, mode in _POOLINGS.items() if config.get(key)]
            others = [k for k, v in config.items()
                      if k.startswith("pooling_mode") and v and k not in _POOLINGS]
            if len(modes) != 1 or others:
                raise PresetError(
                    f"{self.path / kinds['Pooling'].get('path', '')} asks for the "
                    f"pooling {sorted(k for k, v in config.items() if k.startswith('pooling_mode') and v)}; "
                    "kzoo pools with exactly one of mean, max or cls tokens.")
            defaults["pooling"] = modes[0]
        return defaults

    def tokenizer_settings(self):
        """``hf_tokenizer_settings`` of this folder."""
        return hf_tokenizer_settings(self.path)

    def load_tokenizer(self, cls=None, **kwargs):
        settings = self.tokenizer_settings()
        tokenizer_cls = cls if cls is not None and cls is not Tokenizer else BertTokenizer
        if not issubclass(tokenizer_cls, WordPieceTokenizer):
            raise PresetError(
                f"{self.path} holds a WordPiece vocabulary; "
                f"{tokenizer_cls.__name__} cannot read it."
            )
        config = dict(
            vocabulary=settings["vocabulary"],
            lowercase=settings["lowercase"],
            strip_accents=settings["strip_accents"],
        )
        config.update(kwargs)
        return tokenizer_cls(**config)
