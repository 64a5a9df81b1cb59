"""Vocabulary logits through a tied token embedding matrix."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export


#: up to this many rows, the logits are computed as ``(E @ h^T)^T``
_FEW_ROWS = 64


def _static_rows(shape):
    """The number of rows of ``[..., hidden_dim]``, or None if not static."""
    rows = 1
    for dim in shape[:-1]:
        if not isinstance(dim, int):
            return None
        rows *= dim
    return rows


def token_embedding_table(embedding, dtype):
    """The `[vocabulary, dim]` matrix of a `keras.layers.Embedding` in
    `dtype`, for the heads that reuse it (tied logits, BERT's masked-LM
    head, GPT-1's auxiliary loss).

    After Keras' `quantize("int8")` the layer's `embeddings` are the int8
    values `round(row * scale)`, one scale per row: the matrix is
    `int8 / scale`. (Read as they were, they gave logits hundreds of times
    too large.)
    """
    mode = getattr(embedding, "quantization_mode", None)
    if mode is None:
        return ops.cast(ops.convert_to_tensor(embedding.embeddings), dtype)
    if mode != "int8" or embedding.lora_enabled:
        raise NotImplementedError(
            f"The tied token embedding is quantized as {mode!r}"
            + (" with LoRA enabled" if embedding.lora_enabled else "")
            + "; the heads that reuse it read a float table, or an int8 one "
            "without LoRA: use `quantize(\"int8\")` without LoRA, or LoRA on "
            "the float model.")
    table = ops.cast(ops.convert_to_tensor(embedding.embeddings), dtype)
    scale = ops.cast(ops.convert_to_tensor(embedding.embeddings_scale), dtype)
    return ops.divide(table, ops.expand_dims(scale, -1))


@kzoo_export("kzoo.layers.TiedEmbeddingLogits")
class TiedEmbeddingLogits(keras.layers.Layer):
    """Scores hidden states against a token embedding matrix (tied weights).

    ``logits = hidden @ embeddings.T``: the output projection of GPT (and of
    Hugging Face's ``GPT2LMHeadModel``), which shares its matrix with the
    input token embedding and has no bias. The layer owns no weights; it
    reads the embedding layer's, so training either trains both.

    Args:
        token_embedding: the ``keras.layers.Embedding`` whose matrix is used.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).

    Call arguments:
        inputs: float tensor ``[..., hidden_dim]``.

    Returns:
        Logits ``[..., vocabulary_size]``, in float32 (a bfloat16 model's
        logits too, so the loss and sampling see full precision).

    Example:
    >>> embedding = keras.layers.Embedding(10, 4)
    >>> embedding.build((None,))
    >>> logits = kzoo.layers.TiedEmbeddingLogits(embedding)(np.ones((2, 3, 4)))
    >>> tuple(logits.shape)
    (2, 3, 10)
    """

    def __init__(self, token_embedding, **kwargs):
        super().__init__(**kwargs)
        if not hasattr(token_embedding, "input_dim"):
            raise TypeError(
                "`token_embedding` must be a keras.layers.Embedding, got "
                f"{type(token_embedding).__name__}."
            )
        self.token_embedding = token_embedding

    def build(self, inputs_shape):
        if not self.token_embedding.built:
            self.token_embedding.build((None,))
        if inputs_shape[-1] != self.token_embedding.output_dim:
            raise ValueError(
                f"The hidden states have size {inputs_shape[-1]} but the token "
                f"embedding has {self.token_embedding.output_dim} columns: the "
                "tied output projection needs them equal."
            )
        self.built = True

    def call(self, inputs):
        embeddings = token_embedding_table(self.token_embedding, inputs.dtype)
        return ops.cast(self._scores(inputs, embeddings), "float32")

    def _scores(self, inputs, embeddings):
        """``inputs @ embeddings^T``, in the fastest form for the shape."""
        rows = _static_rows(inputs.shape)
        if rows is not None and rows <= _FEW_ROWS:
            # A few rows (a generation step): `embeddings @ hidden^T`, the
            # table read row by row as it lies. PyTorch's CPU product with a
            # transposed right-hand side reads it 2.5x slower (batch 8 x
            # GPT-2's 50257 x 512: 20.0 vs 7.9 ms; level on XLA).
            flat = ops.reshape(inputs, (rows, inputs.shape[-1]))
            logits = ops.transpose(ops.matmul(embeddings, ops.transpose(flat)))
            logits = ops.reshape(logits, tuple(inputs.shape[:-1]) + (-1,))
        else:
            logits = ops.matmul(inputs, ops.transpose(embeddings))
        return logits

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.token_embedding.input_dim,)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(self.compute_output_shape(inputs.shape), "float32")
