"""Writes kzoo BERT models as Hugging Face (transformers) folders.

The inverse of ``bert_converter``: the same weight map, read backwards.
``save_hugging_face(model, path)`` writes ``config.json``,
``model.safetensors`` and the WordPiece tokenizer files (``vocab.txt``,
``tokenizer_config.json``, ``special_tokens_map.json``) that
``transformers.AutoModel*.from_pretrained`` and ``AutoTokenizer`` read:

=======================  ===================================
kzoo                     transformers
=======================  ===================================
``BertBackbone``         ``BertModel``
``BertTextEmbedder``     ``BertModel`` (its backbone), with
                         sentence-transformers' pooling files
``BertClassifier``       ``BertForSequenceClassification``
``BertTokenClassifier``  ``BertForTokenClassification``
``BertQuestionAnswerer`` ``BertForQuestionAnswering``
``BertMultipleChoice``   ``BertForMultipleChoice``
``BertMaskedLM``         ``BertForMaskedLM``
=======================  ===================================

Each head is the same computation in both: the classifier's pooled
``[CLS]`` → dropout → dense is ``BertForSequenceClassification``'s pooler →
dropout → ``classifier`` (``num_classes=1``: its regression), and so on.
kzoo's question answerer also sets the span logits of positions that cannot
hold an answer (padding, the question) to a large negative number, which
transformers leaves to its post-processing; elsewhere they are equal.

A ``BertTextEmbedder``'s folder is also a sentence-transformers folder
(``sentence_modules``): ``modules.json`` (``Transformer`` → ``Pooling`` →
``Normalize`` when the embedder normalizes), ``1_Pooling/config.json`` (its
mean, max or ``[CLS]`` pooling) and ``sentence_bert_config.json`` (the
preprocessor's sequence length), so ``SentenceTransformer(path)`` gives the
embedder's embeddings and kzoo's ``from_preset`` reads the pooling back.
"""

import os

import keras
import numpy as np

from kzoo.models.bert.bert_converter import (
    _MLM_PREFIX,
    _POOLINGS,
    MODULES_FILE,
    TOKENIZER_CONFIG_FILE,
    VOCABULARY_FILE,
    _hf_shape,
    _weight_map,
)
from kzoo.presets.hugging_face import write_hf_folder, write_json

#: BertBackbone ``activation`` → transformers ``hidden_act``
HIDDEN_ACTS = {"gelu": "gelu", "gelu_approximate": "gelu_new", "relu": "relu",
               "silu": "silu", "tanh": "tanh"}
SPECIAL_TOKENS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                  "cls_token": "[CLS]", "mask_token": "[MASK]"}


def _to_hf_layout(value, variable_shape, layout):
    """A variable's value in the checkpoint's layout (``_to_variable_layout``
    backwards)."""
    hf_shape = _hf_shape(variable_shape, layout)
    if layout in ("linear", "qkv_kernel", "attention_output_kernel"):
        return np.reshape(value, hf_shape[::-1]).T
    return np.reshape(value, hf_shape)


def backbone_tensors(backbone, prefix="", pooler=True):
    """``{transformers name: float32 array}`` of a ``BertBackbone``."""
    tensors = {}
    for name, variable, layout in _weight_map(backbone):
        if not pooler and name.startswith("pooler."):
            continue
        value = np.asarray(keras.ops.convert_to_numpy(variable), dtype="float32")
        tensors[prefix + name] = _to_hf_layout(value, variable.shape, layout)
    return tensors


def backbone_config(backbone):
    """transformers' ``BertConfig`` (a dict) of a ``BertBackbone``."""
    activation = backbone.activation
    if activation not in HIDDEN_ACTS:
        raise ValueError(
            f"The BertBackbone's activation {activation!r} has no transformers "
            f"equivalent; those that do: {', '.join(sorted(HIDDEN_ACTS))}.")
    return {
        "model_type": "bert",
        "vocab_size": int(backbone.vocabulary_size),
        "hidden_size": int(backbone.hidden_dim),
        "num_hidden_layers": int(backbone.num_layers),
        "num_attention_heads": int(backbone.num_heads),
        "intermediate_size": int(backbone.intermediate_dim),
        "hidden_act": HIDDEN_ACTS[activation],
        "hidden_dropout_prob": float(backbone.dropout),
        "attention_probs_dropout_prob": float(backbone.dropout),
        "max_position_embeddings": int(backbone.max_sequence_length),
        "type_vocab_size": int(backbone.num_segments),
        "layer_norm_eps": float(backbone.layer_norm_epsilon),
        "initializer_range": 0.02,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
    }


