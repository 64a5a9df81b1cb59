"""Beam search: keep the ``num_beams`` most likely sequences."""

from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.samplers.sampler import Sampler, _column, _is_stop

_NEVER = -1e9  # log-probability of an excluded continuation (finite: no NaN)


@kzoo_export("kzoo.samplers.BeamSampler")
class BeamSampler(Sampler):
    """Beam search: keeps the ``num_beams`` sequences of highest total
    log-probability and returns the best one per row.

    Each step extends every beam by every token, scores the candidates by
    the sum of their tokens' log-probabilities and keeps the best
    ``num_beams`` (the cache rows follow their beams). A beam that emits a
    stop token is finished: it keeps its score and continues with padding.
    Scores are not length-normalised (a shorter finished beam competes with
    its score as is). Inside a row's prompt the prompt token is forced.
    With ``num_beams=1`` this is greedy decoding; with enough beams to hold
    every sequence it is exhaustive search.

    Args:
        num_beams: int >= 1.
        temperature: float > 0, divides the logits before the log-softmax.

    Example:
    >>> kzoo.samplers.BeamSampler(num_beams=4).get_config()
    {'temperature': 1.0, 'num_beams': 4}
    """

    def __init__(self, num_beams=5, temperature=1.0):
        if isinstance(num_beams, bool) or not isinstance(num_beams, int) or num_beams < 1:
            raise ValueError(f"`num_beams` must be an int >= 1, got {num_beams!r}.")
        super().__init__(temperature=temperature)
        self.num_beams = num_beams

    def __call__(self, next_fn, token_ids, cache, index, prompt_mask, noise,
                 stop_token_ids=(), pad_token_id=0):
        beams = self.num_beams
        shape = ops.shape(token_ids)
        batch, max_length = shape[0], shape[1]

        def expand(x):
            return ops.repeat(x, beams, axis=0)

        token_ids = expand(token_ids)
        prompt_mask = expand(prompt_mask)
        cache = tuple(expand(c) for c in cache)
        # Only the first beam of a row is live at first: the others are
        # copies that would otherwise repeat its candidates.
        first = ops.cast(ops.arange(beams) == 0, "float32")
        scores = ops.reshape(ops.tile(((1.0 - first) * _NEVER)[None], (batch, 1)), (-1,))
        done = ops.zeros_like(_column(prompt_mask, 0), dtype="bool")
        row_offset = ops.repeat(ops.arange(batch, dtype="int32") * beams, beams)

        def cond(token_ids, cache, index, done, scores):
            return ops.logical_and(index < max_length, ops.logical_not(ops.all(done)))

        def body(token_ids, cache, index, done, scores):
            logits, cache = next_fn(token_ids, cache, index)
            log_probs = ops.log_softmax(self.scale_logits(logits),
                                        axis=-1)
            vocabulary = ops.shape(log_probs)[-1]
            in_prompt = _column(prompt_mask, index)
            forced = ops.where(in_prompt, _column(token_ids, index),
                               ops.cast(pad_token_id, token_ids.dtype))
            one_hot = ops.arange(vocabulary, dtype=forced.dtype)[None, :] == forced[:, None]
            forced_log_probs = ops.where(one_hot, 0.0, _NEVER)
            log_probs = ops.where(ops.logical_or(in_prompt, done)[:, None],
                                  forced_log_probs, log_probs)
            candidates = ops.reshape(scores[:, None] + log_probs, (batch, -1))
            scores, best = ops.top_k(candidates, beams)
            source = ops.cast(best // vocabulary, "int32")
            chosen = ops.cast(ops.reshape(best % vocabulary, (-1,)), token_ids.dtype)
            source = ops.reshape(source, (-1,)) + row_offset
            token_ids = ops.take(token_ids, source, axis=0)
            cache = tuple(ops.take(c, source, axis=0) for c in cache)
            done = ops.take(done, source, axis=0)
            done = ops.logical_or(done, ops.logical_and(
                ops.logical_not(in_prompt), _is_stop(chosen, stop_token_ids)))
            token_ids = ops.slice_update(token_ids, (0, index), chosen[:, None])
            return token_ids, cache, index + 1, done, ops.reshape(scores, (-1,))

        token_ids, _, _, _, scores = ops.while_loop(
            cond, body, (token_ids, cache, index, done, scores))
        best = ops.argmax(ops.reshape(scores, (batch, beams)), axis=-1)
        rows = ops.arange(batch, dtype="int32") * beams + ops.cast(best, "int32")
        return ops.take(token_ids, rows, axis=0)

    def choose(self, logits, noise):
        return ops.argmax(logits, axis=-1)

    def get_config(self):
        return {"temperature": self.temperature, "num_beams": self.num_beams}
