"""Reads Hugging Face GPT-2 and GPT-1 (``openai-gpt``) folders as kzoo presets.

A folder written by transformers' ``save_pretrained`` for ``GPT2Model`` or
``GPT2LMHeadModel`` (``config.json`` with ``"model_type": "gpt2"``, weights
in ``model.safetensors`` or ``pytorch_model.bin``, and ``vocab.json`` +
``merges.txt``) loads with ``GPTBackbone.from_preset(folder)`` and
``GPTCausalLM.from_preset(folder)``: the config is mapped to GPTBackbone
arguments and every tensor is checked, then copied, into the backbone.
GPT-2's ``Conv1D`` weights are stored ``[in, out]``, which is a Keras
``Dense`` kernel as is. The LM head is tied to ``wte``, so it needs nothing.

A fine-tuned head (``config.json``'s ``architectures``) loads as a kzoo task:
``GPT2ForSequenceClassification`` and ``OpenAIGPTForSequenceClassification``
as ``GPTClassifier`` (``use_bias=False``, the classes of ``id2label``),
``GPT2DoubleHeadsModel`` and ``OpenAIGPTDoubleHeadsModel`` as
``GPTMultipleChoice`` (the multiple-choice head; the LM head is tied);
``from_preset`` on the task's class or its generic shape (``kzoo.models.TextClassifier``,
``kzoo.models.MultipleChoice``) restores it with its trained head.

Tensors are read by ``read_hf_tensors`` (safetensors with numpy; a
``pytorch_model.bin`` only with ``torch.load(weights_only=True)``).
"""

import warnings
from pathlib import Path

import numpy as np

from kzoo.models.gpt.fine_tuning_tokens import FINE_TUNING_TOKENS
from kzoo.models.gpt.gpt1_tokenizer import GPT1Tokenizer
from kzoo.models.gpt.gpt_tokenizer import GPTTokenizer
from kzoo.presets.errors import PresetError
from kzoo.presets.hugging_face import (
    CONFIG_FILE,
    class_labels,
    config_number,
    listing,
    read_config,
    read_hf_tensors,
)
from kzoo.presets.preset_source import PresetSource, read_json
from kzoo.tokenizers.byte_pair_tokenizer import BytePairTokenizer
from kzoo.tokenizers.tokenizer import Tokenizer

VOCABULARY_FILE = "vocab.json"
MERGES_FILE = "merges.txt"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin",
                "model.safetensors.index.json", "pytorch_model.bin.index.json")

#: transformers.GPT2Config defaults, for keys a config.json leaves out
_HF_DEFAULTS = {
    "vocab_size": 50257,
    "n_positions": 1024,
    "n_embd": 768,
    "n_layer": 12,
    "n_head": 12,
    "n_inner": None,
    "activation_function": "gelu_new",
    "resid_pdrop": 0.1,
    "layer_norm_epsilon": 1e-5,
    "scale_attn_weights": True,
    "scale_attn_by_inverse_layer_idx": False,
}

#: Hugging Face ``activation_function`` → GPTBackbone ``activation``
_ACTIVATIONS = {
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu_fast": "gelu_approximate",
    "gelu": "gelu",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
}

#: tensors a backbone does not use: the tied LM head and attention buffers
_IGNORED_SUFFIXES = ("attn.bias", "attn.masked_bias")
_HEAD = "lm_head.weight"
#: the double-heads models' multiple-choice projection
_CHOICE_HEAD = "multiple_choice_head.summary"
#: the heads' tensors, which a backbone loaded alone leaves unread quietly
_HEAD_TENSORS = ("score.weight", f"{_CHOICE_HEAD}.weight", f"{_CHOICE_HEAD}.bias")


