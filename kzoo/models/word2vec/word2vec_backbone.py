"""word2vec's two embedding tables."""

import keras

from kzoo.api_export import kzoo_export
from kzoo.models.backbone import Backbone


@kzoo_export("kzoo.models.Word2VecBackbone")
class Word2VecBackbone(Backbone):
    """word2vec's input and output embedding tables, as a backbone.

    word2vec learns two vectors per word: an input vector (`token_embedding`,
    word2vec.c's `syn0`, the word vectors that are kept) and an output
    vector (`context_embedding`, `syn1neg`) that the words it predicts are
    scored with. As in word2vec.c, input vectors start uniform in
    `[-0.5 / hidden_dim, 0.5 / hidden_dim)` and output vectors at zero.

    Args:
        vocabulary_size: int. Number of token ids.
        hidden_dim: int. Width of the vectors.
        dtype: dtype policy of the layers. Defaults to the global policy.
        **kwargs: `keras.Model` arguments (`name`, `trainable`).

    Call arguments:
        inputs: a dict with `token_ids` (int `[batch, n]`, looked up in the
            input table) and `target_ids` (int `[batch, k]`, looked up in
            the output table).

    Returns:
        A dict with `sequence_output` `[batch, n, hidden_dim]` and
        `target_output` `[batch, k, hidden_dim]`.

    Example:
    >>> backbone = kzoo.models.Word2VecBackbone(vocabulary_size=10, hidden_dim=4)
    >>> out = backbone({"token_ids": np.array([[1], [2]]),
    ...                 "target_ids": np.array([[3, 4, 5], [6, 7, 8]])})
    >>> tuple(out["sequence_output"].shape), tuple(out["target_output"].shape)
    ((2, 1, 4), (2, 3, 4))
    """

    def __init__(self, vocabulary_size, hidden_dim, dtype=None, **kwargs):
        # === Layers ===
        limit = 0.5 / hidden_dim
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_dim,
            embeddings_initializer=keras.initializers.RandomUniform(-limit, limit),
            dtype=dtype, name="token_embedding")
        self.context_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_dim, embeddings_initializer="zeros",
            dtype=dtype, name="context_embedding")

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        target_ids = keras.Input(shape=(None,), dtype="int32", name="target_ids")
        super().__init__(
            inputs={"token_ids": token_ids, "target_ids": target_ids},
            outputs={
                "sequence_output": self.token_embedding(token_ids),
                "target_output": self.context_embedding(target_ids),
            },
            dtype=dtype, **kwargs)

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim

    @classmethod
    def layout_rules(cls):
        """Both tables split by rows (see ``get_layout_map``): each device
        holds the input and output vectors of a slice of the vocabulary,
        whose size the model-parallel size must divide."""
        return {r"(token|context)_embedding/embeddings": ("model", None)}

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary_size": self.vocabulary_size,
                       "hidden_dim": self.hidden_dim})
        return config
