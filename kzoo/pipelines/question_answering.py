"""The "question-answering" pipeline: the answer span of a context."""

from kzoo.pipelines.base import Pipeline, as_list


class QuestionAnsweringPipeline(Pipeline):
    """Extractive answers, as Hugging Face's question-answering pipeline.

    Call it as ``qa(question=..., context=...)`` (both a str, or both lists
    of one length), or with a ``{"question", "context"}`` dict or a list of
    them. Each answer is ``{"score", "start", "end", "answer"}``: the span's
    probability, its character offsets in the context and
    ``context[start:end]``. One question gives its dict; lists give a list.

    Args:
        model: a preset name or folder
            (``kzoo.models.QuestionAnswerer.from_preset``), or a built
            ``kzoo.models.QuestionAnswerer``.
        max_answer_len: int. Longest answer, in tokens (Hugging Face's
            default, 15).
        batch_size: int. Questions per forward pass.
        model_kwargs: dict of ``from_preset`` arguments, with a preset.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "lives",
    ...          "in", "paris", "john", "?"]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=11, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=16)
    >>> model = kzoo.models.BertQuestionAnswerer(
    ...     backbone, preprocessor=kzoo.models.BertQuestionAnswererPreprocessor(
    ...         kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=16))
    >>> qa = kzoo.pipeline("question-answering", model)
    >>> found = qa(question="who lives in paris?", context="john lives in paris")
    >>> sorted(found), "john lives in paris"[found["start"]:found["end"]] == found["answer"]
    (['answer', 'end', 'score', 'start'], True)
    """

    task = "question-answering"
    task_shape = "QuestionAnswerer"

    def __init__(self, model, max_answer_len=15, batch_size=32, model_kwargs=None):
        super().__init__(model, batch_size=batch_size, model_kwargs=model_kwargs)
        self.max_answer_len = max_answer_len

    def __call__(self, inputs=None, question=None, context=None, max_answer_len=None):
        """Answers; see the class docstring."""
        if inputs is not None:
            if question is not None or context is not None:
                raise ValueError("Pass either the inputs ({'question', 'context'} "
                                 "dicts) or `question=` and `context=`, not both.")
            items, single = as_list(inputs, "inputs", dict)
            bad = [x for x in items if set(x) != {"question", "context"}]
            if bad:
                raise ValueError("Each input is a dict with the keys 'question' and "
                                 f"'context'; got the keys {sorted(bad[0])}.")
            questions = [x["question"] for x in items]
            contexts = [x["context"] for x in items]
        else:
            if question is None or context is None:
                raise ValueError("question-answering needs `question=` and `context=`.")
            questions, single = as_list(question, "questions")
            contexts, single_context = as_list(context, "contexts")
            if single != single_context or len(questions) != len(contexts):
                raise ValueError(
                    "`question` and `context` must both be a str, or lists of one "
                    f"length; got {len(questions)} question(s) and "
                    f"{len(contexts)} context(s).")
        found = self.model.answer(
            questions, contexts,
            max_answer_length=max_answer_len or self.max_answer_len,
            batch_size=self.batch_size)
        results = [{"score": a["score"], "start": a["start"], "end": a["end"],
                    "answer": a["text"]} for a in found]
        return results[0] if single else results
