"""A span-extraction head on any backbone: SQuAD-style question answering."""

import keras
import numpy as np
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.models.task import Task


def best_span(start_logits, end_logits, max_answer_length=30, mask=None):
    """The highest-scoring answer span ``start <= end < start + max_length``.

    The span's score is ``p_start[start] * p_end[end]``, the start and end
    probabilities being softmaxes over the allowed positions (Hugging Face's
    question-answering pipeline ranks spans the same way: by the sum of the
    two logits).

    Args:
        start_logits: float array ``[length]`` or ``[batch, length]``.
        end_logits: float array of the same shape.
        max_answer_length: int. Longest span, in tokens.
        mask: optional bool array of the same shape: the positions a span may
            start or end at (the context pieces). Default: all.

    Returns:
        ``(start, end, score)``: ints and a float for 1-D inputs, else int
        arrays and a float array ``[batch]``. A row without any allowed
        position gives ``(-1, -1, 0.0)``.

    Example:
    >>> start = np.array([0.0, 5.0, 1.0, 0.0])
    >>> end = np.array([0.0, 0.0, 1.0, 7.0])
    >>> s, e, _ = best_span(start, end, max_answer_length=3)
    >>> int(s), int(e)
    (1, 3)
    >>> s, e, _ = best_span(start, end, max_answer_length=2)
    >>> int(s), int(e)
    (2, 3)
    """
    if (not isinstance(max_answer_length, (int, np.integer))
            or isinstance(max_answer_length, bool) or max_answer_length < 1):
        raise ValueError(
            f"`max_answer_length` must be a positive int, got {max_answer_length!r}."
        )
    start_logits = np.asarray(start_logits, dtype="float64")
    end_logits = np.asarray(end_logits, dtype="float64")
    if start_logits.shape != end_logits.shape or start_logits.ndim not in (1, 2):
        raise ValueError(
            "`start_logits` and `end_logits` must have one shape, [length] or "
            f"[batch, length]; got {start_logits.shape} and {end_logits.shape}."
        )
    single = start_logits.ndim == 1
    if single:
        start_logits, end_logits = start_logits[None], end_logits[None]
    if mask is None:
        mask = np.ones(start_logits.shape, bool)
    mask = np.asarray(mask, bool).reshape(start_logits.shape)

    def log_softmax(logits):
        logits = np.where(mask, logits, -np.inf)
        top = np.max(logits, axis=-1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        total = np.sum(np.exp(logits - top), axis=-1, keepdims=True)
        # A row without allowed positions stays at -inf everywhere.
        return logits - top - np.log(np.where(total > 0, total, 1.0))

    length = start_logits.shape[-1]
    scores = (log_softmax(start_logits)[:, :, None]
              + log_softmax(end_logits)[:, None, :])  # [batch, start, end]
    offset = np.arange(length)[None, :] - np.arange(length)[:, None]  # end-start
    allowed = (offset >= 0) & (offset < max_answer_length)
    scores = np.where(allowed[None], scores, -np.inf)
    flat = scores.reshape(len(scores), -1)
    best = flat.argmax(-1) if flat.shape[1] else np.zeros(len(flat), int)
    best_score = (flat[np.arange(len(flat)), best] if flat.shape[1]
                  else np.full(len(flat), -np.inf))
    found = np.isfinite(best_score)
    start = np.where(found, best // max(length, 1), -1)
    end = np.where(found, best % max(length, 1), -1)
    score = np.where(found, np.exp(np.where(found, best_score, 0.0)), 0.0)
    if single:
        return int(start[0]), int(end[0]), float(score[0])
    return start, end, score


class _SpanLogits(keras.layers.Layer):
    """[batch, length, 2] → start and end logits, masked outside the answer
    positions (see ``QuestionAnswerer.answer_mask``)."""

    def call(self, logits, allowed):
        logits = ops.cast(logits, "float32")
        floor = ops.full_like(logits[..., 0], -1e9)
        start = ops.where(allowed, logits[..., 0], floor)
        end = ops.where(allowed, logits[..., 1], floor)
        return start, end

    def compute_output_spec(self, logits, allowed):
        # Two tensors: one spec object returned twice would make the
        # functional model's start and end outputs one and the same tensor.
        return tuple(keras.KerasTensor(logits.shape[:-1], dtype="float32")
                     for _ in range(2))


class _BertAnswerMask(keras.layers.Layer):
    """Position 0 and the second segment's real tokens but its last one."""

    def call(self, segment_ids, padding_mask):
        real = ops.cast(padding_mask, "int32")
        next_real = ops.pad(real[:, 1:], [[0, 0], [0, 1]])
        context = (ops.cast(segment_ids, "int32") == 1) & (real > 0) & (next_real > 0)
        first = ops.arange(ops.shape(real)[1], dtype="int32") == 0
        return context | first[None, :]

    def compute_output_spec(self, segment_ids, padding_mask):
        return keras.KerasTensor(segment_ids.shape, dtype="bool")


@kzoo_export("kzoo.models.QuestionAnswerer")
class QuestionAnswerer(Task):
    """Backbone → each position's hidden state → dense(2) → start/end logits.

    Extractive question answering as in the BERT paper (section 4.2): a
    start vector and an end vector score every position, and the answer is
    the best span of the context. The outputs are a dict of ``start_logits``
    and ``end_logits`` (float32 ``[batch, length]``), set to -1e9 where an
    answer cannot be: the padding, the question and the special tokens,
    except position 0 (``[CLS]``), which training points to for answers cut
    by truncation (as Hugging Face does). ``answer`` decodes spans back to
    text. ``compile()`` defaults to Adam at 5e-5 and the mean of the start
    and end cross-entropies (Hugging Face's ``total_loss``), with the
    accuracy of each.

    Args:
        backbone: the family backbone (its inputs include ``segment_ids``
            and ``padding_mask``; see ``answer_mask``).
        preprocessor: a ``QuestionAnswererPreprocessor`` or None.
    """

    def __init__(self, backbone, preprocessor=None, **kwargs):
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.span_dense = keras.layers.Dense(
            2,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy,
            name="span_logits",
        )
        self.answer_mask_layer = _BertAnswerMask(name="answer_mask")
        self.span_logits = _SpanLogits(name="masked_span_logits")
        inputs = backbone.input
        sequence = backbone(inputs)["sequence_output"]
        start, end = self.span_logits(self.span_dense(sequence),
                                      self.answer_mask(inputs))
        super().__init__(inputs=inputs,
                         outputs={"start_logits": start, "end_logits": end},
                         **kwargs)
        self.compile()

    def answer_mask(self, inputs):
        """Bool ``[batch, length]``: where a span may start or end in the model.

        BERT's layout: position 0 and the real tokens of the second segment
        (segment id 1) but its closing separator.
        """
        return self.answer_mask_layer(inputs["segment_ids"], inputs["padding_mask"])

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Adam(5e-5), mean start/end cross-entropy, start/end accuracy."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(5e-5)
        if loss == "auto":
            loss = {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True)
                    for name in ("start_logits", "end_logits")}
            kwargs.setdefault("loss_weights",
                              {"start_logits": 0.5, "end_logits": 0.5})
        if metrics == "auto":
            metrics = {name: [keras.metrics.SparseCategoricalAccuracy(
                name="accuracy")] for name in ("start_logits", "end_logits")}
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def answer(self, questions, contexts, max_answer_length=30, batch_size=32):
        """Answers questions from their contexts.

        Args:
            questions: a list of str.
            contexts: a list of str, one per question.
            max_answer_length: int. Longest answer, in tokens.
            batch_size: int. Examples per forward pass.

        Returns:
            A list of dicts ``{"text", "start", "end", "score"}``: ``start``
            and ``end`` are character offsets into the context, with
            ``context[start:end] == text``, and ``score`` the span's
            probability (see ``best_span``). A context with no piece left
            after truncation gives ``{"text": "", "start": 0, "end": 0,
            "score": 0.0}``.
        """
        if self.preprocessor is None:
            raise ValueError("`answer` needs the task's preprocessor: build the "
                             "task with `preprocessor=`.")
        questions, contexts = list(questions), list(contexts)
        if len(questions) != len(contexts):
            raise ValueError(
                f"`questions` and `contexts` must have one length, got "
                f"{len(questions)} and {len(contexts)}."
            )
        results = []
        for begin in range(0, len(questions), batch_size):
            x = (questions[begin:begin + batch_size],
                 contexts[begin:begin + batch_size])
            offsets = self.preprocessor.context_offsets(x)
            starts = ops.convert_to_numpy(offsets["start_offsets"])
            ends = ops.convert_to_numpy(offsets["end_offsets"])
            outputs = self.predict_on_batch(self.preprocessor(x))
            span_start, span_end, score = best_span(
                ops.convert_to_numpy(outputs["start_logits"]),
                ops.convert_to_numpy(outputs["end_logits"]),
                max_answer_length, mask=starts >= 0)
            for row, context in enumerate(x[1]):
                if isinstance(context, bytes):
                    context = context.decode("utf-8", errors="replace")
                if span_start[row] < 0:
                    results.append({"text": "", "start": 0, "end": 0, "score": 0.0})
                    continue
                start = int(starts[row, span_start[row]])
                end = int(ends[row, span_end[row]])
                results.append({"text": context[start:end], "start": start,
                                "end": end, "score": float(score[row])})
        return results

    def serving_input_names(self):
        """``question`` and ``context``."""
        return ("question", "context")

    def serving_outputs(self, outputs):
        return {"start_logits": outputs["start_logits"],
                "end_logits": outputs["end_logits"]}
