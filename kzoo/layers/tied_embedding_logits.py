"""Vocabulary logits through a tied token embedding matrix."""

import keras
from keras import ops

from kzoo import ops as kzoo_ops
from kzoo.api_export import kzoo_export
from kzoo.ops.embedding import FEW_ROWS, static_rows


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


def _int8_inputs_quantizer(embedding):
    """The quantizer of the hidden states for an int8 tied table: that of
    the embedding's ``QuantizationConfig`` (absmax per row by default, as
    Keras' int8 ``Dense``), or None for a float table, a weight-only config
    (``activation_quantizer=None``: the table is dequantized) or LoRA
    (``token_embedding_table`` explains)."""
    if (getattr(embedding, "quantization_mode", None) != "int8"
            or embedding.lora_enabled):
        return None
    return keras.quantizers.QuantizationConfig.activation_quantizer_or_default(
        getattr(embedding, "quantization_config", None),
        keras.quantizers.AbsMaxQuantizer())


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
        quantizer = _int8_inputs_quantizer(self.token_embedding)
        if quantizer is not None:
            return self._int8_logits(inputs, quantizer)
        embedding = self.token_embedding
        if (getattr(embedding, "quantization_mode", None) is None
                and embedding.variable_dtype
                == keras.backend.standardize_dtype(inputs.dtype)):
            embeddings = embedding.embeddings  # read where it lies
        else:
            embeddings = token_embedding_table(embedding, inputs.dtype)
        return kzoo_ops.embedding_logits(inputs, embeddings)

    def _int8_logits(self, inputs, quantizer):
        """The logits of an int8 table as Keras' int8 ``Dense`` computes
        its products: the hidden states quantized per row (``quantizer``,
        absmax by default), an int8 x int8 product with int32 sums, then
        both scales divided out; the gradient for the hidden states is that
        of the dequantized table (as ``Dense``'s).

        Reading the table as int8, instead of a float copy of all its values
        made at every generation step, is what makes an int8 head pay
        (`bench/gpt.py --dtype int8`, docs/benchmarks.md); as an einsum
        ``"vd,rd->vr"`` TensorFlow's int8 head is much slower than the
        per-row product used here. The product is ``kzoo.ops.int8_matmul``
        (on PyTorch oneDNN's int8 kernel: one row against GPT-2's 50257 x
        512 table in 0.3 ms, where dequantizing the table costs 25 ms).
        """
        embedding = self.token_embedding
        table = ops.convert_to_tensor(embedding.embeddings)  # int8 [V, D]
        table_scale = ops.cast(
            ops.convert_to_tensor(embedding.embeddings_scale), "float32")
        rows = static_rows(inputs.shape)
        flat = inputs
        if rows is not None:
            flat = ops.reshape(inputs, (rows, inputs.shape[-1]))

        @ops.custom_gradient
        def product(flat, table, table_scale):
            def grad_fn(*args, upstream=None):
                if upstream is None:
                    (upstream,) = args
                float_table = token_embedding_table(embedding, upstream.dtype)
                return (ops.cast(ops.matmul(upstream, float_table), flat.dtype),
                        None, None)

            quantized, flat_scale = quantizer(flat, axis=-1)  # int8, [N, 1]
            if rows is not None and 1 < rows <= FEW_ROWS:
                # A generation step of 2-64 rows: one matrix-vector product
                # per row ([rows, 1, D] x [D, V]), which XLA runs about as
                # fast as one row, where one [rows, D] x [D, V] product or
                # the einsum "vd,rd->vr" is many times slower on TensorFlow.
                sums = kzoo_ops.int8_matmul(ops.expand_dims(quantized, 1),
                                            ops.transpose(table))[:, 0, :]
            else:
                sums = kzoo_ops.int8_matmul(quantized, ops.transpose(table))
            scale = ops.multiply(ops.cast(flat_scale, "float32"), table_scale)
            return ops.divide(ops.cast(sums, "float32"), scale), grad_fn

        logits = product(flat, table, table_scale)
        if rows is not None:
            logits = ops.reshape(logits, tuple(inputs.shape[:-1]) + (-1,))
        return logits

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.token_embedding.input_dim,)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(self.compute_output_shape(inputs.shape), "float32")
