"""Base class of the token samplers: the generation loop over a KV cache."""

import keras
from keras import ops

from kzoo import ops as kzoo_ops
from kzoo.api_export import kzoo_export


def _column(x, index):
    """``x[:, index]`` for an int or a (possibly traced) scalar ``index``:
    plain indexing, one view where ``index`` is an int (the loop's position
    on eager PyTorch, see ``kzoo.ops.while_loop``), a dynamic slice of
    static shape where it is traced."""
    return x[:, index]


def _is_stop(tokens, stop_token_ids):
    if not stop_token_ids:
        return ops.zeros_like(tokens, dtype="bool")
    stops = ops.convert_to_tensor(stop_token_ids, dtype=tokens.dtype)
    return ops.any(ops.equal(tokens[:, None], stops[None, :]), axis=-1)


@kzoo_export("kzoo.samplers.Sampler")
class Sampler:
    """Picks each next token of a generated sequence, one cached step at a time.

    A sampler runs the generation loop. The token buffer ``[batch,
    max_length]`` holds each row's prompt (``prompt_mask`` true there),
    right-padded; from the shortest prompt's end to ``max_length``, each
    iteration calls ``next_fn`` for the logits of position ``index`` (one
    step over the key/value cache), keeps the prompt token where a row's
    prompt is longer, otherwise picks a token with ``choose``, and stops early
    when every row has produced a stop token. The loop is
    ``kzoo.ops.while_loop`` (``keras.ops.while_loop``; on eager PyTorch its
    position ``index`` is a Python int) with fixed shapes, so it compiles
    once per ``[batch, max_length]``.

    Subclasses implement ``choose(logits, noise)`` (greedy, sampling) or
    replace the loop (beam search). Sampling samplers draw by inverse
    transform: ``noise`` is one uniform number per row and position, made
    outside the compiled loop by ``make_noise`` from the sampler's seed.

    Args:
        temperature: float > 0. Logits are divided by it before choosing.
            Defaults to 1.0.
        seed: int or None. Seed of the noise stream (sampling samplers).
    """

    #: whether ``choose`` uses the noise (greedy and beam search do not)
    uses_noise = False

    def __init__(self, temperature=1.0, seed=None):
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
                or temperature <= 0:
            raise ValueError(
                f"`temperature` must be a number > 0, got {temperature!r}.")
        self.temperature = float(temperature)
        self.seed = seed
        self._seed_generator = None

    def make_noise(self, shape):
        """Uniform noise in (0, 1] of ``shape`` for the sampling choices."""
        if not self.uses_noise:
            return ops.ones(shape, dtype="float32")
        if self._seed_generator is None:
            self._seed_generator = keras.random.SeedGenerator(self.seed)
        return 1.0 - keras.random.uniform(shape, seed=self._seed_generator)

    def scale_logits(self, logits):
        """``logits`` in float32 divided by the temperature (not divided at
        a temperature of 1, where the quotient is the logits themselves: a
        pass over the whole vocabulary saved at every step)."""
        logits = ops.cast(logits, "float32")
        if self.temperature == 1.0:
            return logits
        return logits / self.temperature

    def choose(self, logits, noise):
        """Next token ids ``[batch]`` from float32 ``logits [batch, vocab]``
        (already divided by the temperature) and ``noise [batch]`` (None
        unless ``uses_noise``)."""
        raise NotImplementedError

    def __call__(self, next_fn, token_ids, cache, index, prompt_mask, noise,
                 stop_token_ids=(), pad_token_id=0, logits_processor=None,
                 row_ends=None, stop_strings=None):
        """Runs the loop.

        Args:
            next_fn: ``(token_ids, cache, index) -> (logits [batch, vocab],
                cache)``: the logits for position ``index``, reading the token
                at ``index - 1``.
            token_ids: int ``[batch, max_length]``, prompts right-padded.
            cache: the model's key/value cache after the prompt (any nest).
            index: scalar int, the first position to fill (the shortest
                prompt's length).
            prompt_mask: bool ``[batch, max_length]``, true on prompt tokens.
            noise: float ``[batch, max_length]`` from ``make_noise``.
            stop_token_ids: tuple of ints that end a row.
            pad_token_id: int written after a row's stop token.
            logits_processor: a ``LogitsProcessor`` applied to the float32
                logits before the temperature, or None.
            row_ends: int ``[batch]`` or None: a row ends after position
                ``row_ends - 1`` (padding after it); None: at ``max_length``.
            stop_strings: a ``kzoo.samplers.stop_strings.StopStrings`` or
                None: a row whose text reaches one ends.

        Returns:
            int ``[batch, max_length]``: prompts and generated tokens.
        """
        max_length = ops.shape(token_ids)[1]
        done = ops.zeros_like(_column(prompt_mask, 0), dtype="bool")
        controls = dict(stop_token_ids=stop_token_ids, pad_token_id=pad_token_id,
                        logits_processor=logits_processor, row_ends=row_ends,
                        stop_strings=stop_strings)

        can_stop = bool(stop_token_ids) or row_ends is not None or (
            stop_strings is not None)

        def cond(token_ids, cache, index, done):
            if not can_stop:  # `done` stays all false
                return index < max_length
            return ops.logical_and(index < max_length,
                                   ops.logical_not(ops.all(done)))

        def body(token_ids, cache, index, done):
            return self.step(next_fn, token_ids, cache, index, done, prompt_mask,
                             noise, **controls)

        token_ids, _, _, _ = kzoo_ops.while_loop(
            cond, body, (token_ids, cache, index, done))
        return token_ids

    def step(self, next_fn, token_ids, cache, index, done, prompt_mask, noise,
             stop_token_ids=(), pad_token_id=0, logits_processor=None,
             row_ends=None, stop_strings=None):
        """One iteration of the loop: fills position ``index``.

        The compiled loop runs it inside ``kzoo.ops.while_loop``; streaming runs
        the same step from the host, one call per token. ``done`` (bool
        ``[batch]``) marks the rows that have stopped; the other arguments
        are ``__call__``'s.

        Returns:
            ``(token_ids, cache, index + 1, done)``.
        """
        logits, cache = next_fn(token_ids, cache, index)
        if logits_processor is not None:
            logits = logits_processor(logits, token_ids, index, prompt_mask)
        logits = self.scale_logits(logits)
        # The noise column only where `choose` reads it.
        noise_column = _column(noise, index) if self.uses_noise else None
        chosen = ops.cast(self.choose(logits, noise_column), token_ids.dtype)
        in_prompt = _column(prompt_mask, index)
        if stop_token_ids or row_ends is not None or stop_strings is not None:
            # (Without any of them no row stops: `done` stays all false.)
            chosen = ops.where(done, ops.cast(pad_token_id, chosen.dtype), chosen)
        chosen = ops.where(in_prompt, _column(token_ids, index), chosen)
        if stop_token_ids:
            done = ops.logical_or(done, ops.logical_and(
                ops.logical_not(in_prompt), _is_stop(chosen, stop_token_ids)))
        if row_ends is not None:
            done = ops.logical_or(done, index + 1 >= row_ends)
        token_ids = ops.slice_update(token_ids, (0, index), chosen[:, None])
        if stop_strings is not None:
            done = ops.logical_or(done, ops.logical_and(
                ops.logical_not(in_prompt), stop_strings(token_ids, index)))
        return token_ids, cache, index + 1, done

    def get_config(self):
        return {"temperature": self.temperature, "seed": self.seed}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
