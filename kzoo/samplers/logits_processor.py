"""Logit controls applied before a sampler chooses: repetition penalty,
no-repeat n-grams, a minimum of new tokens."""

from keras import ops

from kzoo.api_export import kzoo_export


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{name}` must be an int >= {minimum}, got {value!r}.")


def _token_presence(tokens, valid, vocabulary_size):
    """bool ``[rows, vocabulary_size]``: whether each id occurs in ``tokens``
    ``[rows, length]`` at a position where ``valid`` is true.

    Every mark writes the same value, so duplicate positions need no
    accumulation; invalid positions write into one spare column dropped at
    the end.
    """
    shape = ops.shape(tokens)
    rows, length = shape[0], shape[1]
    tokens = ops.where(valid, ops.cast(tokens, "int32"), vocabulary_size)
    row_ids = ops.broadcast_to(ops.arange(rows, dtype="int32")[:, None], (rows, length))
    indices = ops.stack([ops.reshape(row_ids, (-1,)), ops.reshape(tokens, (-1,))], axis=-1)
    marks = ops.scatter_update(ops.zeros((rows, vocabulary_size + 1), "float32"),
                               indices, ops.ones((rows * length,), "float32"))
    return ops.slice(marks, (0, 0), (rows, vocabulary_size)) > 0


def _shift_left(tokens, offset):
    """``tokens[:, j + offset]`` at column ``j`` (zeros past the end)."""
    if offset == 0:
        return tokens
    shape = ops.shape(tokens)
    rest = ops.slice(tokens, (0, offset), (shape[0], shape[1] - offset))
    return ops.concatenate([rest, ops.zeros((shape[0], offset), tokens.dtype)], axis=1)


@kzoo_export("kzoo.samplers.LogitsProcessor")
class LogitsProcessor:
    """The logit controls of Hugging Face's ``generate``, applied to each
    step's float32 logits (log-probabilities for beam search) in
    transformers' order, before temperature, top-k and top-p.

    * ``repetition_penalty`` (``RepetitionPenaltyLogitsProcessor``): the
      score of every id already in the sequence (prompt included) is divided
      by the penalty where positive, multiplied by it where negative.
    * ``no_repeat_ngram_size`` n (``NoRepeatNGramLogitsProcessor``): an id
      that would complete an n-gram already in the sequence gets -inf.
    * ``min_new_tokens`` (``MinNewTokensLengthLogitsProcessor``): the stop
      ids get -inf until a row has that many new tokens.

    A control at its default adds nothing to the step; ``active`` is false
    when all are.

    Args:
        repetition_penalty: float > 0; 1.0 is none.
        no_repeat_ngram_size: int >= 0; 0 is none.
        min_new_tokens: int >= 0; 0 is none.
        stop_token_ids: the ids ``min_new_tokens`` holds back.

    Example:
    >>> processor = kzoo.samplers.LogitsProcessor(repetition_penalty=2.0)
    >>> logits = np.array([[1.0, -1.0, 3.0]], "float32")
    >>> ops.convert_to_numpy(processor(logits, np.array([[0, 1]]), 2,
    ...                                np.array([[1, 1]]))).tolist()
    [[0.5, -2.0, 3.0]]
    """

    def __init__(self, repetition_penalty=1.0, no_repeat_ngram_size=0,
                 min_new_tokens=0, stop_token_ids=()):
        if isinstance(repetition_penalty, bool) or not isinstance(
                repetition_penalty, (int, float)) or not repetition_penalty > 0:
            raise ValueError(
                f"`repetition_penalty` must be a number > 0 (1.0 is no penalty, "
                f"above 1 discourages repeats), got {repetition_penalty!r}.")
        _check_int("no_repeat_ngram_size", no_repeat_ngram_size, 0)
        _check_int("min_new_tokens", min_new_tokens, 0)
        self.repetition_penalty = float(repetition_penalty)
        self.no_repeat_ngram_size = no_repeat_ngram_size
        self.min_new_tokens = min_new_tokens
        self.stop_token_ids = tuple(int(t) for t in stop_token_ids)

    @property
    def active(self):
        """Whether any control changes the logits."""
        return (self.repetition_penalty != 1.0 or self.no_repeat_ngram_size > 0
                or (self.min_new_tokens > 0 and bool(self.stop_token_ids)))

    def __call__(self, scores, token_ids, index, prompt_mask):
        """Processed ``scores [rows, vocab]`` (float32) for position ``index``
        of ``token_ids [rows, length]`` (positions before ``index`` filled);
        ``prompt_mask [rows, length]`` is true on each row's prompt."""
        scores = ops.cast(scores, "float32")
        vocabulary_size = scores.shape[-1]
        positions = ops.arange(ops.shape(token_ids)[1], dtype="int32")[None, :]
        if self.repetition_penalty != 1.0:
            seen = _token_presence(token_ids, positions < index, vocabulary_size)
            penalized = ops.where(scores < 0, scores * self.repetition_penalty,
                                  scores / self.repetition_penalty)
            scores = ops.where(seen, penalized, scores)
        if self.no_repeat_ngram_size > 0:
            scores = self._ban_repeated_ngrams(scores, token_ids, index, positions)
        if self.min_new_tokens > 0 and self.stop_token_ids:
            prompt_lengths = ops.sum(ops.cast(prompt_mask, "int32"), axis=1)
            early = (index - prompt_lengths) < self.min_new_tokens
            stops = ops.convert_to_tensor(self.stop_token_ids, "int32")
            is_stop = ops.any(ops.arange(vocabulary_size, dtype="int32")[None, :]
                              == stops[:, None], axis=0)
            scores = ops.where(ops.logical_and(early[:, None], is_stop[None, :]),
                               float("-inf"), scores)
        return scores

    def _ban_repeated_ngrams(self, scores, token_ids, index, positions):
        n = self.no_repeat_ngram_size
        rows = ops.shape(token_ids)[0]
        token_ids = ops.cast(token_ids, "int32")
        # An n-gram starting at j matches when its first n - 1 tokens equal
        # the last n - 1 before `index`; its last token is then banned.
        match = positions <= index - n
        for k in range(n - 1):
            column = ops.maximum(index - (n - 1) + k, 0)
            prefix = ops.squeeze(ops.slice(token_ids, (0, column), (rows, 1)), axis=1)
            match = ops.logical_and(match, _shift_left(token_ids, k) == prefix[:, None])
        banned = _token_presence(_shift_left(token_ids, n - 1), match, scores.shape[-1])
        return ops.where(banned, float("-inf"), scores)

    def get_config(self):
        return {"repetition_penalty": self.repetition_penalty,
                "no_repeat_ngram_size": self.no_repeat_ngram_size,
                "min_new_tokens": self.min_new_tokens,
                "stop_token_ids": self.stop_token_ids}
