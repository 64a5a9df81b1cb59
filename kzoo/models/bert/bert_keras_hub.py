"""keras-hub BERT presets, in and out (without keras-hub).

In: a folder written by keras-hub's ``save_to_preset`` for ``BertBackbone``
or ``BertTextClassifier`` loads with ``BertBackbone.from_preset(folder)``
and ``BertClassifier.from_preset(folder)`` (keras-hub's classifier head is
kzoo's: pooled output → dropout → dense). keras-hub's BERT runs the
tanh-approximate GELU with layer-norm epsilon 1e-12, so the backbone is
built with ``activation="gelu_approximate"``.

Out: ``save_keras_hub`` writes a backbone or a ``BertClassifier`` (with
their tokenizer and preprocessor) as a folder that
``keras_hub.models.BertBackbone.from_preset`` and
``BertTextClassifier.from_preset`` load.
"""

import keras

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_classifier import BertClassifier
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.presets import keras_hub
from kzoo.presets.errors import PresetError
from kzoo.tokenizers.tokenizer import Tokenizer
from kzoo.tokenizers.word_piece_tokenizer import WordPieceTokenizer

_SIZES = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim",
          "intermediate_dim", "dropout", "max_sequence_length", "num_segments")
#: what keras-hub's BertBackbone fixes
_ACTIVATION = "gelu_approximate"
_EPSILON = 1e-12
#: keras-hub's default learning rate of a BertTextClassifier
_LEARNING_RATE = 5e-5
#: the keras-hub tasks a BertBackbone preset can build (its metadata.json)
_TASK_SHAPES = ("MaskedLM", "TextClassifier", "TextEmbedder")


def backbone_links(backbone):
    """The ``Link``s of a ``BertBackbone``'s variables to keras-hub's
    ``BertBackbone`` weights (the same layers and shapes: both build
    attention from Keras' ``MultiHeadAttention`` kernels)."""
    link, pair = keras_hub.link, keras_hub.pair_links
    layer_norm = backbone.embeddings_layer_norm
    links = [
        link(backbone.token_embedding.embeddings, "layers/reversible_embedding/vars/0"),
        link(backbone.position_embedding.embeddings, "layers/position_embedding/vars/0"),
        link(backbone.segment_embedding.embeddings, "layers/embedding/vars/0"),
        *pair(layer_norm.gamma, layer_norm.beta, "layers/layer_normalization"),
    ]
    for i, block in enumerate(backbone.transformer_layers):
        key = f"layers/{keras_hub.layer_key('transformer_encoder', i)}"
        attention = block.self_attention_layer
        for name, dense in (("query_dense", attention.query_dense),
                            ("key_dense", attention.key_dense),
                            ("value_dense", attention.value_dense),
                            ("output_dense", attention.output_dense)):
            links += pair(dense.kernel, dense.bias, f"{key}/_self_attention_layer/{name}")
        links += keras_hub.block_links(block, key)
    links += pair(backbone.pooled_dense.kernel, backbone.pooled_dense.bias, "layers/dense")
    return links


def classifier_links(task):
    """The head of a ``BertClassifier`` in keras-hub's ``task.weights.h5``
    (``BertTextClassifier``'s ``logits`` dense layer)."""
    return keras_hub.pair_links(task.output_dense.kernel, task.output_dense.bias,
                                "layers/dense")


class KerasHubBertSource(keras_hub.KerasHubSource):
    """A keras-hub ``BertBackbone`` preset folder (see the module)."""

    format_name = "keras-hub BERT"
    backbone_class = "BertBackbone"
    kzoo_backbone = "kzoo>BertBackbone"
    tasks = {"BertTextClassifier": ("kzoo>BertClassifier",
                                    ("num_classes", "dropout", "activation"))}
    preprocessors = {
        "BertTextClassifierPreprocessor": ("kzoo>BertClassifierPreprocessor",
                                           ("sequence_length", "truncate")),
        "BertMaskedLMPreprocessor": (
            "kzoo>BertMaskedLMPreprocessor",
            ("sequence_length", "truncate", "mask_selection_rate",
             "mask_selection_length", "mask_token_rate", "random_token_rate")),
    }
    fallback_preprocessor = "kzoo>BertClassifierPreprocessor"

    def kzoo_backbone_config(self, config):
        return {**{k: config[k] for k in _SIZES if k in config},
                "activation": _ACTIVATION, "layer_norm_epsilon": _EPSILON}

    def backbone_links(self, backbone):
        return backbone_links(backbone)

    def head_links(self, task):
        return classifier_links(task) if isinstance(task, BertClassifier) else []

    def load_tokenizer(self, cls=None, **kwargs):
        """keras-hub's ``BertTokenizer`` (``tokenizer.json`` and
        ``assets/tokenizer/vocabulary.txt``) as a kzoo ``BertTokenizer``
        with the same settings."""
        config, assets = self.tokenizer_config("BertTokenizer")
        tokenizer_cls = cls if cls is not None and cls is not Tokenizer else BertTokenizer
        if not issubclass(tokenizer_cls, WordPieceTokenizer):
            raise PresetError(f"{self.path} holds a WordPiece vocabulary; "
                              f"{tokenizer_cls.__name__} cannot read it.")
        refused = []
        if config.get("split", True) is not True:
            refused.append("split=False (no splitting on whitespace and punctuation)")
        if config.get("suffix_indicator", "##") != "##":
            refused.append(f"suffix_indicator={config['suffix_indicator']!r}")
        if refused:
            raise PresetError(
                f"{self.path / keras_hub.TOKENIZER_FILE} sets {', '.join(refused)}; "
                "kzoo's WordPiece splits words and marks continuations with '##'.")
        vocabulary = assets / "vocabulary.txt"
        if not vocabulary.is_file():
            raise PresetError(f"The keras-hub preset folder {self.path} has no "
                              f"{keras_hub.TOKENIZER_ASSETS_DIR}/vocabulary.txt.")
        settings = dict(
            vocabulary=str(vocabulary),
            lowercase=bool(config.get("lowercase", False)),
            strip_accents=bool(config.get("strip_accents", False)),
            oov_token=config.get("oov_token") or "[UNK]",
            special_tokens_in_strings=bool(config.get("special_tokens_in_strings", False)),
        )
        settings.update(kwargs)
        return tokenizer_cls(**settings)


