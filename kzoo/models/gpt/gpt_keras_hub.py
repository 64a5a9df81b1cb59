"""keras-hub GPT-2 presets, in and out (without keras-hub).

In: a folder written by keras-hub's ``save_to_preset`` for ``GPT2Backbone``
or ``GPT2CausalLM`` loads with ``GPTBackbone.from_preset(folder)`` and
``GPTCausalLM.from_preset(folder)`` (a pre-norm GPTBackbone with the tanh
GELU and layer-norm epsilon 1e-5, as keras-hub's; both tie the language
model head to the token embedding). keras-hub keeps separate query, key
and value kernels ``(hidden, heads, head_dim)``; kzoo's block fuses them
into one ``(hidden, 3 * hidden)`` kernel.

Out: ``save_keras_hub`` writes a GPT-2 backbone or causal LM (with its
tokenizer and preprocessor) as a folder that
``keras_hub.models.GPT2Backbone.from_preset`` and
``GPT2CausalLM.from_preset`` load.
"""

import json

from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.models.gpt.gpt_causal_lm import GPTCausalLM
from kzoo.models.gpt.gpt_tokenizer import GPTTokenizer
from kzoo.presets import keras_hub
from kzoo.presets.errors import PresetError
from kzoo.tokenizers.byte_pair_tokenizer import BytePairTokenizer
from kzoo.tokenizers.tokenizer import Tokenizer

_SIZES = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim",
          "intermediate_dim", "dropout", "max_sequence_length")
#: what keras-hub's GPT2Backbone fixes
_ACTIVATION = "gelu_approximate"
_EPSILON = 1e-5
_TASK_SHAPES = ("CausalLM",)
_CAUSAL_LM_KEYS = ("sequence_length", "add_start_token", "add_end_token")


