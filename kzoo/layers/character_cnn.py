"""Character CNN: a word vector from its characters (ELMo, Kim et al. 2016)."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export


# Positions per matrix product in CharacterCNN (8 was fastest of 1-25).
_POSITIONS_PER_PRODUCT = 8


def _check_filters(filters):
    ok = isinstance(filters, (list, tuple)) and len(filters) > 0
    if ok:
        for item in filters:
            if (not isinstance(item, (list, tuple)) or len(item) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool)
                               and v > 0 for v in item)):
                ok = False
                break
    if not ok:
        raise ValueError(
            "`filters` must be a non-empty list of [width, number] pairs of "
            f"positive ints, e.g. [[1, 32], [2, 32], [3, 64]], got {filters!r}."
        )
    return tuple((int(w), int(n)) for w, n in filters)


@kzoo_export("kzoo.layers.CharacterCNN")
class CharacterCNN(keras.layers.Layer):
    """Embeds characters and convolves them into one vector per token.

    Each token is a row of ``max_word_length`` character ids. The ids are
    embedded (``character_dim`` each), then for every ``[width, number]``
    pair of ``filters`` a 1-D convolution of that width (valid padding, with
    bias) runs over the characters; its maximum over the positions goes
    through ``activation``, and the results of all widths are concatenated:
    ``sum(number)`` features per token. This is ELMo's character encoder
    (bilm-tf, AllenNLP's ``_ElmoCharacterEncoder``) before its highway
    layers. Every row of ids is encoded, padding rows included (mask them
    downstream).

    Args:
        filters: list of ``[width, number]`` pairs. Defaults to ELMo's
            ``((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512),
            (7, 1024))`` (2048 features).
        num_characters: int. Size of the character table (ELMo: 262, the
            256 bytes, 5 specials, shifted by one so that 0 is padding).
        character_dim: int. Width of a character embedding. Defaults to 16.
        activation: activation applied after the max over positions
            (``"relu"`` for the released ELMo, ``"tanh"`` also common).
        embeddings_initializer: initializer of the character table.
        kernel_initializer: initializer of the convolution kernels.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).

    Call arguments:
        inputs: int tensor ``[..., max_word_length]`` of character ids
            (at least the width of the widest filter).

    Returns:
        A float tensor ``[..., sum(number for _, number in filters)]``.

    Example:
    >>> layer = kzoo.layers.CharacterCNN(
    ...     filters=((1, 2), (2, 3)), num_characters=10, character_dim=4)
    >>> tuple(layer(np.ones((2, 5, 6), "int32")).shape)
    (2, 5, 5)

    Reference:
        - [Kim et al., 2016](https://arxiv.org/abs/1508.06615).
        - [Peters et al., 2018](https://arxiv.org/abs/1802.05365) (ELMo).
    """

    def __init__(
        self,
        filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512),
                 (7, 1024)),
        num_characters=262,
        character_dim=16,
        activation="relu",
        embeddings_initializer="uniform",
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.filters = _check_filters(filters)
        for name, value in (("num_characters", num_characters),
                            ("character_dim", character_dim)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"`{name}` must be a positive int, got {value!r}.")
        self.num_characters = num_characters
        self.character_dim = character_dim
        self.activation = keras.activations.get(activation)
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.character_embedding = keras.layers.Embedding(
            num_characters, character_dim,
            embeddings_initializer=self.embeddings_initializer,
            dtype=self.dtype_policy, name="character_embedding",
        )
        self.convolutions = [
            keras.layers.Conv1D(
                number, width, padding="valid",
                kernel_initializer=self.kernel_initializer,
                dtype=self.dtype_policy, name=f"convolution_{i}",
            )
            for i, (width, number) in enumerate(self.filters)
        ]
        self.output_dim = sum(number for _, number in self.filters)

    def build(self, inputs_shape):
        max_word_length = inputs_shape[-1]
        widest = max(width for width, _ in self.filters)
        if max_word_length is not None and max_word_length < widest:
            raise ValueError(
                f"{type(self).__name__}: tokens have {max_word_length} "
                f"character ids but the widest filter is {widest} wide; use "
                "longer character rows or narrower filters."
            )
        self.character_embedding.build((None, max_word_length))
        for conv in self.convolutions:
            conv.build((None, max_word_length, self.character_dim))
        self.built = True

    def call(self, inputs):
        shape = ops.shape(inputs)
        ids = ops.reshape(inputs, (-1, shape[-1]))
        # One extra row, dropped below: convolutions fail on an empty batch
        # on some backends, and a batch of empty sentences has no tokens.
        ids = ops.concatenate([ids, ops.zeros((1, shape[-1]), ids.dtype)], axis=0)
        chars = self.character_embedding(ids)
        features = []
        for (width, number), conv in zip(self.filters, self.convolutions):
            # The bias is added after the max over positions, where it is the
            # same number (rounding is monotonic) for far fewer additions.
            scores = self._max_convolution(chars, conv.kernel, width, number)
            features.append(self.activation(scores + conv.bias))
        tokens = ops.concatenate(features, axis=-1)[:-1]
        return ops.reshape(tokens, tuple(shape[:-1]) + (self.output_dim,))

    def _max_convolution(self, chars, kernel, width, number):
        """Max over positions of ``chars [n, length, dim]`` convolved with
        ``kernel [width, dim, number]`` (valid padding, no bias)."""
        length = chars.shape[1]
        if not isinstance(length, int):
            return ops.max(ops.conv(chars, kernel), axis=1)
        # Matrix products over the windows of a few positions at a time (the
        # `width` shifted copies of the characters side by side), with a
        # running maximum: small products that stay in cache instead of one
        # [n, positions, number] tensor. Faster than the convolution op on
        # every backend (ELMo's filters, most of all on PyTorch).
        kernel = ops.reshape(kernel, (width * self.character_dim, number))
        positions = length - width + 1
        best = None
        for start in range(0, positions, _POSITIONS_PER_PRODUCT):
            count = min(_POSITIONS_PER_PRODUCT, positions - start)
            span = chars[:, start:start + count + width - 1]
            windows = ops.concatenate(
                [span[:, i:i + count] for i in range(width)], axis=-1
            )
            scores = ops.max(ops.matmul(windows, kernel), axis=1)
            best = scores if best is None else ops.maximum(best, scores)
        return best

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update({
            "filters": [list(f) for f in self.filters],
            "num_characters": self.num_characters,
            "character_dim": self.character_dim,
            "activation": keras.activations.serialize(self.activation),
            "embeddings_initializer": keras.initializers.serialize(
                self.embeddings_initializer),
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer),
        })
        return config
