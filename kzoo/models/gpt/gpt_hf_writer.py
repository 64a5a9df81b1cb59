"""Writes kzoo GPT models as Hugging Face (transformers) folders.

The inverse of ``gpt_converter``. A pre-norm ``GPTBackbone`` (GPT-2's
layout) writes GPT-2 classes, a post-norm one (``normalize_first=False``,
GPT-1's layout) OpenAI GPT classes:

=========================  ================================  ======================================
kzoo                       transformers (pre-norm)           transformers (post-norm)
=========================  ================================  ======================================
``GPTBackbone``            ``GPT2Model``                     ``OpenAIGPTModel``
``GPTCausalLM``            ``GPT2LMHeadModel``               ``OpenAIGPTLMHeadModel``
``GPTClassifier``          ``GPT2ForSequenceClassification`` ``OpenAIGPTForSequenceClassification``
``GPTMultipleChoice``      ``GPT2DoubleHeadsModel``          ``OpenAIGPTDoubleHeadsModel``
=========================  ================================  ======================================

The LM head is tied to the token embedding in all of them. GPT-2's and
GPT-1's ``Conv1D`` weights are ``[in, out]``, a Keras ``Dense`` kernel as
is; a head's ``Linear`` weight is the kernel transposed.

transformers' sequence classifiers read the state of each row's last token
that is not ``pad_token_id`` through ``score``, a linear layer without
bias: a ``GPTClassifier`` with ``use_bias=False`` computes the same, and on
GPT-2 its preprocessor must pack the text's own tokens
(``fine_tuning_tokens=False``), as transformers' tokenizer does. The config's
``pad_token_id`` is the id the preprocessor pads with. A GPT-1-style
classifier (a head with a bias, or GPT-2 framed by fine-tuning tokens) and a
symmetric one have no transformers equivalent and are refused.

The double-heads models' multiple-choice head is dropout and a linear
layer (with bias) to one score on the state at ``mc_token_ids``:
``GPTMultipleChoice``'s head, which reads each choice's ``<|extract|>``
token, the last real one. Its ``mc_logits`` equal kzoo's when
``mc_token_ids`` points at that token; its ``logits`` are the tied LM head's.

A byte-level ``GPTTokenizer`` is written as ``GPT2Tokenizer`` files and a
``GPT1Tokenizer`` as ``OpenAIGPTTokenizer`` files (``vocab.json`` +
``merges.txt``), with GPT-1's fine-tuning tokens as special tokens when the
vocabulary has them.
"""

import keras
import numpy as np

from kzoo.models.gpt.gpt_converter import (
    _HEAD,
    MERGES_FILE,
    VOCABULARY_FILE,
    _weight_map,
)
from kzoo.models.gpt.fine_tuning_tokens import FINE_TUNING_TOKENS
from kzoo.models.gpt.gpt_tokenizer import END_TOKEN
from kzoo.presets.hugging_face import write_hf_folder, write_json

#: GPTBackbone ``activation`` → transformers' GPT-2 ``activation_function``
ACTIVATIONS = {"gelu_approximate": "gelu_new", "gelu": "gelu", "relu": "relu",
               "silu": "silu", "tanh": "tanh"}
#: GPTBackbone ``activation`` → transformers' OpenAI GPT ``afn`` (its
#: "gelu" is the tanh approximation)
OPENAI_GPT_ACTIVATIONS = {"gelu_approximate": "gelu", "relu": "relu", "silu": "silu"}
#: the multiple-choice head's tensors in the double-heads models
CHOICE_HEAD = "multiple_choice_head.summary"


def _array(variable):
    return np.asarray(keras.ops.convert_to_numpy(variable), "float32")


def _check_activation(backbone, table, what):
    if backbone.activation not in table:
        raise ValueError(
            f"The GPTBackbone's activation {backbone.activation!r} has no {what} "
            f"equivalent; those that do: {', '.join(sorted(table))}.")


