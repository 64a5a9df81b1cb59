"""A sixth model family that lives outside kzoo: a tiny convolutional encoder.

It is built only from kzoo's public pieces (base classes, the shared
preprocessors, the WordPiece tokenizer, ``kzoo.analysis.WordInContext``)
and one ``register_family`` call; the ``kzoo`` command finds it through
``KZOO_FAMILIES=tinyconv``. Nothing in kzoo names it.
"""

import keras
import numpy as np

from kzoo.analysis import WordInContext
from kzoo.analysis.targets import overlapping
from kzoo.models import (
    Backbone,
    Family,
    MaskedLM,
    MaskedLMPreprocessor,
    Pretraining,
    TextClassifier,
    TextClassifierPreprocessor,
    register_family,
)
from kzoo.preprocessing.batches import shuffled_epoch
from kzoo.tokenizers import WordPieceTokenizer, compute_word_piece_vocabulary

serializable = keras.saving.register_keras_serializable(package="tinyconv")


@serializable
class TinyConvBackbone(Backbone):
    """Token + segment embeddings, then ``num_layers`` residual 1-D
    convolutions (width 3); ``pooled_output`` is a tanh dense of the first
    position."""

    def __init__(self, vocabulary_size, hidden_dim=16, num_layers=2,
                 max_sequence_length=64, dtype=None, **kwargs):
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_dim, dtype=dtype, name="token_embedding")
        self.segment_embedding = keras.layers.Embedding(
            2, hidden_dim, dtype=dtype, name="segment_embedding")
        self.conv_layers = [
            keras.layers.Conv1D(hidden_dim, 3, padding="same", activation="gelu",
                                dtype=dtype, name=f"conv_{i}")
            for i in range(num_layers)]
        self.pooler = keras.layers.Dense(hidden_dim, activation="tanh", dtype=dtype,
                                         name="pooler")
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input((None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input((None,), dtype="int32", name="padding_mask")
        mask = keras.ops.expand_dims(keras.ops.cast(padding_mask, "float32"), -1)
        x = keras.layers.Add(name="embeddings")(
            [self.token_embedding(token_ids), self.segment_embedding(segment_ids)])
        for i, conv in enumerate(self.conv_layers):
            x = keras.layers.Add(name=f"layer_{i + 1}")([x, conv(x * mask)])
        pooled = self.pooler(x[:, 0, :])
        super().__init__(
            inputs={"token_ids": token_ids, "segment_ids": segment_ids,
                    "padding_mask": padding_mask},
            outputs={"sequence_output": x, "pooled_output": pooled},
            dtype=dtype, **kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.max_sequence_length = max_sequence_length

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary_size=self.vocabulary_size, hidden_dim=self.hidden_dim,
                      num_layers=self.num_layers,
                      max_sequence_length=self.max_sequence_length)
        return config

    def hidden_states_model(self):
        """Inputs → ``[embeddings, layer 1, ...]``."""
        names = ["embeddings"] + [f"layer_{i + 1}" for i in range(self.num_layers)]
        return keras.Model(self.input, [self.get_layer(n).output for n in names])


class _Tokens:
    """BERT-style special tokens, which the shared packer places."""

    tokenizer_cls = WordPieceTokenizer
    start_token = "[CLS]"
    sep_token = "[SEP]"
    end_token = "[SEP]"


@serializable
class TinyConvMaskedLMPreprocessor(_Tokens, MaskedLMPreprocessor):
    backbone_cls = TinyConvBackbone
    mask_token = "[MASK]"


@serializable
class TinyConvMaskedLM(MaskedLM):
    backbone_cls = TinyConvBackbone
    preprocessor_cls = TinyConvMaskedLMPreprocessor


@serializable
class TinyConvClassifierPreprocessor(_Tokens, TextClassifierPreprocessor):
    backbone_cls = TinyConvBackbone


@serializable
class TinyConvClassifier(TextClassifier):
    backbone_cls = TinyConvBackbone
    preprocessor_cls = TinyConvClassifierPreprocessor


def pretrain(documents, options):
    """Masked-LM pretraining on the corpus's lines."""
    lines = [line for document in documents for line in document]
    tokenizer = WordPieceTokenizer(
        vocabulary=compute_word_piece_vocabulary(lines, options.vocabulary_size),
        lowercase=True)
    backbone = TinyConvBackbone(tokenizer.vocabulary_size(),
                                hidden_dim=options.hidden_dim,
                                num_layers=options.num_layers,
                                max_sequence_length=options.sequence_length)
    preprocessor = TinyConvMaskedLMPreprocessor(
        tokenizer, sequence_length=options.sequence_length, seed=options.seed)
    model = TinyConvMaskedLM(backbone, preprocessor=preprocessor)
    model.compile(optimizer=keras.optimizers.Adam(options.learning_rate))
    lines = np.asarray(lines, dtype=object)
    return model, {"data_for_epoch": lambda epoch: shuffled_epoch(
        lines, epoch, options.batch_size, options.seed)}


class TinyConvWordInContext(WordInContext):
    """A word's vector at every layer: the mean of its word pieces'."""

    def __init__(self, model, tokenizer=None, batch_size=32):
        super().__init__(batch_size=batch_size)
        if isinstance(model, str):
            tokenizer = tokenizer or WordPieceTokenizer.from_preset(model)
            model = TinyConvBackbone.from_preset(model)
        self.tokenizer = tokenizer or model.preprocessor.tokenizer
        self.backbone = getattr(model, "backbone", model)
        self.hidden_states = self.backbone.hidden_states_model()
        self.layer_names = ("embeddings",) + tuple(
            f"layer {i + 1}" for i in range(self.backbone.num_layers))

    def _embed(self, sentences, spans):
        pieces = self.tokenizer.tokenize_with_offsets(sentences)
        cls_id, sep_id = (self.tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]"))
        rows, positions = [], []
        for i, (start, end) in enumerate(spans):  # ASCII text: bytes are characters
            offsets = list(zip(pieces["start_offsets"][i], pieces["end_offsets"][i]))
            rows.append([cls_id] + [int(t) for t in pieces["token_ids"][i]] + [sep_id])
            positions.append([h + 1 for h in overlapping(offsets, start, end)])
        length = max(len(r) for r in rows)
        token_ids = np.full((len(rows), length), self.tokenizer.token_to_id("[PAD]"),
                            "int32")
        padding_mask = np.zeros((len(rows), length), "int32")
        for i, row in enumerate(rows):
            token_ids[i, :len(row)], padding_mask[i, :len(row)] = row, 1
        layers = self.hidden_states.predict(
            {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
             "padding_mask": padding_mask}, verbose=0)
        layers = np.stack([keras.ops.convert_to_numpy(v) for v in layers], axis=1)
        return np.stack([layers[i][:, p].mean(axis=1) for i, p in enumerate(positions)])


register_family(Family(
    name="tinyconv",
    title="TinyConv",
    backbones=(TinyConvBackbone,),
    tasks=(TinyConvClassifier, TinyConvMaskedLM),
    pretraining=Pretraining(
        build=pretrain,
        defaults={"batch_size": 8, "learning_rate": 1e-2, "vocabulary_size": 200,
                  "sequence_length": 16, "hidden_dim": 16, "num_layers": 2},
        task=TinyConvMaskedLM,
        example="kzoo pretrain tinyconv --corpus a.txt --output runs/tinyconv"),
    word_in_context=TinyConvWordInContext,
))

__all__ = ["TinyConvBackbone", "TinyConvClassifier", "TinyConvMaskedLM"]
