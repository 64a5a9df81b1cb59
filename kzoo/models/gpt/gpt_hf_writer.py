"""Writes kzoo GPT-2 models as Hugging Face (transformers) folders.

The inverse of ``gpt_converter``: a pre-norm ``GPTBackbone`` (GPT-2's
layout) becomes a ``GPT2Model`` folder and a ``GPTCausalLM`` on one a
``GPT2LMHeadModel`` (the LM head tied to ``wte``, as in both), with the
byte-level BPE tokenizer as ``vocab.json`` + ``merges.txt``. GPT-2's
``Conv1D`` weights are ``[in, out]``, a Keras ``Dense`` kernel as is.

A post-norm (GPT-1) backbone and kzoo's GPT-1-style classifier and
multiple-choice heads (which read an extract token) have no GPT-2
equivalent in transformers that computes the same, and are refused.
"""

import keras
import numpy as np

from kzoo.models.gpt.gpt_converter import _HEAD, MERGES_FILE, VOCABULARY_FILE, _weight_map
from kzoo.models.gpt.gpt_tokenizer import END_TOKEN
from kzoo.presets.hugging_face import write_hf_folder, write_json

#: GPTBackbone ``activation`` → transformers ``activation_function``
ACTIVATIONS = {"gelu_approximate": "gelu_new", "gelu": "gelu", "relu": "relu",
               "silu": "silu", "tanh": "tanh"}


def backbone_config(backbone):
    """transformers' ``GPT2Config`` (a dict) of a pre-norm ``GPTBackbone``."""
    if backbone.activation not in ACTIVATIONS:
        raise ValueError(
            f"The GPTBackbone's activation {backbone.activation!r} has no "
            f"transformers equivalent; those that do: {', '.join(sorted(ACTIVATIONS))}.")
    dropout = float(backbone.dropout)
    return {
        "model_type": "gpt2",
        "vocab_size": int(backbone.vocabulary_size),
        "n_positions": int(backbone.max_sequence_length),
        "n_embd": int(backbone.hidden_dim),
        "n_layer": int(backbone.num_layers),
        "n_head": int(backbone.num_heads),
        "n_inner": int(backbone.intermediate_dim),
        "activation_function": ACTIVATIONS[backbone.activation],
        "resid_pdrop": dropout,
        "embd_pdrop": dropout,
        "attn_pdrop": dropout,
        "layer_norm_epsilon": float(backbone.layer_norm_epsilon),
        "initializer_range": 0.02,
        "scale_attn_weights": True,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
    }


def write_tokenizer(tokenizer, folder, max_length=None):
    """Writes a byte-level BPE tokenizer as transformers' ``GPT2Tokenizer``
    files."""
    write_json(f"{folder}/{VOCABULARY_FILE}", dict(tokenizer.vocabulary))
    with open(f"{folder}/{MERGES_FILE}", "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(merge + "\n" for merge in tokenizer.merges))
    special = {}
    if END_TOKEN in tokenizer.vocabulary:
        special = {"bos_token": END_TOKEN, "eos_token": END_TOKEN, "unk_token": END_TOKEN}
    config = {"tokenizer_class": "GPT2Tokenizer", "add_prefix_space": False,
              "add_bos_token": False, **special}
    if max_length is not None:
        config["model_max_length"] = int(max_length)
    write_json(f"{folder}/tokenizer_config.json", config)
    write_json(f"{folder}/special_tokens_map.json", special)


def save_hugging_face(model, path, tokenizer=None):
    """Writes a kzoo GPT-2 model as a transformers folder at ``path``.

    Args:
        model: a pre-norm ``GPTBackbone`` (``GPT2Model``) or a
            ``GPTCausalLM`` on one (``GPT2LMHeadModel``).
        path: the folder to write (replaced atomically).
        tokenizer: the BPE tokenizer to write beside it; defaults to the
            task's preprocessor's (a backbone alone: no tokenizer files).

    Returns:
        The absolute ``path``.
    """
    from kzoo.models.gpt import GPTBackbone, GPTCausalLM

    preprocessor = getattr(model, "preprocessor", None)
    if tokenizer is None and preprocessor is not None:
        tokenizer = preprocessor.tokenizer
    if isinstance(model, GPTBackbone):
        backbone, architecture, prefix = model, "GPT2Model", ""
    elif isinstance(model, GPTCausalLM):
        backbone, architecture, prefix = model.backbone, "GPT2LMHeadModel", "transformer."
    else:
        raise ValueError(
            f"{type(model).__name__} has no transformers equivalent that computes "
            "the same: export a GPTBackbone (GPT2Model) or a GPTCausalLM "
            "(GPT2LMHeadModel), or its `backbone`.")
    if not backbone.normalize_first:
        raise ValueError(
            "This GPTBackbone is post-norm (normalize_first=False, GPT-1's "
            "layout); transformers' GPT2Model is pre-norm. Only a pre-norm "
            "backbone exports as GPT-2.")
    tensors = {prefix + name: np.asarray(keras.ops.convert_to_numpy(variable), "float32")
               for name, variable in _weight_map(backbone)}
    if architecture == "GPT2LMHeadModel":
        tensors[_HEAD] = tensors["transformer.wte.weight"].copy()
    config = {**backbone_config(backbone), "architectures": [architecture]}
    if tokenizer is not None and getattr(tokenizer, "end_token_id", None) is not None:
        config["bos_token_id"] = config["eos_token_id"] = int(tokenizer.end_token_id)
    max_length = getattr(preprocessor, "sequence_length", None)

    def tokenizer_files(folder):
        if tokenizer is not None:
            write_tokenizer(tokenizer, folder, max_length)

    return write_hf_folder(path, config, tensors, tokenizer_files)
