"""Beam search: keep the ``num_beams`` most likely sequences."""

from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.samplers.sampler import Sampler, _column, _is_stop

_NEVER = -1e9  # log-probability of an excluded continuation (finite: no NaN)


def _rows_of(x, rows, width):
    """Rows ``rows [batch, k]`` (indices within each batch row's ``width``
    entries) of ``x [batch * width, ...]``, as ``[batch * k, ...]``."""
    batch = ops.shape(rows)[0]
    offsets = ops.arange(batch, dtype="int32")[:, None] * width
    return ops.take(x, ops.reshape(ops.cast(rows, "int32") + offsets, (-1,)), axis=0)


@kzoo_export("kzoo.samplers.BeamSampler")
class BeamSampler(Sampler):
    """Beam search as Hugging Face's ``generate(num_beams=...)`` runs it.

    Each step extends every live beam by every token and takes the
    ``2 * num_beams`` best candidates by total log-probability (more with
    several stop tokens: ``max(2, 1 + stop ids) * num_beams``). The best
    ``num_beams`` that did not stop stay live (the cache rows follow them);
    those among the best ``num_beams`` that stopped (a stop token, or the
    row's last position) join the row's finished hypotheses with the score
    ``sum_logprobs / new_length ** length_penalty`` (``new_length`` counts
    the new tokens, the stop token included), and the best ``num_beams``
    finished ones are kept. The result is the best finished hypothesis
    (``num_return_sequences``: the best N, best first).

    ``early_stopping`` decides when a row is done, as transformers'
    ``BeamSearchScorer`` does: ``True``, as soon as it has ``num_beams``
    finished hypotheses; ``False``, also when the best live beam, scored at
    the current length, cannot beat the worst finished one; ``"never"``, as
    ``False`` but with a positive ``length_penalty`` the live beam is scored
    at the longest length it could reach. Inside a row's prompt the prompt
    token is forced. With ``num_beams=1`` and no stop tokens this is greedy
    decoding.

    Args:
        num_beams: int >= 1.
        temperature: float > 0, divides the logits before the log-softmax.
        length_penalty: float. Exponent of the length that divides a
            finished hypothesis' score: above 0 favours longer sequences,
            below 0 shorter ones; 0 ranks by total log-probability.
        early_stopping: ``True``, ``False`` or ``"never"`` (see above).

    Example:
    >>> kzoo.samplers.BeamSampler(num_beams=4).get_config()
    {'temperature': 1.0, 'num_beams': 4, 'length_penalty': 1.0, 'early_stopping': False}
    """

    def __init__(self, num_beams=5, temperature=1.0, length_penalty=1.0,
                 early_stopping=False):
        if isinstance(num_beams, bool) or not isinstance(num_beams, int) or num_beams < 1:
            raise ValueError(f"`num_beams` must be an int >= 1, got {num_beams!r}.")
        if isinstance(length_penalty, bool) or not isinstance(length_penalty, (int, float)):
            raise ValueError(f"`length_penalty` must be a number, got {length_penalty!r}.")
        if not (isinstance(early_stopping, bool) or early_stopping == "never"):
            raise ValueError(f"`early_stopping` must be True, False or 'never', got "
                             f"{early_stopping!r}.")
        super().__init__(temperature=temperature)
        self.num_beams = num_beams
        self.length_penalty = float(length_penalty)
        self.early_stopping = early_stopping

    def _length_divisor(self, length):
        length = ops.cast(ops.maximum(length, 1), "float32")
        if self.length_penalty == 1.0:
            return length
        return length ** self.length_penalty

    def __call__(self, next_fn, token_ids, cache, index, prompt_mask, noise,
                 stop_token_ids=(), pad_token_id=0, logits_processor=None,
                 row_ends=None, stop_strings=None, num_return_sequences=1):
        beams = self.num_beams
        if num_return_sequences > beams:
            raise ValueError(f"`num_return_sequences`={num_return_sequences} is more "
                             f"than `num_beams`={beams}: beam search returns at most "
                             "num_beams sequences per prompt.")
        keep = max(2, 1 + len(stop_token_ids)) * beams
        shape = ops.shape(token_ids)
        batch, max_length = shape[0], shape[1]
        prompt_lengths = ops.sum(ops.cast(prompt_mask, "int32"), axis=1)
        row_ends = (ops.full((batch,), max_length, "int32") if row_ends is None
                    else ops.cast(row_ends, "int32"))
        early_stopping = self.early_stopping

        def expand(x):
            return ops.repeat(x, beams, axis=0)

        running = expand(token_ids)
        beam_prompt_mask = expand(prompt_mask)
        cache = tuple(expand(c) for c in cache)
        # Only the first beam of a row is live at first: the others are
        # copies that would otherwise repeat its candidates.
        first = ops.cast(ops.arange(beams) == 0, "float32")
        running_scores = ops.tile(((1.0 - first) * _NEVER)[None], (batch, 1))
        finished = running
        finished_scores = ops.full((batch, beams), _NEVER, "float32")
        is_finished = ops.zeros((batch, beams), "bool")
        improvable = ops.ones((batch, 1), "bool")
        top_beams = (ops.arange(keep) < beams)[None, :]
        state = (running, cache, index, finished, finished_scores, is_finished,
                 running_scores, improvable, ops.convert_to_tensor(True))

        def cond(running, cache, index, finished, finished_scores, is_finished,
                 running_scores, improvable, going):
            return ops.logical_and(index < max_length, going)

        def body(running, cache, index, finished, finished_scores, is_finished,
                 running_scores, improvable, going):
            logits, cache = next_fn(running, cache, index)
            log_probs = ops.log_softmax(self.scale_logits(logits), axis=-1)
            if logits_processor is not None:
                log_probs = logits_processor(log_probs, running, index, beam_prompt_mask)
            vocabulary = ops.shape(log_probs)[-1]
            in_prompt = _column(beam_prompt_mask, index)
            forced = _column(running, index)
            one_hot = ops.arange(vocabulary, dtype=forced.dtype)[None, :] == forced[:, None]
            log_probs = ops.where(in_prompt[:, None], ops.where(one_hot, 0.0, _NEVER),
                                  log_probs)
            candidates = ops.reshape(
                running_scores[:, :, None] + ops.reshape(log_probs, (batch, beams, -1)),
                (batch, -1))
            top_scores, top = ops.top_k(candidates, keep)
            top = ops.cast(top, "int32")
            source = top // vocabulary  # [batch, keep], a beam of the row
            chosen = ops.cast(ops.reshape(top % vocabulary, (-1, 1)), running.dtype)
            source_rows = ops.reshape(
                source + ops.arange(batch, dtype="int32")[:, None] * beams, (-1,))
            grown = ops.slice_update(ops.take(running, source_rows, axis=0),
                                     (0, index), chosen)
            row_in_prompt = index < prompt_lengths
            stopped = ops.reshape(_is_stop(ops.reshape(chosen, (-1,)), stop_token_ids),
                                  (batch, keep))
            stopped = ops.logical_or(stopped, (index + 1 >= row_ends)[:, None])
            if stop_strings is not None:
                stopped = ops.logical_or(stopped, ops.reshape(
                    stop_strings(grown, index), (batch, keep)))
            stopped = ops.logical_and(stopped, ops.logical_not(row_in_prompt)[:, None])
            # Live beams: the best that did not stop.
            live_scores = top_scores + ops.cast(stopped, "float32") * _NEVER
            running_scores, live = ops.top_k(live_scores, beams)
            running = _rows_of(grown, live, keep)
            cache_rows = ops.take(source_rows, ops.reshape(
                ops.cast(live, "int32")
                + ops.arange(batch, dtype="int32")[:, None] * keep, (-1,)))
            cache = tuple(ops.take(c, cache_rows, axis=0) for c in cache)
            # Finished hypotheses: the best `beams` that stopped, length-scored.
            new_length = index + 1 - prompt_lengths
            scores = top_scores / self._length_divisor(new_length)[:, None]
            just_finished = ops.logical_and(stopped, top_beams)
            excluded = ops.logical_or(ops.logical_not(just_finished),
                                      ops.logical_not(improvable))
            if early_stopping is True:
                excluded = ops.logical_or(
                    excluded, ops.all(is_finished, axis=-1, keepdims=True))
            scores = scores + ops.cast(excluded, "float32") * _NEVER
            merged_scores = ops.concatenate([finished_scores, scores], axis=1)
            merged = ops.concatenate([ops.reshape(finished, (batch, beams, -1)),
                                      ops.reshape(grown, (batch, keep, -1))], axis=1)
            merged_finished = ops.concatenate([is_finished, just_finished], axis=1)
            finished_scores, best = ops.top_k(merged_scores, beams)
            finished = _rows_of(ops.reshape(merged, (batch * (beams + keep), -1)),
                                best, beams + keep)
            is_finished = ops.take_along_axis(merged_finished, ops.cast(best, "int32"),
                                              axis=1)
            # Can a live beam still beat the worst finished hypothesis?
            if early_stopping == "never" and self.length_penalty > 0:
                reachable = row_ends - prompt_lengths
            else:
                reachable = new_length
            best_live = running_scores[:, :1] / self._length_divisor(reachable)[:, None]
            worst = ops.where(is_finished,
                              ops.min(finished_scores, axis=1, keepdims=True), _NEVER)
            improvable = ops.logical_and(
                improvable, ops.any(best_live > worst, axis=-1, keepdims=True))
            going = ops.logical_and(ops.any(improvable),
                                    ops.logical_not(ops.all(stopped)))
            if early_stopping is True:
                going = ops.logical_and(going, ops.logical_not(ops.all(is_finished)))
            return (running, cache, index + 1, finished, finished_scores, is_finished,
                    running_scores, improvable, going)

        finished = ops.while_loop(cond, body, state)[3]
        finished = ops.reshape(finished, (batch, beams, -1))
        finished = ops.slice(finished, (0, 0, 0), (batch, num_return_sequences, max_length))
        return ops.reshape(finished, (-1, max_length))

    def choose(self, logits, noise):
        return ops.argmax(logits, axis=-1)

    def get_config(self):
        return {"temperature": self.temperature, "num_beams": self.num_beams,
                "length_penalty": self.length_penalty,
                "early_stopping": self.early_stopping}
