"""The "text-generation" pipeline: prompts continued by a causal LM."""

from kzoo.pipelines.base import Pipeline, as_list, batches


class TextGenerationPipeline(Pipeline):
    """Continues prompts, as Hugging Face's text-generation pipeline.

    Each prompt gives ``[{"generated_text": text}]``: the prompt and its
    continuation (Hugging Face's default ``return_full_text=True``; with
    False, the continuation alone). One prompt gives that list; a list of
    prompts a list of such lists. Decoding is greedy unless ``sampler``
    names another (``"top_k"``, ``"top_p"``, ``"random"``, ``"beam"``, or a
    ``kzoo.samplers.Sampler``) and stops at the tokenizer's end token.

    Args:
        model: a preset name or folder (``kzoo.models.CausalLM.from_preset``),
            or a built ``kzoo.models.CausalLM``.
        max_length: int or None. Tokens in all (the start token, the prompt
            and the new tokens) of the longest prompt of a batch; None: the
            preprocessor's ``sequence_length``.
        max_new_tokens: int or None. New tokens per prompt (overrides
            ``max_length``).
        sampler: a sampler name or ``kzoo.samplers.Sampler``.
        return_full_text: bool. Keep the prompt in ``generated_text``.
        batch_size: int. Prompts per forward pass.
        model_kwargs: dict of ``from_preset`` arguments, with a preset.

    Example:
    >>> vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
    ...     ["the cat sat on the mat"] * 3, vocabulary_size=270)
    >>> backbone = kzoo.models.GPTBackbone(
    ...     vocabulary_size=len(vocabulary), num_layers=1, num_heads=2,
    ...     hidden_dim=8, intermediate_dim=16, max_sequence_length=16)
    >>> model = kzoo.models.GPTCausalLM(backbone, kzoo.models.GPTCausalLMPreprocessor(
    ...     kzoo.models.GPTTokenizer(vocabulary, merges), sequence_length=16))
    >>> generate = kzoo.pipeline("text-generation", model, max_new_tokens=3)
    >>> found = generate("the cat")
    >>> len(found), found[0]["generated_text"].startswith("the cat")
    (1, True)
    """

    task = "text-generation"
    task_shape = "CausalLM"

    def __init__(self, model, max_length=None, max_new_tokens=None, sampler="greedy",
                 return_full_text=True, batch_size=32, model_kwargs=None):
        super().__init__(model, batch_size=batch_size, model_kwargs=model_kwargs)
        self.max_length = max_length
        self.max_new_tokens = _check_new_tokens(max_new_tokens)
        self.sampler = sampler
        self.return_full_text = return_full_text

    def __call__(self, inputs, max_length=None, max_new_tokens=None, sampler=None,
                 return_full_text=None):
        """Continues ``inputs`` (a str or a list of str)."""
        prompts, single = as_list(inputs, "prompts")
        new_tokens = _check_new_tokens(max_new_tokens or self.max_new_tokens)
        full = self.return_full_text if return_full_text is None else return_full_text
        preprocessor = self.model.preprocessor
        context = self.model.backbone.max_sequence_length
        results = []
        for chunk in batches(prompts, self.batch_size):
            rows = preprocessor.generate_preprocess(chunk, context)
            length = max_length or self.max_length
            if new_tokens is not None:
                length = min(context, max(len(r) for r in rows) + new_tokens)
            outputs = self.model.generate_token_ids(
                rows, max_length=length, sampler=sampler or self.sampler)
            if new_tokens is not None:
                outputs = [out[:len(row) + new_tokens] for row, out in zip(rows, outputs)]
            texts = preprocessor.generate_postprocess(outputs)
            if not full:  # Hugging Face: the decoded text past the decoded prompt
                starts = preprocessor.generate_postprocess(rows)
                texts = [t[len(s):] if t.startswith(s) else t
                         for t, s in zip(texts, starts)]
            results.extend([{"generated_text": t}] for t in texts)
        return results[0] if single else results


def _check_new_tokens(value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 1):
        raise ValueError(f"`max_new_tokens` must be a positive int, got {value!r}.")
    return value