def _dense(prefix, dense):
    """A Keras ``Dense`` as a torch ``Linear`` (``weight`` is ``[out, in]``)."""
    return {f"{prefix}.weight": np.asarray(keras.ops.convert_to_numpy(dense.kernel), "float32").T,
            f"{prefix}.bias": np.asarray(keras.ops.convert_to_numpy(dense.bias), "float32")}


def _labels(task):
    names = getattr(task, "label_names", None) or [
        f"LABEL_{i}" for i in range(task.num_classes)]
    return {"id2label": {str(i): n for i, n in enumerate(names)},
            "label2id": {n: i for i, n in enumerate(names)}}


def _masked_lm_head(task):
    head = task.masked_lm_head
    if head.activation not in (None, keras.activations.linear):
        raise ValueError("BertForMaskedLM returns logits; this BertMaskedLM's head "
                         "applies an output activation.")
    tensors = _dense(_MLM_PREFIX + "transform.dense", head.transform_dense)
    tensors[_MLM_PREFIX + "transform.LayerNorm.weight"] = np.asarray(
        keras.ops.convert_to_numpy(head.transform_layer_norm.gamma), "float32")
    tensors[_MLM_PREFIX + "transform.LayerNorm.bias"] = np.asarray(
        keras.ops.convert_to_numpy(head.transform_layer_norm.beta), "float32")
    bias = np.asarray(keras.ops.convert_to_numpy(head.output_bias), "float32")
    tensors[_MLM_PREFIX + "bias"] = bias
    tensors[_MLM_PREFIX + "decoder.bias"] = bias
    # Tied to the word embeddings, as kzoo's head always is.
    tensors[_MLM_PREFIX + "decoder.weight"] = np.asarray(
        keras.ops.convert_to_numpy(task.backbone.token_embedding.embeddings), "float32")
    return tensors, {"tie_word_embeddings": True}


def _check_logits(task):
    if not task._outputs_logits():
        raise ValueError(
            f"transformers' heads return logits; this {type(task).__name__} has "
            f"the output activation {task.activation.__name__!r}. Build it with "
            "activation=None (its softmax is the same model).")


def _head(task):
    """``(architecture, head tensors, config additions, pooler)`` of a task."""
    from kzoo.models.bert import (
        BertClassifier,
        BertMaskedLM,
        BertMultipleChoice,
        BertQuestionAnswerer,
        BertTokenClassifier,
    )

    if isinstance(task, BertClassifier):
        _check_logits(task)
        extra = {"num_labels": task.num_classes, **_labels(task),
                 "classifier_dropout": float(task.dropout)}
        if task.num_classes == 1:
            extra["problem_type"] = "regression"
        return ("BertForSequenceClassification", _dense("classifier", task.output_dense),
                extra, True)
    if isinstance(task, BertTokenClassifier):
        _check_logits(task)
        return ("BertForTokenClassification", _dense("classifier", task.output_dense),
                {"num_labels": task.num_classes, **_labels(task),
                 "classifier_dropout": float(task.dropout)}, False)
    if isinstance(task, BertQuestionAnswerer):
        return ("BertForQuestionAnswering", _dense("qa_outputs", task.span_dense),
                {"num_labels": 2}, False)
    if isinstance(task, BertMultipleChoice):
        return ("BertForMultipleChoice", _dense("classifier", task.output_dense),
                {"classifier_dropout": float(task.dropout)}, True)
    if isinstance(task, BertMaskedLM):
        tensors, extra = _masked_lm_head(task)
        return "BertForMaskedLM", tensors, extra, False
    raise ValueError(
        f"{type(task).__name__} has no transformers equivalent that computes the "
        "same: export its backbone (`model.backbone`, a BertModel folder), or one "
        "of BertBackbone, BertTextEmbedder, BertClassifier, BertTokenClassifier, "
        "BertQuestionAnswerer, BertMultipleChoice, BertMaskedLM.")