def _check_choice_summary(config, where):
    """Refuses a double-heads model's summary other than
    ``GPTMultipleChoice``'s head: dropout and a linear layer to one score on
    the state at ``mc_token_ids``."""
    wanted = {"summary_type": "cls_index", "summary_use_proj": True,
              "summary_proj_to_labels": True}
    for key, value in wanted.items():
        if config.get(key, value) != value:
            raise PresetError(
                f"{where} sets {key}={config[key]!r}; GPTMultipleChoice scores the "
                f"extract token's state with one linear layer ({key}={value!r}).")
    if config.get("summary_activation") not in (None, "linear"):
        raise PresetError(
            f"{where} sets summary_activation={config['summary_activation']!r}; "
            "GPTMultipleChoice's score has no activation.")


#: the task preprocessors' default ``sequence_length``
_SEQUENCE_LENGTH = 128


def _model_max_length(path):
    """``model_max_length`` of ``tokenizer_config.json``, when it is a
    positive int."""
    file = Path(path) / "tokenizer_config.json"
    if not file.is_file():
        return None
    try:
        length = read_json(file).get("model_max_length")
    except (PresetError, AttributeError):
        return None
    if isinstance(length, int) and not isinstance(length, bool) and length >= 2:
        return length
    return None


def _is_config(config, model_type, architecture_prefix):
    if config.get("model_type") is not None:
        return config["model_type"] == model_type
    return any(isinstance(a, str) and a.startswith(architecture_prefix)
               for a in config.get("architectures") or ())


def _canonical_name(name):
    """Strips ``GPT2LMHeadModel``'s ``transformer.`` prefix."""
    return name[len("transformer."):] if name.startswith("transformer.") else name


def _weight_map(backbone, embedding_names=("wte.weight", "wpe.weight"),
                final_norm="ln_f"):
    """``[(checkpoint name, variable)]`` for every backbone variable.

    GPT-1 and GPT-2 name their blocks alike (``h.{i}.attn.c_attn``, ...,
    ``Conv1D`` weights stored ``[in, out]``); they differ in the embedding
    names and GPT-2's final layer norm (``final_norm``, None for GPT-1).
    """
    pre_norm = final_norm is not None
    if not hasattr(backbone, "transformer_layers") or (
            getattr(backbone, "layer_norm", None) is None) == pre_norm:
        kind = ("a pre-norm GPTBackbone (normalize_first=True)" if pre_norm
                else "a post-norm GPTBackbone (normalize_first=False)")
        raise PresetError(
            f"This checkpoint loads into {kind}; got {type(backbone).__name__}"
            + (f" with normalize_first={not pre_norm}"
               if hasattr(backbone, "transformer_layers") else "") + ".")
    entries = [
        (embedding_names[0], backbone.token_embedding.embeddings),
        (embedding_names[1], backbone.position_embedding.embeddings),
    ]
    for i, block in enumerate(backbone.transformer_layers):
        p = f"h.{i}."
        entries += [
            (p + "ln_1.weight", block.self_attention_layer_norm.gamma),
            (p + "ln_1.bias", block.self_attention_layer_norm.beta),
            (p + "attn.c_attn.weight", block.query_key_value_dense.kernel),
            (p + "attn.c_attn.bias", block.query_key_value_dense.bias),
            (p + "attn.c_proj.weight", block.attention_output_dense.kernel),
            (p + "attn.c_proj.bias", block.attention_output_dense.bias),
            (p + "ln_2.weight", block.feedforward_layer_norm.gamma),
            (p + "ln_2.bias", block.feedforward_layer_norm.beta),
            (p + "mlp.c_fc.weight", block.feedforward_intermediate_dense.kernel),
            (p + "mlp.c_fc.bias", block.feedforward_intermediate_dense.bias),
            (p + "mlp.c_proj.weight", block.feedforward_output_dense.kernel),
            (p + "mlp.c_proj.bias", block.feedforward_output_dense.bias),
        ]
    if pre_norm:
        entries += [
            (f"{final_norm}.weight", backbone.layer_norm.gamma),
            (f"{final_norm}.bias", backbone.layer_norm.beta),
        ]
    return entries