def backbone_links(backbone):
    """The ``Link``s of a pre-norm ``GPTBackbone``'s variables to keras-hub's
    ``GPT2Backbone`` weights."""
    link = keras_hub.link
    hidden, heads = backbone.hidden_dim, backbone.num_heads
    per_head = (heads, hidden // heads)
    links = [
        link(backbone.token_embedding.embeddings, "layers/reversible_embedding/vars/0"),
        link(backbone.position_embedding.embeddings, "layers/position_embedding/vars/0"),
    ]
    for i, block in enumerate(backbone.transformer_layers):
        key = f"layers/{keras_hub.layer_key('transformer_decoder', i)}"
        attention = f"{key}/_self_attention_layer/"
        qkv = [f"{attention}{name}_dense/vars/" for name in ("query", "key", "value")]
        output = block.attention_output_dense
        links += [
            # kzoo's fused (hidden, 3 * hidden) kernel: query, key, value.
            keras_hub.Link(block.query_key_value_dense.kernel,
                           tuple(p + "0" for p in qkv), ((hidden,) + per_head,) * 3),
            keras_hub.Link(block.query_key_value_dense.bias,
                           tuple(p + "1" for p in qkv), (per_head,) * 3),
            link(output.kernel, f"{attention}output_dense/vars/0", per_head + (hidden,)),
            link(output.bias, f"{attention}output_dense/vars/1"),
            *keras_hub.block_links(block, key),
        ]
    links += keras_hub.pair_links(backbone.layer_norm.gamma, backbone.layer_norm.beta,
                                  "layers/layer_normalization")
    return links


class KerasHubGPT2Source(keras_hub.KerasHubSource):
    """A keras-hub ``GPT2Backbone`` preset folder (see the module)."""

    format_name = "keras-hub GPT-2"
    backbone_class = "GPT2Backbone"
    kzoo_backbone = "kzoo>GPTBackbone"
    tasks = {"GPT2CausalLM": ("kzoo>GPTCausalLM", ())}
    preprocessors = {
        "GPT2CausalLMPreprocessor": ("kzoo>GPTCausalLMPreprocessor", _CAUSAL_LM_KEYS),
        "GPT2Preprocessor": ("kzoo>GPTCausalLMPreprocessor", _CAUSAL_LM_KEYS),
    }
    fallback_preprocessor = "kzoo>GPTCausalLMPreprocessor"

    def kzoo_backbone_config(self, config):
        return {**{k: config[k] for k in _SIZES if k in config},
                "activation": _ACTIVATION, "layer_norm_epsilon": _EPSILON,
                "normalize_first": True}

    def backbone_links(self, backbone):
        if getattr(backbone, "layer_norm", None) is None:
            raise PresetError(f"A keras-hub GPT-2 preset loads into a pre-norm "
                              f"GPTBackbone (normalize_first=True); got "
                              f"{type(backbone).__name__} without a final layer norm.")
        return backbone_links(backbone)

    def load_tokenizer(self, cls=None, **kwargs):
        """keras-hub's ``GPT2Tokenizer`` (``tokenizer.json``,
        ``assets/tokenizer/vocabulary.json`` and ``merges.txt``) as a kzoo
        ``GPTTokenizer``."""
        config, assets = self.tokenizer_config("GPT2Tokenizer")
        tokenizer_cls = cls if cls is not None and cls is not Tokenizer else GPTTokenizer
        if not issubclass(tokenizer_cls, BytePairTokenizer):
            raise PresetError(f"{self.path} holds a byte-level BPE vocabulary; "
                              f"{tokenizer_cls.__name__} cannot read it.")
        files = [assets / "vocabulary.json", assets / "merges.txt"]
        absent = [f.name for f in files if not f.is_file()]
        if absent:
            raise PresetError(f"The keras-hub preset folder {self.path} has no "
                              f"{' and no '.join(absent)} in {keras_hub.TOKENIZER_ASSETS_DIR}.")
        settings = {"add_prefix_space": bool(config.get("add_prefix_space", False))}
        if config.get("unsplittable_tokens"):
            settings["unsplittable_tokens"] = tuple(config["unsplittable_tokens"])
        settings.update(kwargs)
        return tokenizer_cls(vocabulary=str(files[0]), merges=str(files[1]), **settings)


def _tokenizer_parts(tokenizer):
    """keras-hub's ``tokenizer.json`` and assets for a kzoo ``GPTTokenizer``."""
    if not isinstance(tokenizer, GPTTokenizer):
        raise ValueError(f"A keras-hub GPT-2 preset holds GPT-2's byte-level BPE "
                         f"tokenizer (kzoo's GPTTokenizer); got a "
                         f"{type(tokenizer).__name__}.")
    json_form = keras_hub.serialize_tokenizer("gpt2.gpt2_tokenizer", "GPT2Tokenizer", {
        "add_prefix_space": tokenizer.add_prefix_space,
        "unsplittable_tokens": list(tokenizer.unsplittable_tokens or ()),
    })
    return json_form, {
        "vocabulary.json": json.dumps(dict(tokenizer.vocabulary)),
        "merges.txt": "".join(f"{merge}\n" for merge in tokenizer.merges),
    }


def save_keras_hub(model, path, tokenizer=None):
    """Writes a GPT-2 ``GPTBackbone`` or ``GPTCausalLM`` as a keras-hub preset.

    Args:
        model: a pre-norm backbone with the tanh GELU and layer-norm epsilon
            1e-5 (keras-hub's ``GPT2Backbone``), or a ``GPTCausalLM`` on one
            (``GPT2CausalLM``).
        path: the folder (replaced atomically; left as it was on failure).
        tokenizer: the tokenizer to write; defaults to the task's
            preprocessor's. Without one the folder holds the backbone only.

    Returns:
        The absolute ``path``.
    """
    backbone, tokenizer, preprocessor = keras_hub.task_parts(
        model, tokenizer, GPTBackbone, GPTCausalLM, ("GPT2Backbone", "GPT2CausalLM"))
    differences = [
        f"{name}={getattr(backbone, name)!r} (keras-hub: {wanted!r})"
        for name, wanted in (("normalize_first", True), ("activation", _ACTIVATION),
                             ("layer_norm_epsilon", _EPSILON))
        if getattr(backbone, name) != wanted]
    if differences:
        raise ValueError("keras-hub's GPT2Backbone is GPT-2 (pre-norm, tanh GELU, "
                         f"epsilon {_EPSILON}); this backbone has "
                         f"{', '.join(differences)}.")
    config = keras_hub.serialize_backbone("gpt2.gpt2_backbone", "GPT2Backbone",
                                          backbone, _SIZES)
    tokenizer_parts = _tokenizer_parts(tokenizer) if tokenizer is not None else None
    task = preprocessor_json = None
    if isinstance(model, GPTCausalLM):
        if tokenizer_parts is not None and preprocessor is not None:
            preprocessor_json = keras_hub.serialize_preprocessor(
                "gpt2.gpt2_causal_lm_preprocessor", "GPT2CausalLMPreprocessor",
                tokenizer_parts[0], preprocessor, _CAUSAL_LM_KEYS)
        task = (keras_hub.serialize("gpt2.gpt2_causal_lm", "GPT2CausalLM", {
            "backbone": config, "preprocessor": preprocessor_json}), None)
    return keras_hub.write_preset(
        path, (config, backbone_links(backbone), backbone.count_params()),
        _TASK_SHAPES, tokenizer=tokenizer_parts, preprocessor=preprocessor_json,
        task=task)
