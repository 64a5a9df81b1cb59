"""Keeps vocabulary logits to the ids a tokenizer can turn back into text."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export

#: logit of an id outside the vocabulary: finite (no NaN in a softmax, a
#: log-softmax or a beam's running sum), and exp() of it is exactly 0 in float32
MASKED_LOGIT = -1e9


@kzoo_export("kzoo.layers.VocabularyMask")
class VocabularyMask(keras.layers.Layer):
    """Sets the logits of ids ``>= vocabulary_size`` to -1e9.

    A checkpoint's embedding table often has more rows than its tokenizer
    has tokens (padded to a multiple of 64 or 128). The extra ids have no
    text, so a model must never predict them: after this layer their
    probability is exactly 0 in float32 (a float16 model's -1e9 rounds to
    -inf, which also gives 0), whatever the weights say, so no sampler,
    ``argmax`` or beam can pick them. Ids below ``vocabulary_size`` are
    unchanged. The layer has no weights.

    Args:
        vocabulary_size: int >= 1, the number of ids that are kept (the
            tokenizer's vocabulary size); or the tokenizer itself, whose
            ``vocabulary_size()`` is then read at each call (a task loaded
            from a ``.keras`` file is built before its tokenizer's vocabulary
            is loaded).
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).

    Call arguments:
        inputs: float logits ``[..., num_ids]``.

    Returns:
        The logits, of the same shape and dtype (never cast), with ids ``>=
        vocabulary_size`` at -1e9.

    Example:
    >>> mask = kzoo.layers.VocabularyMask(vocabulary_size=2)
    >>> ops.convert_to_numpy(mask(np.array([[0.5, 1.0, 9.0]], "float32"))).tolist()
    [[0.5, 1.0, -1000000000.0]]
    """

    def __init__(self, vocabulary_size, **kwargs):
        tokenizer = None
        if callable(getattr(vocabulary_size, "vocabulary_size", None)):
            tokenizer, vocabulary_size = vocabulary_size, None
        elif isinstance(vocabulary_size, bool) or not isinstance(vocabulary_size, int) \
                or vocabulary_size < 1:
            raise ValueError(
                f"`vocabulary_size` must be an int >= 1 or a tokenizer, got "
                f"{vocabulary_size!r}.")
        super().__init__(**kwargs)
        self._vocabulary_size = vocabulary_size
        # Plain attribute: the tokenizer belongs to the task's preprocessor
        # (tracking it here would save its vocabulary twice).
        object.__setattr__(self, "_tokenizer", tokenizer)
        # The logits keep their dtype (no cast to this layer's policy).
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    @property
    def vocabulary_size(self):
        if self._tokenizer is not None:
            return self._tokenizer.vocabulary_size()
        return self._vocabulary_size

    def call(self, inputs):
        inputs = ops.convert_to_tensor(inputs)
        ids = ops.arange(ops.shape(inputs)[-1], dtype="int32")
        masked = ops.cast(MASKED_LOGIT, inputs.dtype)
        return ops.where(ids < self.vocabulary_size, inputs, masked)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(inputs.shape, inputs.dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary_size": self.vocabulary_size})
        return config
