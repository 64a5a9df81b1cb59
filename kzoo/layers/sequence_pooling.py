"""SequencePooling: one vector per sequence from token vectors and a mask."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export

POOLINGS = ("mean", "max", "first")


@kzoo_export("kzoo.layers.SequencePooling")
class SequencePooling(keras.layers.Layer):
    """Pools ``[batch, length, dim]`` token vectors into ``[batch, dim]``.

    sentence-transformers' ``Pooling`` (and keras-hub's habit): ``"mean"``
    averages the real tokens (``padding_mask`` true), as
    ``pooling_mode_mean_tokens``; ``"max"`` takes each feature's largest
    value over the real tokens; ``"first"`` takes the first token (BERT's
    ``[CLS]``). With ``normalize=True`` the result is scaled to unit L2
    length (sentence-transformers' ``Normalize``: ``x / max(|x|, 1e-12)``).

    Args:
        pooling: str. One of ``"mean"``, ``"max"``, ``"first"``.
        normalize: bool. L2-normalize the pooled vectors.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).

    Call arguments:
        inputs: float ``[batch, length, dim]``.
        padding_mask: bool or int ``[batch, length]``; all real if None.

    Returns:
        float ``[batch, dim]``.

    Example:
    >>> layer = kzoo.layers.SequencePooling("mean")
    >>> x = np.array([[[1., 2.], [3., 4.], [9., 9.]]])
    >>> ops.convert_to_numpy(layer(x, np.array([[1, 1, 0]]))).tolist()
    [[2.0, 3.0]]
    """

    def __init__(self, pooling="mean", normalize=False, **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"`pooling` must be one of {POOLINGS}, got {pooling!r}.")
        if not isinstance(normalize, bool):
            raise ValueError(f"`normalize` must be a bool, got {normalize!r}.")
        self.pooling = pooling
        self.normalize = normalize

    def call(self, inputs, padding_mask=None):
        if padding_mask is None:
            padding_mask = ops.ones(ops.shape(inputs)[:2], dtype="bool")
        mask = ops.expand_dims(ops.cast(padding_mask, inputs.dtype), -1)
        if self.pooling == "mean":
            total = ops.sum(inputs * mask, axis=1)
            pooled = total / ops.maximum(ops.sum(mask, axis=1), 1e-9)
        elif self.pooling == "max":
            pooled = ops.max(ops.where(mask > 0, inputs, -1e9), axis=1)
        else:
            pooled = ops.take(inputs, 0, axis=1)
        if self.normalize:
            norm = ops.sqrt(ops.sum(ops.square(pooled), axis=-1, keepdims=True))
            pooled = pooled / ops.maximum(norm, 1e-12)
        return pooled

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(pooling=self.pooling, normalize=self.normalize)
        return config