#: GPTBackbone sizes → the ``config.json`` fields (GPT-1 and GPT-2) they
#: come from, passed as the file writes them: the loader's size check refuses
#: what is not a positive int, naming the file's field
_SIZE_FIELDS = {
    "vocabulary_size": "vocab_size",
    "num_layers": "n_layer",
    "num_heads": "n_head",
    "hidden_dim": "n_embd",
    "max_sequence_length": "n_positions",
}


def _gpt_backbone_config(config, activation, normalize_first, where,
                         intermediate_dim=None):
    """The GPTBackbone config of a GPT-1 or GPT-2 ``config.json`` (same keys:
    ``n_embd``, ``n_layer``, ``n_head``, ``n_positions``, ...); without
    ``intermediate_dim`` (GPT-2's ``n_inner``) it is 4 x ``n_embd``."""
    hidden = config["n_embd"]
    if intermediate_dim is None:
        intermediate_dim = 4 * hidden if isinstance(hidden, int) else hidden
    return {
        "module": "kzoo.models.gpt.gpt_backbone",
        "class_name": "GPTBackbone",
        "registered_name": "kzoo>GPTBackbone",
        "config": {
            **{ours: config[theirs] for ours, theirs in _SIZE_FIELDS.items()},
            "intermediate_dim": intermediate_dim,
            "dropout": config_number(config, "resid_pdrop", where),
            "layer_norm_epsilon": config_number(config, "layer_norm_epsilon", where),
            "activation": activation,
            "normalize_first": normalize_first,
        },
    }


