"""Sentence embeddings: a pooled, optionally normalized backbone output."""

import keras
import numpy as np

from kzoo.api_export import kzoo_export
from kzoo.layers.sequence_pooling import SequencePooling
from kzoo.models.task import Task


@kzoo_export("kzoo.models.TextEmbedder")
class TextEmbedder(Task):
    """Backbone → ``SequencePooling`` of ``sequence_output`` → one vector
    per text (sentence-transformers' ``Transformer`` → ``Pooling`` →
    ``Normalize``).

    ``predict`` on raw strings returns float ``[batch, hidden_dim]``
    embeddings; ``similarity(a, b)`` the cosine of every pair. ``from_preset``
    on a sentence-transformers folder (``modules.json``,
    ``1_Pooling/config.json``) takes its pooling and normalization from
    there; explicit arguments win.

    Args:
        backbone: the family backbone (an encoder with ``sequence_output``
            and a ``padding_mask`` input).
        preprocessor: a ``TextClassifierPreprocessor`` or None.
        pooling: str. ``"mean"`` (over the real tokens), ``"max"`` or
            ``"first"`` (``[CLS]``).
        normalize: bool. Unit-length embeddings.
        **kwargs: ``keras.Model`` arguments (``name``, ...).
    """

    def __init__(self, backbone, preprocessor=None, pooling="mean",
                 normalize=True, **kwargs):
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.pooling_layer = SequencePooling(pooling, normalize,
                                             dtype=backbone.dtype_policy,
                                             name="pooling")
        inputs = backbone.input
        outputs = self.pooling_layer(backbone(inputs)["sequence_output"],
                                     inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.pooling = pooling
        self.normalize = normalize

    def similarity(self, a, b, batch_size=None):
        """Cosine similarity of every text of ``a`` with every text of ``b``.

        Args:
            a, b: lists of strings (or one string each).

        Returns:
            float numpy ``[len(a), len(b)]``.
        """
        a, b = ([x] if isinstance(x, str) else list(x) for x in (a, b))
        found = self.predict(a + b, batch_size=batch_size, verbose=0)
        found = np.asarray(found, dtype="float32")
        found = found / np.maximum(np.linalg.norm(found, axis=-1, keepdims=True), 1e-12)
        return found[: len(a)] @ found[len(a):].T

    def serving_outputs(self, outputs):
        return {"embeddings": outputs}

    def get_config(self):
        config = super().get_config()
        config.update(pooling=self.pooling, normalize=self.normalize)
        return config