def write_tokenizer(tokenizer, folder, max_length=None):
    """Writes a WordPiece tokenizer as transformers' ``BertTokenizer`` files."""
    vocabulary = tokenizer.get_vocabulary()
    with open(f"{folder}/{VOCABULARY_FILE}", "w", encoding="utf-8") as f:
        f.write("".join(token + "\n" for token in vocabulary))
    config = {"tokenizer_class": "BertTokenizer",
              "do_lower_case": bool(tokenizer.lowercase),
              # kzoo's None follows lowercase, as transformers' does
              "strip_accents": (None if tokenizer.strip_accents is None
                                else bool(tokenizer.strip_accents)),
              "tokenize_chinese_chars": True, "do_basic_tokenize": True,
              **{k: v for k, v in SPECIAL_TOKENS.items() if v in vocabulary}}
    if max_length is not None:
        config["model_max_length"] = int(max_length)
    write_json(f"{folder}/{TOKENIZER_CONFIG_FILE}", config)
    write_json(f"{folder}/special_tokens_map.json",
               {k: v for k, v in SPECIAL_TOKENS.items() if v in vocabulary})


def sentence_modules(embedder, max_length=None):
    """sentence-transformers' files for a text embedder: ``{relative path:
    JSON value}`` (``modules.json``, ``sentence_bert_config.json``,
    ``1_Pooling/config.json``; ``2_Normalize`` is a folder without files).

    Example:
    >>> from types import SimpleNamespace
    >>> files = sentence_modules(SimpleNamespace(
    ...     pooling="first", normalize=False, backbone=SimpleNamespace(hidden_dim=4)))
    >>> [m["type"] for m in files["modules.json"]]
    ['sentence_transformers.models.Transformer', 'sentence_transformers.models.Pooling']
    >>> files["1_Pooling/config.json"]["pooling_mode_cls_token"]
    True
    """
    modules = [("0", "", "Transformer"), ("1", "1_Pooling", "Pooling")]
    if embedder.normalize:
        modules.append(("2", "2_Normalize", "Normalize"))
    pooling = {key: embedder.pooling == mode for key, mode in _POOLINGS.items()}
    return {
        MODULES_FILE: [{"idx": int(idx), "name": idx, "path": path,
                        "type": f"sentence_transformers.models.{kind}"}
                       for idx, path, kind in modules],
        "sentence_bert_config.json": {
            "max_seq_length": int(max_length) if max_length else None,
            "do_lower_case": False},
        "1_Pooling/config.json": {
            "word_embedding_dimension": int(embedder.backbone.hidden_dim),
            **pooling, "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": False, "include_prompt": True},
    }


def _write_sentence_modules(embedder, folder, max_length):
    files = sentence_modules(embedder, max_length)
    for name, value in files.items():
        os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
        write_json(os.path.join(folder, name), value)
    if embedder.normalize:
        os.makedirs(os.path.join(folder, "2_Normalize"), exist_ok=True)


def save_hugging_face(model, path, tokenizer=None):
    """Writes a kzoo BERT model as a transformers folder at ``path``.

    Args:
        model: a ``BertBackbone`` or one of the BERT tasks of the table above.
        path: the folder to write (replaced atomically).
        tokenizer: the WordPiece tokenizer to write beside it; defaults to
            the task's preprocessor's. A backbone alone has none: without
            one, the folder holds no tokenizer files.

    Returns:
        The absolute ``path``.
    """
    from kzoo.models.bert import BertBackbone, BertTextEmbedder

    preprocessor = getattr(model, "preprocessor", None)
    if tokenizer is None and preprocessor is not None:
        tokenizer = preprocessor.tokenizer
    embedder = model if isinstance(model, BertTextEmbedder) else None
    if embedder is not None:
        model = model.backbone
    if isinstance(model, BertBackbone):
        backbone, architecture, tensors, extra, pooler, prefix = (
            model, "BertModel", {}, {}, True, "")
    else:
        backbone = getattr(model, "backbone", None)
        if not isinstance(backbone, BertBackbone):
            raise TypeError(f"`model` must be a BERT backbone or task, got "
                            f"{type(model).__name__}.")
        architecture, tensors, extra, pooler = _head(model)
        prefix = "bert."
    tensors = {**backbone_tensors(backbone, prefix, pooler), **tensors}
    config = {**backbone_config(backbone), **extra, "architectures": [architecture]}
    max_length = getattr(preprocessor, "sequence_length", None)

    def tokenizer_files(folder):
        if tokenizer is not None:
            write_tokenizer(tokenizer, folder, max_length)
        if embedder is not None:
            _write_sentence_modules(embedder, folder, max_length)

    return write_hf_folder(path, config, tensors, tokenizer_files)