def backbone_config(backbone):
    """transformers' ``GPT2Config`` or ``OpenAIGPTConfig`` (a dict) of a
    pre-norm or post-norm ``GPTBackbone``."""
    dropout = float(backbone.dropout)
    sizes = {
        "vocab_size": int(backbone.vocabulary_size),
        "n_positions": int(backbone.max_sequence_length),
        "n_embd": int(backbone.hidden_dim),
        "n_layer": int(backbone.num_layers),
        "n_head": int(backbone.num_heads),
        "resid_pdrop": dropout,
        "embd_pdrop": dropout,
        "attn_pdrop": dropout,
        "layer_norm_epsilon": float(backbone.layer_norm_epsilon),
        "initializer_range": 0.02,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
    }
    if not backbone.normalize_first:
        _check_activation(backbone, OPENAI_GPT_ACTIVATIONS, "OpenAI GPT (GPT-1)")
        if backbone.intermediate_dim != 4 * backbone.hidden_dim:
            raise ValueError(
                f"transformers' OpenAI GPT has a feed-forward width of 4 x n_embd; "
                f"this post-norm GPTBackbone has intermediate_dim="
                f"{backbone.intermediate_dim} and hidden_dim={backbone.hidden_dim}.")
        return {"model_type": "openai-gpt", **sizes,
                "afn": OPENAI_GPT_ACTIVATIONS[backbone.activation]}
    _check_activation(backbone, ACTIVATIONS, "transformers GPT-2")
    return {"model_type": "gpt2", **sizes,
            "n_inner": int(backbone.intermediate_dim),
            "activation_function": ACTIVATIONS[backbone.activation],
            "scale_attn_weights": True}