def _tokenizer_parts(tokenizer):
    """keras-hub's ``tokenizer.json`` and assets for a kzoo ``BertTokenizer``."""
    if not isinstance(tokenizer, WordPieceTokenizer):
        raise ValueError(f"A keras-hub BERT preset holds a WordPiece tokenizer; got "
                         f"a {type(tokenizer).__name__}.")
    if not tokenizer.split_on_punctuation:
        raise ValueError("keras-hub's BertTokenizer splits on punctuation; this "
                         "tokenizer has split_on_punctuation=False.")
    strip = tokenizer.strip_accents
    json_form = keras_hub.serialize_tokenizer("bert.bert_tokenizer", "BertTokenizer", {
        "vocabulary": None,
        "lowercase": tokenizer.lowercase,
        "strip_accents": tokenizer.lowercase if strip is None else strip,
        "split": True,
        "suffix_indicator": "##",
        "oov_token": tokenizer.oov_token,
        "special_tokens": None,
        "special_tokens_in_strings": tokenizer.special_tokens_in_strings,
    })
    text = "".join(f"{token}\n" for token in tokenizer.get_vocabulary())
    return json_form, {"vocabulary.txt": text}


def save_keras_hub(model, path, tokenizer=None, approximate_gelu=False):
    """Writes a ``BertBackbone`` or ``BertClassifier`` as a keras-hub preset.

    Args:
        model: the backbone, or a ``BertClassifier`` (keras-hub's
            ``BertTextClassifier``: the same head; ``label_names`` are not
            kept, keras-hub has none).
        path: the folder (replaced atomically; left as it was on failure).
        tokenizer: the tokenizer to write; defaults to the task's
            preprocessor's. Without one the folder holds the backbone only.
        approximate_gelu: bool. keras-hub's BERT always runs the
            tanh-approximate GELU; a model with the exact GELU
            (``activation="gelu"``, as converted from transformers) is
            refused unless this is True (its outputs then move by about
            1e-3 in keras-hub).

    Returns:
        The absolute ``path``.
    """
    backbone, tokenizer, preprocessor = keras_hub.task_parts(
        model, tokenizer, BertBackbone, BertClassifier,
        ("BertBackbone", "BertTextClassifier"))
    activation = backbone.activation
    if activation != _ACTIVATION and not (activation == "gelu" and approximate_gelu):
        raise ValueError(
            f"keras-hub's BertBackbone computes the tanh-approximate GELU; this "
            f"backbone has activation={activation!r}"
            + (", the exact GELU: pass approximate_gelu=True to write it anyway "
               "(keras-hub's outputs then differ from kzoo's by about 1e-3)."
               if activation == "gelu" else ", which keras-hub's BERT cannot run."))
    if backbone.layer_norm_epsilon != _EPSILON:
        raise ValueError(f"keras-hub's BertBackbone has layer-norm epsilon {_EPSILON}; "
                         f"this backbone has {backbone.layer_norm_epsilon}.")
    config = keras_hub.serialize_backbone("bert.bert_backbone", "BertBackbone",
                                          backbone, _SIZES)
    tokenizer_parts = _tokenizer_parts(tokenizer) if tokenizer is not None else None
    task = preprocessor_json = None
    if isinstance(model, BertClassifier):
        if tokenizer_parts is not None and preprocessor is not None:
            preprocessor_json = keras_hub.serialize_preprocessor(
                "bert.bert_text_classifier_preprocessor", "BertTextClassifierPreprocessor",
                tokenizer_parts[0], preprocessor, ("sequence_length", "truncate"))
        activation = (None if model.activation in (None, keras.activations.linear)
                      else model.activation)
        task_json = keras_hub.serialize("bert.bert_text_classifier", "BertTextClassifier", {
            "backbone": config, "preprocessor": preprocessor_json,
            "num_classes": model.num_classes,
            "activation": keras.activations.serialize(
                keras.activations.get(activation or "linear")),
            "dropout": model.dropout})
        task = (task_json, {**keras_hub.arrays_of(classifier_links(model)),
                            **keras_hub.optimizer_arrays(_LEARNING_RATE)})
    return keras_hub.write_preset(
        path, (config, backbone_links(backbone), backbone.count_params()),
        _TASK_SHAPES, tokenizer=tokenizer_parts, preprocessor=preprocessor_json,
        task=task)
