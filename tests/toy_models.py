"""A tiny backbone / preprocessor / classifier that exercise the base classes.

Test-only: real families live in kzoo/models/<family>/.
"""

import keras
import tensorflow as tf

from kzoo.models.backbone import Backbone
from kzoo.models.preprocessor import Preprocessor
from kzoo.models.task import Task
from kzoo.tokenizers.word_tokenizer import WordTokenizer

VOCABULARY = ["[PAD]", "[UNK]", "good", "bad", "movie", "film", "great", "awful"]


@keras.saving.register_keras_serializable(package="kzoo")
class ToyBackbone(Backbone):
    def __init__(self, vocabulary_size, hidden_dim, dtype=None, **kwargs):
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_dim, dtype=dtype, name="token_embedding"
        )
        self.dense = keras.layers.Dense(hidden_dim, dtype=dtype, name="dense")
        self.pool = keras.layers.GlobalAveragePooling1D(dtype=dtype, name="pool")
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        padding_mask = keras.Input((None,), dtype="bool", name="padding_mask")
        x = self.dense(self.token_embedding(token_ids))
        pooled = self.pool(x)  # plain mean: an empty text stays finite
        super().__init__(
            inputs={"token_ids": token_ids, "padding_mask": padding_mask},
            outputs={"sequence_output": x, "pooled_output": pooled},
            dtype=dtype,
            **kwargs,
        )
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary_size=self.vocabulary_size, hidden_dim=self.hidden_dim)
        return config


@keras.saving.register_keras_serializable(package="kzoo")
class ToyPreprocessor(Preprocessor):
    backbone_cls = ToyBackbone
    tokenizer_cls = WordTokenizer

    def __init__(self, tokenizer=None, sequence_length=6, **kwargs):
        super().__init__(tokenizer=tokenizer, **kwargs)
        self.sequence_length = sequence_length

    def call(self, x, y=None, sample_weight=None):
        ids = self.tokenizer(x)
        if isinstance(ids, tf.RaggedTensor):
            ids = ids.to_tensor(shape=[None, self.sequence_length])
        x = {"token_ids": ids, "padding_mask": ids != 0}
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(sequence_length=self.sequence_length)
        return config


@keras.saving.register_keras_serializable(package="kzoo")
class ToyClassifier(Task):
    backbone_cls = ToyBackbone
    preprocessor_cls = ToyPreprocessor

    def __init__(self, backbone, num_classes, preprocessor=None, **kwargs):
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dense = keras.layers.Dense(num_classes, name="logits")
        inputs = backbone.input
        logits = self.output_dense(backbone(inputs)["pooled_output"])
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.num_classes = num_classes
        self.compile(
            optimizer=keras.optimizers.Adam(0.05),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )

    def get_config(self):
        config = super().get_config()
        config.update(num_classes=self.num_classes)
        return config


def toy_classifier(num_classes=2, seed=0):
    keras.utils.set_random_seed(seed)
    backbone = ToyBackbone(vocabulary_size=len(VOCABULARY), hidden_dim=4)
    preprocessor = ToyPreprocessor(WordTokenizer(vocabulary=VOCABULARY))
    return ToyClassifier(backbone, num_classes, preprocessor=preprocessor)