def write_tokenizer(tokenizer, folder, max_length=None):
    """Writes a BPE tokenizer as transformers' ``GPT2Tokenizer`` files (a
    ``GPTTokenizer``) or ``OpenAIGPTTokenizer`` files (a ``GPT1Tokenizer``)."""
    from kzoo.models.gpt.gpt1_tokenizer import GPT1Tokenizer

    write_json(f"{folder}/{VOCABULARY_FILE}", dict(tokenizer.vocabulary))
    with open(f"{folder}/{MERGES_FILE}", "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(merge + "\n" for merge in tokenizer.merges))
    added = [t for t in FINE_TUNING_TOKENS if t in tokenizer.vocabulary]
    if isinstance(tokenizer, GPT1Tokenizer):
        special = {"unk_token": tokenizer.unk_token}
        config = {"tokenizer_class": "OpenAIGPTTokenizer", **special}
    else:
        special = {}
        if END_TOKEN in tokenizer.vocabulary:
            special = {"bos_token": END_TOKEN, "eos_token": END_TOKEN,
                       "unk_token": END_TOKEN}
        config = {"tokenizer_class": "GPT2Tokenizer", "add_prefix_space": False,
                  "add_bos_token": False, **special}
    if added:
        special["additional_special_tokens"] = added
        config["additional_special_tokens"] = added
    if max_length is not None:
        config["model_max_length"] = int(max_length)
    write_json(f"{folder}/tokenizer_config.json", config)
    write_json(f"{folder}/special_tokens_map.json", special)


def _labels(task):
    names = task.label_names or [f"LABEL_{i}" for i in range(task.num_classes)]
    return {"id2label": {str(i): n for i, n in enumerate(names)},
            "label2id": {n: i for i, n in enumerate(names)}}


def _pad_token_id(preprocessor, tokenizer):
    """The id the preprocessor pads with (its tokenizer's padding id, else 0)."""
    tokenizer = getattr(preprocessor, "tokenizer", None) or tokenizer
    pad = getattr(tokenizer, "pad_token_id", None) if tokenizer is not None else None
    return int(pad) if pad is not None else 0


def _classifier_head(task, gpt2, tokenizer):
    """``(tensors, config additions)`` of a ``GPTClassifier`` written as
    transformers' sequence classifier, or a ValueError saying why it is not
    one."""
    name = "GPT2ForSequenceClassification" if gpt2 else "OpenAIGPTForSequenceClassification"
    if task.use_bias:
        raise ValueError(
            f"transformers' {name} scores the last token with a linear layer "
            "without bias; this GPTClassifier's head has one (GPT-1's "
            "fine-tuning head). Build the classifier with use_bias=False to "
            "export it.")
    if task.symmetric:
        raise ValueError(f"transformers' {name} reads one sequence a text; this "
                         "GPTClassifier adds the states of both orders of a pair "
                         "(symmetric=True).")
    if not task._outputs_logits():
        raise ValueError(
            f"transformers' {name} returns logits; this GPTClassifier has the "
            f"output activation {task.activation.__name__!r}. Build it with "
            "activation=None (its softmax is the same model).")
    preprocessor = task.preprocessor
    if gpt2 and getattr(preprocessor, "fine_tuning_tokens", False):
        raise ValueError(
            f"transformers' {name} reads the text's own tokens; this "
            "GPTClassifier's preprocessor frames them with GPT-1's "
            "<|start|> ... <|extract|> tokens, which transformers' tokenizer "
            "does not add. Build the preprocessor with fine_tuning_tokens=False.")
    config = {"num_labels": int(task.num_classes), **_labels(task),
              "pad_token_id": _pad_token_id(preprocessor, tokenizer)}
    if task.num_classes == 1:
        config["problem_type"] = "regression"
    return {"score.weight": _array(task.output_dense.kernel).T}, config


def _choice_head(task):
    """``(tensors, config additions)`` of a double-heads model's
    multiple-choice head."""
    dense = task.output_dense
    config = {"num_labels": 1, "summary_type": "cls_index", "summary_use_proj": True,
              "summary_proj_to_labels": True, "summary_activation": None,
              "summary_first_dropout": float(task.dropout)}
    return {f"{CHOICE_HEAD}.weight": _array(dense.kernel).T,
            f"{CHOICE_HEAD}.bias": _array(dense.bias)}, config


def save_hugging_face(model, path, tokenizer=None):
    """Writes a kzoo GPT model as a transformers folder at ``path``.

    Args:
        model: a ``GPTBackbone`` or a GPT task of the table above.
        path: the folder to write (replaced atomically).
        tokenizer: the BPE tokenizer to write beside it; defaults to the
            task's preprocessor's (a backbone alone: no tokenizer files).

    Returns:
        The absolute ``path``.
    """
    from kzoo.models.gpt import GPTBackbone, GPTCausalLM, GPTClassifier, GPTMultipleChoice

    preprocessor = getattr(model, "preprocessor", None)
    if tokenizer is None and preprocessor is not None:
        tokenizer = preprocessor.tokenizer
    backbone = model if isinstance(model, GPTBackbone) else getattr(model, "backbone", None)
    if not isinstance(backbone, GPTBackbone):
        raise TypeError(f"`model` must be a GPT backbone or task, got "
                        f"{type(model).__name__}.")
    gpt2 = bool(backbone.normalize_first)
    family = "GPT2" if gpt2 else "OpenAIGPT"
    head_tensors, extra, lm_head = {}, {}, False
    if model is backbone:
        architecture = f"{family}Model"
    elif isinstance(model, GPTCausalLM):
        architecture, lm_head = f"{family}LMHeadModel", True
    elif isinstance(model, GPTClassifier):
        architecture = f"{family}ForSequenceClassification"
        head_tensors, extra = _classifier_head(model, gpt2, tokenizer)
    elif isinstance(model, GPTMultipleChoice):
        architecture, lm_head = f"{family}DoubleHeadsModel", True
        head_tensors, extra = _choice_head(model)
    else:
        raise ValueError(
            f"{type(model).__name__} has no transformers equivalent that computes "
            "the same: export a GPTBackbone, GPTCausalLM, GPTClassifier or "
            "GPTMultipleChoice, or `model.backbone`.")
    prefix = "" if model is backbone else "transformer."
    names = (("wte.weight", "wpe.weight"), "ln_f") if gpt2 else (
        ("tokens_embed.weight", "positions_embed.weight"), None)
    config = backbone_config(backbone)
    tensors = {prefix + name: _array(variable)
               for name, variable in _weight_map(backbone, *names)}
    if lm_head:
        tensors[_HEAD] = tensors[prefix + names[0][0]].copy()
    tensors.update(head_tensors)
    config = {**config, **extra, "architectures": [architecture]}
    if gpt2 and tokenizer is not None and getattr(tokenizer, "end_token_id", None) is not None:
        config["bos_token_id"] = config["eos_token_id"] = int(tokenizer.end_token_id)
    max_length = getattr(preprocessor, "sequence_length", None)

    def tokenizer_files(folder):
        if tokenizer is not None:
            write_tokenizer(tokenizer, folder, max_length)

    return write_hf_folder(path, config, tensors, tokenizer_files)