class HuggingFaceGPT2Source(PresetSource):
    """A Hugging Face (transformers) GPT-2 checkpoint folder."""

    format_name = "Hugging Face GPT-2"
    model_type = "gpt2"
    architecture_prefix = "GPT2"
    embedding_names = ("wte.weight", "wpe.weight")
    final_norm = "ln_f"
    defaults = _HF_DEFAULTS
    #: the ``architectures`` whose heads load, and the kzoo task of each
    heads = {"GPT2ForSequenceClassification": "GPTClassifier",
             "GPT2DoubleHeadsModel": "GPTMultipleChoice"}

    @classmethod
    def matches(cls, path):
        if not (Path(path) / CONFIG_FILE).is_file():
            return False
        try:
            return _is_config(read_config(path), cls.model_type, cls.architecture_prefix)
        except PresetError:
            return False

    def backbone_config(self):
        config = {**_HF_DEFAULTS, **read_config(self.path)}
        where = self.path / CONFIG_FILE
        if not config["scale_attn_weights"] or config["scale_attn_by_inverse_layer_idx"]:
            raise PresetError(
                f"{where} sets scale_attn_weights=False or "
                "scale_attn_by_inverse_layer_idx=True; GPTBackbone scales "
                "attention by 1/sqrt(head_dim) only.")
        if config.get("add_cross_attention"):
            raise PresetError(f"{where} has cross-attention (an encoder-decoder "
                              "GPT-2); GPTBackbone is decoder-only.")
        act = config["activation_function"]
        if act not in _ACTIVATIONS:
            raise PresetError(
                f"{where} has activation_function={act!r}, which kzoo does not "
                f"map; known: {', '.join(sorted(_ACTIVATIONS))}.")
        inner = config["n_inner"]
        return _gpt_backbone_config(config, _ACTIVATIONS[act], normalize_first=True,
                                    where=where,
                                    intermediate_dim=inner)

    def config_field_names(self):
        """The file's names of the sizes (GPT-2's ``n_inner`` where the file
        sets it; otherwise the inner width is 4 x ``n_embd``)."""
        names = dict(_SIZE_FIELDS)
        if read_config(self.path).get("n_inner") is not None:
            names["intermediate_dim"] = "n_inner"
        return self.path / CONFIG_FILE, names

    def load_backbone_weights(self, backbone):
        """Copies the checkpoint into ``backbone``, all or nothing.

        Every tensor is matched and its shape checked before any variable is
        assigned; a missing or misshapen tensor raises a PresetError naming
        it and leaves the backbone untouched. An ``lm_head.weight`` that is
        not equal to the token table (an untied head, which kzoo cannot represent)
        is an error too.
        """
        self._load(backbone, backbone)

    def _load(self, model, backbone, head=()):
        """Checks, then assigns, the backbone's tensors and ``head``'s
        (``[(checkpoint name, variable, transpose)]``), all or nothing."""
        if not any((self.path / f).is_file() for f in WEIGHT_FILES):
            raise PresetError(
                f"The {self.format_name} folder {self.path} has no weights "
                f"({' or '.join(WEIGHT_FILES[:2])}). Pass load_weights=False to "
                "build the architecture only.")
        tensors = {_canonical_name(k): v for k, v in read_hf_tensors(self.path).items()}
        if self.embedding_names[0] not in tensors and _HEAD in tensors:
            # A tied table stored once, as the LM head (OpenAIGPTDoubleHeadsModel).
            tensors[self.embedding_names[0]] = tensors[_HEAD]
        entries = [(name, variable, False) for name, variable in
                   _weight_map(backbone, self.embedding_names, self.final_norm)]
        entries += list(head)
        missing, mismatched, plan = [], [], []
        for name, variable, transpose in entries:
            if name not in tensors:
                missing.append(name)
                continue
            array = np.asarray(tensors[name], dtype="float32")
            array = array.T if transpose else array
            if tuple(array.shape) != tuple(variable.shape):
                shape = array.shape[::-1] if transpose else array.shape
                expected = (tuple(variable.shape)[::-1] if transpose
                            else tuple(variable.shape))
                mismatched.append(
                    f"{name} has shape {tuple(shape)} in the checkpoint but "
                    f"the {type(model).__name__} expects {expected}")
                continue
            plan.append((variable, array))
        lm_head, token_table = tensors.get(_HEAD), self.embedding_names[0]
        if lm_head is not None and token_table in tensors and not np.array_equal(
                np.asarray(lm_head), np.asarray(tensors[token_table])):
            mismatched.append(f"{_HEAD} is not tied to (equal to) {token_table}, "
                              "and kzoo's GPT ties them")
        if missing:
            mismatched.append(f"tensors missing from the checkpoint: {listing(missing)}")
        if mismatched:
            raise PresetError(
                f"The weights in {self.path} do not fit the "
                f"{type(model).__name__} built from its config: "
                + "; ".join(mismatched) + ". Check that config.json and the "
                "weights come from the same checkpoint. Nothing was loaded.")
        used = {name for name, _, _ in entries} | {_HEAD}
        if model is backbone:
            used |= set(_HEAD_TENSORS)
        unexpected = [n for n in tensors if n not in used
                      and not n.endswith(_IGNORED_SUFFIXES)]
        for variable, value in plan:
            variable.assign(value)
        if unexpected:
            warnings.warn(f"{self.path} holds tensors the {type(model).__name__} "
                          f"does not use: {listing(unexpected)}.", stacklevel=3)

    # --- fine-tuned heads (see ``PresetSource.task_config``) ---
    def task_architecture(self):
        """The ``architectures`` entry of a head this source reads
        (``GPT2ForSequenceClassification``, ...), else None."""
        names = read_config(self.path).get("architectures") or ()
        return next((n for n in names if n in self.heads), None)

    def head_task_classes(self):
        from kzoo.models.gpt import GPTClassifier, GPTMultipleChoice

        return (GPTClassifier, GPTMultipleChoice)

    def _config(self):
        return {**self.defaults, **read_config(self.path)}

    def task_config(self):
        """The ``GPTClassifier`` of a ``*ForSequenceClassification`` folder:
        ``num_classes`` and ``label_names`` from ``id2label`` (transformers'
        default names ``LABEL_0``, ... give none), no bias and no dropout, as
        transformers' ``score``; or the ``GPTMultipleChoice`` of a
        ``*DoubleHeadsModel``. None for other folders."""
        architecture = self.task_architecture()
        if architecture is None:
            return None
        config = self._config()
        where = self.path / CONFIG_FILE
        if self.heads[architecture] == "GPTMultipleChoice":
            _check_choice_summary(config, where)
            return {"module": "kzoo.models.gpt.gpt_multiple_choice",
                    "class_name": "GPTMultipleChoice",
                    "registered_name": "kzoo>GPTMultipleChoice",
                    "config": {"dropout": config_number(
                        {"summary_first_dropout": 0.1, **config},
                        "summary_first_dropout", where)}}
        num_classes, label_names = class_labels(config, where)
        return {"module": "kzoo.models.gpt.gpt_classifier",
                "class_name": "GPTClassifier",
                "registered_name": "kzoo>GPTClassifier",
                "config": {"num_classes": num_classes, "label_names": label_names,
                           "dropout": 0.0, "use_bias": False}}

    def preprocessor_config(self):
        """A classifier folder's ``GPTClassifierPreprocessor``: the text's own
        tokens (``fine_tuning_tokens=False``) unless the vocabulary has GPT-1's
        three fine-tuning tokens (a GPT-1 classifier fine-tuned with them), or
        a double-heads folder's ``GPTMultipleChoicePreprocessor``;
        ``sequence_length`` is ``tokenizer_config.json``'s ``model_max_length``
        where it fits the positions, else the preprocessor's default (128)
        or ``n_positions`` where that is less. None for other folders."""
        architecture = self.task_architecture()
        if architecture is None:
            return None
        config, positions = {}, self._config()["n_positions"]
        length = _model_max_length(self.path)
        if length is not None and length <= positions:
            config["sequence_length"] = length
        elif isinstance(positions, int) and 2 <= positions < _SEQUENCE_LENGTH:
            config["sequence_length"] = positions
        if self.heads[architecture] == "GPTMultipleChoice":
            name, module = "GPTMultipleChoicePreprocessor", "gpt_multiple_choice_preprocessor"
        else:
            name, module = "GPTClassifierPreprocessor", "gpt_classifier_preprocessor"
            config["fine_tuning_tokens"] = self._has_fine_tuning_tokens()
        return {"module": f"kzoo.models.gpt.{module}", "class_name": name,
                "registered_name": f"kzoo>{name}", "config": config}

    def _has_fine_tuning_tokens(self):
        return False

    def load_task_weights(self, task):
        """The backbone's tensors and the head's (``score.weight``, or
        ``multiple_choice_head.summary.*``), all or nothing, shapes checked."""
        dense = task.output_dense
        if self.heads.get(self.task_architecture()) == "GPTMultipleChoice":
            head = [(f"{_CHOICE_HEAD}.weight", dense.kernel, True),
                    (f"{_CHOICE_HEAD}.bias", dense.bias, False)]
        else:
            head = [("score.weight", dense.kernel, True)]
            if dense.bias is not None:
                head.append(("score.bias", dense.bias, False))
        self._load(task, task.backbone, head)

    def _tokenizer_files(self):
        files = [self.path / VOCABULARY_FILE, self.path / MERGES_FILE]
        absent = [f.name for f in files if not f.is_file()]
        if absent:
            raise PresetError(
                f"The {self.format_name} folder {self.path} has no "
                f"{' and no '.join(absent)} (its BPE vocabulary and merges; a "
                "fast-tokenizer-only tokenizer.json is not read).")
        return [str(f) for f in files]

    def load_tokenizer(self, cls=None, **kwargs):
        vocabulary, merges = self._tokenizer_files()
        tokenizer_cls = cls if cls is not None and cls is not Tokenizer else GPTTokenizer
        if not issubclass(tokenizer_cls, BytePairTokenizer):
            raise PresetError(f"{self.path} holds a byte-level BPE vocabulary; "
                              f"{tokenizer_cls.__name__} cannot read it.")
        return tokenizer_cls(vocabulary=vocabulary, merges=merges, **kwargs)


