"""Masked language model head: predicts the tokens at given positions."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.layers.tied_embedding_logits import token_embedding_table
from kzoo.layers.transformer_block import get_activation
from kzoo.ops.positions import gather_positions


@kzoo_export("kzoo.layers.MaskedLMHead")
class MaskedLMHead(keras.layers.Layer):
    """Masked language model head (BERT's ``cls.predictions``).

    Gathers the hidden states at ``mask_positions``, transforms them (a dense
    layer of the hidden size, ``intermediate_activation``, layer
    normalization), then scores every token of the vocabulary: a product with
    the token embedding matrix (the weights are tied, as in BERT) or, without
    ``token_embedding``, with an own ``[hidden, vocabulary]`` kernel, plus an
    output bias per token. Only the gathered positions are scored, so the
    cost grows with the number of masks, not with the sequence length.

    Args:
        vocabulary_size: int or None. Number of tokens to score; taken from
            ``token_embedding`` when that is given (they must then agree).
        token_embedding: a ``keras.layers.Embedding`` (the backbone's) whose
            matrix is the output projection, or None for an own kernel.
        intermediate_activation: activation of the transform: a Keras
            activation name (``"gelu"`` is the exact GELU of Hugging Face
            BERT), ``"gelu_approximate"`` or a callable. Defaults to
            ``"gelu"``.
        activation: None (logits, the default) or an activation of the
            output (``"softmax"``).
        layer_norm_epsilon: float. Epsilon of the layer normalization.
            Defaults to 1e-12, as BERT.
        kernel_initializer: initializer of the transform (and own output)
            kernel. Defaults to ``"glorot_uniform"``.
        bias_initializer: initializer of the biases. Defaults to ``"zeros"``.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``, ...).

    Call arguments:
        inputs: hidden states ``[batch, length, hidden]``.
        mask_positions: int ``[batch, num_masks]``, positions in
            ``[0, length)`` to predict (padding entries may be any valid
            position, e.g. 0; their scores are simply ignored by the loss).

    Returns:
        ``[batch, num_masks, vocabulary_size]`` logits (or the activation's
        output).

    Example:
    >>> embedding = keras.layers.Embedding(10, 4)
    >>> hidden = embedding(np.array([[1, 2, 3, 4, 5]]))
    >>> head = kzoo.layers.MaskedLMHead(token_embedding=embedding)
    >>> tuple(head(hidden, np.array([[1, 3]])).shape)
    (1, 2, 10)

    Reference:
        - Devlin et al., 2019, "BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding" (arXiv:1810.04805).
        - Press and Wolf, 2017, "Using the Output Embedding to Improve
          Language Models" (arXiv:1608.05859), for the tied weights.
    """

    def __init__(
        self,
        vocabulary_size=None,
        token_embedding=None,
        intermediate_activation="gelu",
        activation=None,
        layer_norm_epsilon=1e-12,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if token_embedding is None and vocabulary_size is None:
            raise ValueError(
                "MaskedLMHead needs `vocabulary_size` or `token_embedding` "
                "(the backbone's token embedding, whose matrix it reuses); "
                "got neither."
            )
        if token_embedding is not None:
            if not hasattr(token_embedding, "input_dim"):
                raise TypeError(
                    "`token_embedding` must be a keras.layers.Embedding, got "
                    f"{type(token_embedding).__name__}."
                )
            if vocabulary_size is not None and vocabulary_size != token_embedding.input_dim:
                raise ValueError(
                    f"`vocabulary_size`={vocabulary_size} differs from the "
                    f"{token_embedding.input_dim} rows of `token_embedding`: "
                    "leave `vocabulary_size` out when passing the embedding."
                )
            vocabulary_size = token_embedding.input_dim
        elif not isinstance(vocabulary_size, int) or vocabulary_size < 1:
            raise ValueError(
                f"`vocabulary_size` must be a positive int, got {vocabulary_size!r}."
            )
        self.vocabulary_size = vocabulary_size
        self.token_embedding = token_embedding
        self.intermediate_activation = intermediate_activation
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self._intermediate_fn = get_activation(intermediate_activation)

    def _fresh(self, initializer):
        # A copy per weight, so that a seeded initializer does not repeat.
        return initializer.__class__.from_config(initializer.get_config())

    def build(self, inputs_shape, mask_positions_shape=None):
        hidden_dim = inputs_shape[-1]
        if self.token_embedding is not None:
            if not self.token_embedding.built:  # a standalone head's own copy
                self.token_embedding.build((None,))
            if self.token_embedding.output_dim != hidden_dim:
                raise ValueError(
                    f"The hidden states have size {hidden_dim} but "
                    f"`token_embedding` has {self.token_embedding.output_dim} "
                    "columns: the tied output projection needs them equal."
                )
        gathered_shape = (inputs_shape[0], None, hidden_dim)
        self.transform_dense = keras.layers.Dense(
            hidden_dim,
            activation=self._intermediate_fn,
            kernel_initializer=self._fresh(self.kernel_initializer),
            bias_initializer=self._fresh(self.bias_initializer),
            dtype=self.dtype_policy,
            name="transform_dense",
        )
        self.transform_dense.build(gathered_shape)
        self.transform_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="transform_layer_norm",
        )
        self.transform_layer_norm.build(gathered_shape)
        if self.token_embedding is None:
            self.output_kernel = self.add_weight(
                name="output_kernel",
                shape=(hidden_dim, self.vocabulary_size),
                initializer=self._fresh(self.kernel_initializer),
            )
        self.output_bias = self.add_weight(
            name="output_bias",
            shape=(self.vocabulary_size,),
            initializer=self._fresh(self.bias_initializer),
        )
        self.built = True

    def call(self, inputs, mask_positions):
        x = gather_positions(inputs, mask_positions)
        x = self.transform_layer_norm(self.transform_dense(x))
        if self.token_embedding is not None:
            kernel = ops.transpose(token_embedding_table(self.token_embedding, x.dtype))
        else:
            kernel = ops.cast(ops.convert_to_tensor(self.output_kernel), x.dtype)
        outputs = ops.matmul(x, kernel)
        outputs = outputs + ops.cast(self.output_bias, x.dtype)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def compute_output_shape(self, inputs_shape, mask_positions_shape):
        return tuple(mask_positions_shape) + (self.vocabulary_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "token_embedding": (
                    keras.layers.serialize(self.token_embedding)
                    if self.token_embedding is not None else None
                ),
                "intermediate_activation": (
                    self.intermediate_activation
                    if isinstance(self.intermediate_activation, str)
                    else keras.activations.serialize(self.intermediate_activation)
                ),
                "activation": keras.activations.serialize(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("token_embedding"), dict):
            # A standalone head gets its own copy of the embedding; a task
            # rebuilds its head on its backbone's embedding instead.
            config["token_embedding"] = keras.layers.deserialize(
                config["token_embedding"]
            )
        return cls(**config)
