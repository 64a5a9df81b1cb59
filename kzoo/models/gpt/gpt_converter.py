"""Reads Hugging Face GPT-2 checkpoint folders as kzoo presets.

A folder written by transformers' ``save_pretrained`` for ``GPT2Model`` or
``GPT2LMHeadModel`` (``config.json`` with ``"model_type": "gpt2"``, weights
in ``model.safetensors`` or ``pytorch_model.bin``, and ``vocab.json`` +
``merges.txt``) loads with ``GPTBackbone.from_preset(folder)`` and
``GPTCausalLM.from_preset(folder)``: the config is mapped to GPTBackbone
arguments and every tensor is checked, then copied, into the backbone.
GPT-2's ``Conv1D`` weights are stored ``[in, out]``, which is a Keras
``Dense`` kernel as is. The LM head is tied to ``wte``, so it needs nothing.

Tensors are read by ``read_hf_tensors`` (safetensors with numpy; a
``pytorch_model.bin`` only with ``torch.load(weights_only=True)``).
"""

import warnings
from pathlib import Path

import numpy as np

from kzoo.presets.errors import PresetError
from kzoo.presets.hugging_face import CONFIG_FILE, listing, read_config, read_hf_tensors
from kzoo.presets.preset_source import PresetSource, register_converter
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


def _is_gpt2_config(config):
    model_type = config.get("model_type")
    if model_type is not None:
        return model_type == "gpt2"
    return any(isinstance(a, str) and a.startswith("GPT2")
               for a in config.get("architectures") or ())


def _canonical_name(name):
    """Strips ``GPT2LMHeadModel``'s ``transformer.`` prefix."""
    return name[len("transformer."):] if name.startswith("transformer.") else name


def _weight_map(backbone):
    """``[(checkpoint name, variable)]`` for every backbone variable."""
    if not hasattr(backbone, "transformer_layers") or getattr(
            backbone, "layer_norm", None) is None:
        raise PresetError(
            "A Hugging Face GPT-2 checkpoint loads into a pre-norm GPTBackbone "
            f"(normalize_first=True); got {type(backbone).__name__}"
            + (" with normalize_first=False" if hasattr(backbone, "transformer_layers")
               else "") + ".")
    entries = [
        ("wte.weight", backbone.token_embedding.embeddings),
        ("wpe.weight", backbone.position_embedding.embeddings),
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
    entries += [
        ("ln_f.weight", backbone.layer_norm.gamma),
        ("ln_f.bias", backbone.layer_norm.beta),
    ]
    return entries


@register_converter
class HuggingFaceGPT2Source(PresetSource):
    """A Hugging Face (transformers) GPT-2 checkpoint folder."""

    format_name = "Hugging Face GPT-2"

    @classmethod
    def matches(cls, path):
        if not (Path(path) / CONFIG_FILE).is_file():
            return False
        try:
            return _is_gpt2_config(read_config(path))
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
        hidden = int(config["n_embd"])
        inner = config["n_inner"]
        return {
            "module": "kzoo.models.gpt.gpt_backbone",
            "class_name": "GPTBackbone",
            "registered_name": "kzoo>GPTBackbone",
            "config": {
                "vocabulary_size": int(config["vocab_size"]),
                "num_layers": int(config["n_layer"]),
                "num_heads": int(config["n_head"]),
                "hidden_dim": hidden,
                "intermediate_dim": int(inner) if inner else 4 * hidden,
                "dropout": float(config["resid_pdrop"]),
                "max_sequence_length": int(config["n_positions"]),
                "layer_norm_epsilon": float(config["layer_norm_epsilon"]),
                "activation": _ACTIVATIONS[act],
                "normalize_first": True,
            },
        }

    def load_backbone_weights(self, backbone):
        """Copies the checkpoint into ``backbone``, all or nothing.

        Every tensor is matched and its shape checked before any variable is
        assigned; a missing or misshapen tensor raises a PresetError naming
        it and leaves the backbone untouched. An ``lm_head.weight`` that is
        not equal to ``wte`` (an untied head, which kzoo cannot represent)
        is an error too.
        """
        if not any((self.path / f).is_file() for f in WEIGHT_FILES):
            raise PresetError(
                f"The Hugging Face GPT-2 folder {self.path} has no weights "
                f"({' or '.join(WEIGHT_FILES[:2])}). Pass load_weights=False to "
                "build the architecture only.")
        tensors = {_canonical_name(k): v for k, v in read_hf_tensors(self.path).items()}
        entries = _weight_map(backbone)
        missing, mismatched, plan = [], [], []
        for name, variable in entries:
            if name not in tensors:
                missing.append(name)
                continue
            array = np.asarray(tensors[name], dtype="float32")
            if tuple(array.shape) != tuple(variable.shape):
                mismatched.append(
                    f"{name} has shape {tuple(array.shape)} in the checkpoint but "
                    f"the {type(backbone).__name__} expects {tuple(variable.shape)}")
                continue
            plan.append((variable, array))
        head = tensors.get(_HEAD)
        if head is not None and "wte.weight" in tensors and not np.array_equal(
                np.asarray(head), np.asarray(tensors["wte.weight"])):
            mismatched.append(f"{_HEAD} is not tied to (equal to) wte.weight, and "
                              "kzoo's GPT ties them")
        if missing:
            mismatched.append(f"tensors missing from the checkpoint: {listing(missing)}")
        if mismatched:
            raise PresetError(
                f"The weights in {self.path} do not fit the "
                f"{type(backbone).__name__} built from its config: "
                + "; ".join(mismatched) + ". Check that config.json and the "
                "weights come from the same checkpoint. Nothing was loaded.")
        used = {name for name, _ in entries} | {_HEAD}
        unexpected = [n for n in tensors if n not in used
                      and not n.endswith(_IGNORED_SUFFIXES)]
        for variable, value in plan:
            variable.assign(value)
        if unexpected:
            warnings.warn(f"{self.path} holds tensors the {type(backbone).__name__} "
                          f"does not use: {listing(unexpected)}.", stacklevel=2)

    def load_tokenizer(self, cls=None, **kwargs):
        from kzoo.models.gpt.gpt_tokenizer import GPTTokenizer

        files = [self.path / VOCABULARY_FILE, self.path / MERGES_FILE]
        absent = [f.name for f in files if not f.is_file()]
        if absent:
            raise PresetError(
                f"The Hugging Face GPT-2 folder {self.path} has no "
                f"{' and no '.join(absent)} (GPT-2's byte-level BPE files; a "
                "fast-tokenizer-only tokenizer.json is not read).")
        tokenizer_cls = cls if cls is not None and cls is not Tokenizer else GPTTokenizer
        if not issubclass(tokenizer_cls, BytePairTokenizer):
            raise PresetError(f"{self.path} holds a byte-level BPE vocabulary; "
                              f"{tokenizer_cls.__name__} cannot read it.")
        return tokenizer_cls(vocabulary=str(files[0]), merges=str(files[1]), **kwargs)