#: transformers.OpenAIGPTConfig defaults, for keys a config.json leaves out
_OPENAI_GPT_DEFAULTS = {
    "vocab_size": 40478,
    "n_positions": 512,
    "n_embd": 768,
    "n_layer": 12,
    "n_head": 12,
    "afn": "gelu",
    "resid_pdrop": 0.1,
    "layer_norm_epsilon": 1e-5,
}

#: OpenAIGPT's ``afn`` → GPTBackbone ``activation`` ("gelu" is its tanh GELU)
_OPENAI_GPT_ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu",
                           "silu": "silu", "swish": "silu"}


class HuggingFaceOpenAIGPTSource(HuggingFaceGPT2Source):
    """A Hugging Face ``openai-gpt`` (GPT-1) checkpoint folder.

    ``config.json`` with ``"model_type": "openai-gpt"`` (``n_embd``,
    ``n_layer``, ``afn``, ...), weights of ``OpenAIGPTModel`` or
    ``OpenAIGPTLMHeadModel`` (``tokens_embed``, ``positions_embed``,
    ``h.{i}.*``; the LM head is tied to ``tokens_embed``), and ``vocab.json``
    + ``merges.txt`` with ``</w>`` word ends, read by ``GPT1Tokenizer``.
    The backbone is post-norm (``normalize_first=False``) with no final
    layer norm. An ``OpenAIGPTDoubleHeadsModel``'s multiple-choice head
    loads into ``GPTMultipleChoice`` and an
    ``OpenAIGPTForSequenceClassification``'s ``score`` into ``GPTClassifier``
    (``use_bias=False``; with GPT-1's fine-tuning tokens when the vocabulary
    has them).
    """

    format_name = "Hugging Face OpenAI GPT (GPT-1)"
    model_type = "openai-gpt"
    architecture_prefix = "OpenAIGPT"
    embedding_names = ("tokens_embed.weight", "positions_embed.weight")
    final_norm = None
    defaults = _OPENAI_GPT_DEFAULTS
    heads = {"OpenAIGPTForSequenceClassification": "GPTClassifier",
             "OpenAIGPTDoubleHeadsModel": "GPTMultipleChoice"}

    def backbone_config(self):
        config = {**_OPENAI_GPT_DEFAULTS, **read_config(self.path)}
        act = config["afn"]
        if act not in _OPENAI_GPT_ACTIVATIONS:
            raise PresetError(
                f"{self.path / CONFIG_FILE} has afn={act!r}, which kzoo does not "
                f"map; known: {', '.join(sorted(_OPENAI_GPT_ACTIVATIONS))}.")
        return _gpt_backbone_config(config, _OPENAI_GPT_ACTIVATIONS[act],
                                    normalize_first=False,
                                    where=self.path / CONFIG_FILE)

    def _has_fine_tuning_tokens(self):
        vocabulary = self.path / VOCABULARY_FILE
        if not vocabulary.is_file():
            return False
        tokens = read_json(vocabulary)
        return isinstance(tokens, dict) and all(t in tokens for t in FINE_TUNING_TOKENS)

    def load_tokenizer(self, cls=None, **kwargs):
        """A ``GPT1Tokenizer``; asked for a ``GPTTokenizer`` (as the GPT
        tasks' preprocessors ask), the GPT-1 tokenizer is what fits."""
        vocabulary, merges = self._tokenizer_files()
        tokenizer_cls = cls if cls is not None and issubclass(cls, GPT1Tokenizer) \
            else GPT1Tokenizer
        if cls is not None and not issubclass(cls, BytePairTokenizer) and cls is not Tokenizer:
            raise PresetError(f"{self.path} holds a GPT-1 BPE vocabulary; "
                              f"{cls.__name__} cannot read it.")
        return tokenizer_cls(vocabulary=vocabulary, merges=merges, **kwargs)
