"""Learned position embedding."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export


@kzoo_export("kzoo.layers.PositionEmbedding")
class PositionEmbedding(keras.layers.Layer):
    """Learned position embedding, sliced to the input's sequence length.

    The layer holds a table of ``sequence_length`` learned vectors, one per
    position, as BERT and GPT do. Called on a ``[batch, length, dim]`` tensor
    (usually the token embeddings), it returns the first ``length`` rows of the
    table broadcast to the input's shape, ready to be added to it.

    Args:
        sequence_length: int. Maximum sequence length (rows of the table).
        initializer: initializer of the table (name, instance or config).
            Defaults to ``"glorot_uniform"``.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``, ...).

    Call arguments:
        inputs: a ``[batch, length, dim]`` tensor; only its shape is used.
        start_index: int. Position of the first input row (for decoding with
            a cache). Defaults to 0.

    Returns:
        The position embeddings, a tensor of the input's shape.

    Raises ValueError when the length (when known while tracing) is larger
    than ``sequence_length``: truncate the inputs (a preprocessor's
    ``sequence_length``) or build a larger table.

    Example:
    >>> layer = kzoo.layers.PositionEmbedding(sequence_length=8)
    >>> tuple(layer(np.zeros((2, 5, 4))).shape)
    (2, 5, 4)
    """

    def __init__(self, sequence_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if not isinstance(sequence_length, int) or sequence_length <= 0:
            raise ValueError(
                "`sequence_length` must be a positive int (the number of "
                f"positions), got {sequence_length!r}."
            )
        self.sequence_length = sequence_length
        self.initializer = keras.initializers.get(initializer)

    def build(self, inputs_shape):
        feature_size = inputs_shape[-1]
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.sequence_length, feature_size),
            initializer=self.initializer,
            trainable=True,
        )
        self.built = True

    def call(self, inputs, start_index=0):
        shape = ops.shape(inputs)
        length, feature_size = shape[-2], shape[-1]
        if isinstance(length, int) and isinstance(start_index, int):
            if start_index + length > self.sequence_length:
                raise ValueError(
                    f"{type(self).__name__} {self.name!r} got a sequence of "
                    f"length {length}"
                    + (f" starting at position {start_index}" if start_index else "")
                    + f", but it holds only sequence_length={self.sequence_length} "
                    "positions. Truncate the inputs (e.g. the preprocessor's "
                    "`sequence_length`) or build the model with a larger "
                    "maximum sequence length."
                )
        # JAX: slice a tensor, not the Variable itself.
        embeddings = ops.convert_to_tensor(self.embeddings)
        embeddings = ops.slice(embeddings, (start_index, 0), (length, feature_size))
        return ops.broadcast_to(embeddings, shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "initializer": keras.initializers.serialize(self.initializer),
            }
        )
        return config
