"""A left-to-right language model on any decoder backbone, with generation."""

import inspect
import warnings

import keras
import numpy as np
from keras import ops

from kzoo import ops as kzoo_ops
from kzoo import samplers as samplers_lib
from kzoo.api_export import kzoo_export
from kzoo.layers.tied_embedding_logits import TiedEmbeddingLogits
from kzoo.models.task import Task, tokenizer_vocabulary_mask
from kzoo.losses import SparseLogitsCrossEntropy
from kzoo.ops.positions import last_real_position


def _prefill_length(shortest_prompt, max_length):
    """Positions the prefill pass covers: the shortest prompt's length
    rounded up to a power of two (at least 16), at most ``max_length``.

    The loop starts after the shortest prompt, so the prefill must cover it;
    rounding keeps the compiled shapes few (one per power of two) while a
    short prompt in a long buffer is not run through the network at every
    empty position (GPT-2's 1024 positions for a 10-token prompt).
    """
    return min(max_length, max(16, 1 << (max(shortest_prompt, 1) - 1).bit_length()))


def _in_place_keywords(backbone):
    """``{"cache_in_place": True}`` where the backbone's ``call_with_cache``
    takes it; a backbone without it generates from a copied cache."""
    parameters = inspect.signature(backbone.call_with_cache).parameters
    takes = "cache_in_place" in parameters or any(
        p.kind is p.VAR_KEYWORD for p in parameters.values())
    return {"cache_in_place": True} if takes else {}


class _Loops:
    """A task's compiled generation loops by their settings (``by_key``).

    A plain object, not a dict: Keras' saving walks a model's dicts and
    lists for state, and each loop refers back to its task (a dict of them
    made ``load_weights`` after ``generate`` recurse without end).
    """

    def __init__(self):
        self.by_key = {}


class _Generation(keras.Model):
    """The whole generation loop as one model call, compiled by Keras.

    ``predict_on_batch`` compiles ``call`` the way Keras compiles any
    prediction (``jax.jit`` on JAX; ``tf.function``, with XLA when the task's
    ``jit_compile`` is on, on TensorFlow; eager on torch), once per input
    shape: the prompt buffer ``[batch, max_length]`` and the prefill's
    ``[batch, prefill]`` (a power of two, see ``_prefill_length``) are the
    only shapes, so new prompts of the same batch size, ``max_length`` and
    prefill reuse the compiled loop. The sampler, stop tokens, logit
    controls and number of returned beams are fixed per instance.

    ``stream`` runs the same prefill and the sampler's same ``step`` with
    the loop on the host, yielding each new token as it is chosen.
    """

    def __init__(self, task, sampler, stop_token_ids, pad_token_id,
                 logits_processor=None, num_return_sequences=1, stop_strings=None):
        super().__init__(name="generation")
        self.task = task
        # Plain attributes: a sampler and a processor are not layers.
        object.__setattr__(self, "sampler", sampler)
        active = logits_processor is not None and logits_processor.active
        object.__setattr__(self, "logits_processor", logits_processor if active else None)
        self.stop_token_ids = tuple(stop_token_ids)
        self.pad_token_id = pad_token_id
        self.num_return_sequences = num_return_sequences
        object.__setattr__(self, "stop_strings", stop_strings)
        self.jit_compile = task.jit_compile
        self.built = True

    def _start(self, inputs):
        """Prefill: ``(token_ids, prompt_mask, cache, index, next_fn)``."""
        backbone, head = self.task.backbone, self.task.lm_head
        token_ids = ops.cast(inputs["token_ids"], "int32")
        prompt_mask = ops.cast(inputs["prompt_mask"], "bool")
        shape = ops.shape(token_ids)
        batch, max_length = shape[0], shape[1]
        # Prefill: the keys and values of the first positions in one pass
        # (`prefill_ids`, the buffer's first columns; else the whole buffer).
        # The loop rewrites every position from the shortest prompt's last
        # token on before any query reads it.
        prefill = inputs.get("prefill_ids")
        prefill = token_ids if prefill is None else ops.cast(prefill, "int32")
        # The loop owns the cache (made here, never returned): each step may
        # write its keys and values into it in place.
        in_place = _in_place_keywords(backbone)
        _, cache = backbone.call_with_cache(
            prefill, backbone.build_cache(batch, max_length), 0, **in_place)
        index = ops.min(ops.sum(ops.cast(prompt_mask, "int32"), axis=1))

        def next_fn(token_ids, cache, index):
            # The column as one index (a view where `index` is an int, see
            # kzoo.ops.while_loop); `[:, None]` keeps its static shape.
            token = token_ids[:, index - 1][:, None]
            hidden, cache = backbone.call_with_cache(token, cache, index - 1,
                                                     **in_place)
            hidden = hidden[:, 0]
            # The head's own `call` where its input is in its compute dtype
            # already: Keras' per-call work (casts, scopes) would do nothing.
            logits = (head.call(hidden)
                      if keras.backend.standardize_dtype(hidden.dtype)
                      == head.compute_dtype else head(hidden))
            if self.task.vocabulary_mask is not None:
                logits = self.task.vocabulary_mask(logits)
            return logits, cache

        return token_ids, prompt_mask, cache, index, next_fn

    def _controls(self, inputs):
        """The sampler's keyword arguments; a control at its default is left
        out, so that it adds nothing to the step."""
        controls = {"stop_token_ids": self.stop_token_ids,
                    "pad_token_id": self.pad_token_id}
        if self.logits_processor is not None:
            controls["logits_processor"] = self.logits_processor
        if inputs.get("row_ends") is not None:
            controls["row_ends"] = ops.cast(inputs["row_ends"], "int32")
        if self.stop_strings is not None:
            controls["stop_strings"] = self.stop_strings
        if self.num_return_sequences != 1:
            controls["num_return_sequences"] = self.num_return_sequences
        return controls

    def call(self, inputs):
        # The loop reads every weight at every step: packed where the
        # backend packs (kzoo.ops.packed_weights).
        with kzoo_ops.packed_weights():
            token_ids, prompt_mask, cache, index, next_fn = self._start(inputs)
            return self.sampler(next_fn, token_ids, cache, index, prompt_mask,
                                inputs["noise"], **self._controls(inputs))

    def stream(self, inputs):
        """Yields each new token id (ints) of a one-row ``inputs``, running
        the sampler's ``step`` once per token from the host."""
        inputs = {k: ops.convert_to_tensor(v) for k, v in inputs.items()}
        # Packed weights (see `call`) around each step, not across the
        # yields: the caller's code between tokens runs outside the scope.
        with kzoo_ops.packed_weights():
            token_ids, prompt_mask, cache, index, next_fn = self._start(inputs)
        index = int(ops.convert_to_numpy(index))
        max_length = int(token_ids.shape[1])
        done = ops.zeros((1,), "bool")
        controls = self._controls(inputs)
        while index < max_length:
            with kzoo_ops.packed_weights():
                token_ids, cache, index, done = self.sampler.step(
                    next_fn, token_ids, cache, index, done, prompt_mask,
                    inputs["noise"], **controls)
            yield int(ops.convert_to_numpy(token_ids)[0, index - 1])
            if bool(ops.convert_to_numpy(done)[0]):
                return


@kzoo_export("kzoo.models.CausalLM")
class CausalLM(Task):
    """Backbone → tied output projection → next-token logits; ``generate``.

    The model takes the backbone's inputs (``token_ids``, ``padding_mask``)
    and returns ``[batch, length, vocabulary_size]`` logits, position ``i``
    scoring the token at ``i + 1``; the output projection is the backbone's
    ``token_embedding`` matrix (tied). With a ``CausalLMPreprocessor``,
    ``fit`` takes raw strings. ``compile()`` defaults to Adam at 3e-4,
    cross-entropy on logits averaged over the real (non-padding) targets, and
    their accuracy.

    ``generate`` continues prompts: the prompt tokens fill a buffer of
    ``max_length`` positions, one pass over its first positions (the
    shortest prompt, rounded up to a power of two) fills the backbone's
    key/value cache, then a ``kzoo.samplers`` sampler adds one token per
    step, each step one position through the network over the cache. The
    whole loop is compiled once per ``[batch, max_length]`` and prefill
    length (see ``jit_compile``).

    Only ids the tokenizer can turn back into text are ever predicted: when
    the backbone has more token ids than the preprocessor's tokenizer has
    tokens (an embedding table padded to a multiple of 64), the logits of
    the extra ids are set to -1e9 (``kzoo.layers.VocabularyMask``, with a
    warning at construction), so no sampler can choose them; a backbone
    with fewer ids than the tokenizer is an error.

    The backbone needs a ``token_embedding``, ``max_sequence_length``,
    ``build_cache(batch, length)`` and ``call_with_cache(token_ids, cache,
    index)`` (``GPTBackbone`` has them); where ``call_with_cache`` also takes
    ``cache_in_place``, generation lets it write its cache in place.

    Args:
        backbone: the decoder backbone.
        preprocessor: a ``CausalLMPreprocessor`` or None (``fit`` then takes
            token tensors; ``generate`` needs the preprocessor for text).
        **kwargs: ``keras.Model`` arguments (``name``, ...).
    """

    def __init__(self, backbone, preprocessor=None, **kwargs):
        if not hasattr(backbone, "token_embedding"):
            raise ValueError(
                "A causal LM ties its output to the backbone's token embedding; "
                f"{type(backbone).__name__} has no `token_embedding`.")
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.lm_head = TiedEmbeddingLogits(
            backbone.token_embedding, dtype=backbone.dtype_policy, name="lm_head")
        self.vocabulary_mask = tokenizer_vocabulary_mask(
            backbone, preprocessor, type(self).__name__)
        inputs = backbone.input
        outputs = self.lm_head(backbone(inputs)["sequence_output"])
        if self.vocabulary_mask is not None:
            outputs = self.vocabulary_mask(outputs)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        object.__setattr__(self, "_generations", _Loops())
        self.compile()

    def compile(self, optimizer="auto", loss="auto", metrics="auto",
                weighted_metrics="auto", **kwargs):
        """Adam(3e-4), masked next-token cross-entropy on logits, weighted accuracy."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(3e-4)
        if loss == "auto":
            loss = SparseLogitsCrossEntropy(reduction="mean_with_sample_weight")
        if metrics == "auto":
            metrics = None
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)
        object.__setattr__(self, "_generations", _Loops())  # jit_compile may change

    # --- serving ---
    def serving_endpoints(self, sequence_length=None):
        """The SavedModel signature ``kzoo.export.saved_model`` writes.

        ``serving_default`` takes ``token_ids`` and ``padding_mask`` (int32
        ``[batch, length]``, right-padded; ``length`` fixed to
        ``sequence_length`` when given) and returns ``next_token_logits``
        (``[batch, vocabulary_size]``, the logits after each row's last real
        token) and ``logits`` (``[batch, length, vocabulary_size]``).
        With a preprocessor, ``generate`` takes ``text`` (strings) and returns
        ``generated`` (strings): greedy ``generate`` with ``max_length`` the
        preprocessor's ``sequence_length`` (or ``sequence_length``), stopping
        at the end token; prompts too long for it keep their last tokens.
        """
        shape = (None, sequence_length)

        def serve(token_ids, padding_mask):
            x = {"token_ids": token_ids, "padding_mask": padding_mask}
            return self.onnx_outputs(self(x, training=False), x)

        signature = [keras.InputSpec(shape=shape, dtype="int32", name="token_ids"),
                     keras.InputSpec(shape=shape, dtype="int32", name="padding_mask")]
        endpoints = {"serving_default": (serve, signature)}
        if self.preprocessor is not None:
            endpoints["generate"] = self._generate_endpoint(sequence_length)
        return endpoints

    def onnx_outputs(self, outputs, inputs=None):
        """``next_token_logits`` (``[batch, vocabulary_size]``, after each
        row's last real token of ``inputs["padding_mask"]``, right-padded)
        and ``logits`` (``[batch, length, vocabulary_size]``)."""
        next_token = last_real_position(outputs, inputs["padding_mask"])
        return {"next_token_logits": next_token, "logits": outputs}

    def _generate_endpoint(self, max_length=None):
        """Greedy generation, strings in and strings out (``text`` →
        ``generated``): the same compiled loop as ``generate``, with
        tokenization, the prompt buffer of ``max_length`` (default: the
        preprocessor's ``sequence_length``) and detokenization in the graph."""
        preprocessor = self.preprocessor
        max_length = min(max_length or preprocessor.sequence_length,
                         self.backbone.max_sequence_length)
        stop_token_ids = self._stop_token_ids("auto")
        pad = preprocessor.tokenizer.pad_token_id or 0
        generation = self._generation(samplers_lib.GreedySampler(), stop_token_ids, pad)

        def generate(text):
            token_ids, prompt_mask = preprocessor.generate_preprocess_graph(
                text, max_length)
            noise = ops.ones(ops.shape(token_ids), dtype="float32")
            output = generation({"token_ids": token_ids, "prompt_mask": prompt_mask,
                                 "noise": noise})
            return {"generated": preprocessor.generate_postprocess_graph(
                output, prompt_mask, stop_token_ids)}

        return generate, [keras.InputSpec(shape=(None,), dtype="string", name="text")]

    # --- generation ---
    def _generation(self, sampler, stop_token_ids, pad_token_id,
                    logits_processor=None, num_return_sequences=1, stop_strings=()):
        processor = (tuple(sorted(logits_processor.get_config().items()))
                     if logits_processor is not None and logits_processor.active else None)
        key = (type(sampler), tuple(sorted(sampler.get_config().items())),
               tuple(stop_token_ids), pad_token_id, self.jit_compile, processor,
               num_return_sequences, tuple(stop_strings))
        loops = self._generations.by_key
        if key not in loops:
            checker = None
            if stop_strings:
                checker = samplers_lib.StopStrings(
                    stop_strings, self.preprocessor.token_bytes())
            loops[key] = _Generation(
                self, sampler, stop_token_ids, pad_token_id, logits_processor,
                num_return_sequences, checker)
        return loops[key]

    def _stop_token_ids(self, stop_token_ids):
        if isinstance(stop_token_ids, str) and stop_token_ids == "auto":
            end = getattr(getattr(self.preprocessor, "tokenizer", None),
                          "end_token_id", None)
            return () if end is None else (int(end),)
        if stop_token_ids is None:
            return ()
        ids = tuple(stop_token_ids)
        for t in ids:
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
                raise ValueError(f"`stop_token_ids` must be ints, got {t!r}.")
        return tuple(int(t) for t in ids)

    def _plan(self, prompt_token_ids, max_length, sampler, stop_token_ids,
              max_new_tokens, min_new_tokens, repetition_penalty,
              no_repeat_ngram_size, num_return_sequences, streaming, stop_strings=None):
        """Checks the arguments (before anything is allocated) and builds the
        generation and its inputs: ``(generation, inputs, rows, ends,
        stop_token_ids)``, ``rows`` and ``ends`` (each row's last position
        + 1) one per returned sequence."""
        sampler = samplers_lib.get(sampler)
        stop_token_ids = self._stop_token_ids(stop_token_ids)
        stop_strings = self._stop_strings(stop_strings)
        processor = samplers_lib.LogitsProcessor(
            repetition_penalty=repetition_penalty,
            no_repeat_ngram_size=no_repeat_ngram_size,
            min_new_tokens=min_new_tokens, stop_token_ids=stop_token_ids)
        if isinstance(num_return_sequences, bool) or not isinstance(
                num_return_sequences, int) or num_return_sequences < 1:
            raise ValueError(f"`num_return_sequences` must be an int >= 1, got "
                             f"{num_return_sequences!r}.")
        beams = getattr(sampler, "num_beams", None)
        if beams is not None and num_return_sequences > beams:
            raise ValueError(
                f"`num_return_sequences`={num_return_sequences} is more than the "
                f"sampler's num_beams={beams}: beam search returns at most num_beams "
                f"sequences per prompt; pass num_beams >= {num_return_sequences}.")
        if beams is None and not sampler.uses_noise and num_return_sequences > 1:
            raise ValueError(
                "Greedy decoding returns one sequence per prompt: "
                f"`num_return_sequences`={num_return_sequences} needs a sampling "
                "sampler (random, top_k, top_p) or beam search.")
        rows = [[int(t) for t in row] for row in prompt_token_ids]
        context = self.backbone.max_sequence_length
        if not rows or any(not row for row in rows):
            raise ValueError("Every prompt needs at least one token (text prompts "
                             "start with the start token).")
        if streaming and (len(rows) != 1 or num_return_sequences != 1
                          or beams is not None):
            raise ValueError(
                "Streaming generates one sequence of one prompt with a greedy or "
                f"sampling sampler (got {len(rows)} prompts, num_return_sequences="
                f"{num_return_sequences}, {type(sampler).__name__}): pass one "
                "prompt, or generate without a streamer.")
        longest = max(len(row) for row in rows)
        if max_new_tokens is not None:
            if isinstance(max_new_tokens, bool) or not isinstance(
                    max_new_tokens, int) or max_new_tokens < 1:
                raise ValueError(f"`max_new_tokens` must be an int >= 1, got "
                                 f"{max_new_tokens!r}.")
            if max_length is not None:
                warnings.warn(
                    f"Both `max_new_tokens` (={max_new_tokens}) and `max_length` "
                    f"(={max_length}) are set: `max_new_tokens` takes precedence, "
                    "as in transformers.", stacklevel=3)
            max_length = longest + max_new_tokens
            if max_length > context:
                raise ValueError(
                    f"The longest prompt ({longest} tokens) and `max_new_tokens`="
                    f"{max_new_tokens} need {max_length} positions, more than the "
                    f"model's context (max_sequence_length={context}): pass "
                    f"max_new_tokens <= {context - longest}.")
        if max_length is None:
            default = getattr(self.preprocessor, "sequence_length", context)
            max_length = min(context, max(default, longest + 1))
        if isinstance(max_length, bool) or not isinstance(max_length, int):
            raise ValueError(f"`max_length` must be an int, got {max_length!r}.")
        if max_length > context:
            raise ValueError(
                f"`max_length`={max_length} is longer than the model's context "
                f"(max_sequence_length={context}): pass max_length <= {context}.")
        if max_length < longest:
            raise ValueError(
                f"`max_length`={max_length} is shorter than the longest prompt "
                f"({longest} tokens): max_length counts the prompt and the new "
                f"tokens, so pass max_length > {longest}.")
        vocabulary_size = self.backbone.token_embedding.input_dim
        if any(t < 0 or t >= vocabulary_size for row in rows for t in row):
            raise ValueError(f"Prompt token ids must be in [0, {vocabulary_size}).")
        if beams is None and num_return_sequences > 1:  # sampling: each prompt N times
            rows = [row for row in rows for _ in range(num_return_sequences)]
        ends = [max_length if max_new_tokens is None else len(row) + max_new_tokens
                for row in rows]
        pad = getattr(getattr(self.preprocessor, "tokenizer", None), "pad_token_id",
                      None) or 0
        token_ids = np.full((len(rows), max_length), pad, dtype="int32")
        prompt_mask = np.zeros((len(rows), max_length), dtype="int32")
        for i, row in enumerate(rows):
            token_ids[i, :len(row)] = row
            prompt_mask[i, :len(row)] = 1
        noise = ops.convert_to_numpy(sampler.make_noise((len(rows), max_length)))
        generation = self._generation(
            sampler, stop_token_ids, pad, processor,
            num_return_sequences if beams is not None else 1, stop_strings)
        prefill = _prefill_length(min(len(row) for row in rows), max_length)
        inputs = {"token_ids": token_ids, "prompt_mask": prompt_mask,
                  "noise": noise.astype("float32"),
                  "prefill_ids": token_ids[:, :prefill]}
        if any(end != max_length for end in ends):
            inputs["row_ends"] = np.asarray(ends, "int32")
        if beams is not None and num_return_sequences > 1:  # N beams per prompt
            rows = [row for row in rows for _ in range(num_return_sequences)]
            ends = [end for end in ends for _ in range(num_return_sequences)]
        return generation, inputs, rows, ends, stop_token_ids

    def _stop_strings(self, stop_strings):
        if stop_strings is None:
            return ()
        strings = (stop_strings,) if isinstance(stop_strings, str) else tuple(stop_strings)
        for s in strings:
            if not isinstance(s, str) or not s:
                raise ValueError(f"`stop_strings` must be non-empty strs, got {s!r}.")
        if strings and (self.preprocessor is None
                        or not hasattr(self.preprocessor, "token_bytes")):
            raise ValueError("`stop_strings` needs the task's preprocessor (its "
                             "tokenizer's text of each token).")
        return strings

    def generate_token_ids(self, prompt_token_ids, max_length=None, sampler="greedy",
                           stop_token_ids="auto", *, max_new_tokens=None,
                           min_new_tokens=0, repetition_penalty=1.0,
                           no_repeat_ngram_size=0, num_return_sequences=1,
                           stop_strings=None, streamer=None):
        """Continues prompts given as token ids.

        The controls follow Hugging Face's ``generate`` (same names, same
        meaning, the same tokens from the same model) and run inside the
        compiled loop; left at their defaults they add nothing to it.

        Args:
            prompt_token_ids: a list of lists of ints (each non-empty), one
                prompt per row; rows may have different lengths.
            max_length: int. Total length (prompt + new tokens) of the
                longest row. Defaults to the preprocessor's
                ``sequence_length`` (the backbone's context without one); at
                most the backbone's ``max_sequence_length``.
            sampler: a ``kzoo.samplers.Sampler`` or a name (``"greedy"``,
                ``"random"``, ``"top_k"``, ``"top_p"``, ``"beam"``); beam
                search's ``length_penalty`` and ``early_stopping`` are
                ``BeamSampler`` arguments.
            stop_token_ids: ints that end a row (the stop token is kept);
                ``"auto"`` (the tokenizer's end token) or None.
            max_new_tokens: int >= 1 or None. New tokens per row (each row
                may stop earlier); takes precedence over ``max_length``
                (with a warning when both are given, as in transformers).
            min_new_tokens: int >= 0. The stop tokens cannot be chosen before
                a row has this many new tokens.
            repetition_penalty: float > 0. Above 1 discourages every token
                already in the row (prompt included): its logit is divided
                by the penalty where positive, multiplied where negative.
            no_repeat_ngram_size: int >= 0. When > 0, no n-gram of this size
                occurs twice in a row (prompt included).
            num_return_sequences: int >= 1. Sequences per prompt: with a
                sampling sampler each prompt is sampled that many times; with
                beam search the best that many beams (at most ``num_beams``),
                best first. Greedy decoding returns one.
            stop_strings: a str or strs. A row ends when its text reaches one
                (the token that completes it is kept, so the text ends with
                it or runs a few characters past it), decided as transformers'
                ``StopStringCriteria`` does. Needs the preprocessor.
            streamer: an object with ``put(token_ids)`` and ``end()``
                (transformers' streamer protocol, e.g. its ``TextStreamer``),
                for one prompt and a greedy or sampling sampler: ``put``
                receives the prompt's ids (``[1, length]``), then each new
                token (``[1]``) as it is chosen, and ``end()`` is called once
                at the end. The loop then runs from the host, one step per
                token, and returns the same tokens.

        Returns:
            A list of lists of ints, ``num_return_sequences`` per prompt (in
            prompt order): each prompt and its continuation, up to and
            including its first generated stop token.
        """
        generation, inputs, rows, ends, stop_token_ids = self._plan(
            prompt_token_ids, max_length, sampler, stop_token_ids, max_new_tokens,
            min_new_tokens, repetition_penalty, no_repeat_ngram_size,
            num_return_sequences, streaming=streamer is not None,
            stop_strings=stop_strings)
        if streamer is not None:
            streamer.put(np.asarray(rows, "int64"))
            new = []
            for token in generation.stream(inputs):
                streamer.put(np.asarray([token], "int64"))
                new.append(token)
            streamer.end()
            return [rows[0] + new]
        output = np.asarray(generation.predict_on_batch(inputs))
        results = []
        for i, (row, end) in enumerate(zip(rows, ends)):
            new = output[i, len(row):end].tolist()
            for j, t in enumerate(new):
                if t in stop_token_ids:
                    new = new[:j + 1]
                    break
            if generation.stop_strings is not None:
                stop = generation.stop_strings.first_stop(row + new, len(row))
                if stop is not None:
                    new = new[:stop + 1 - len(row)]
            results.append(row + new)
        return results

    def generate(self, prompts, max_length=None, sampler="greedy",
                 stop_token_ids="auto", **controls):
        """Continues text prompts.

        A prompt starts with the start token (an empty prompt is the start
        token alone); one longer than the context is cut from the left with
        a warning. See ``generate_token_ids`` for the arguments and the
        controls (``max_new_tokens``, ``min_new_tokens``,
        ``repetition_penalty``, ``no_repeat_ngram_size``,
        ``num_return_sequences``, ``stop_strings``, ``streamer``).

        Args:
            prompts: a str or a list of str (different lengths are fine).

        Returns:
            The prompt and its continuation (without start and stop tokens):
            a str for a str, else a list of str; with
            ``num_return_sequences`` N > 1, a list of N str per prompt, one
            flat list in prompt order.
        """
        rows = self._prompt_rows(prompts)
        outputs = self.generate_token_ids(rows, max_length=max_length,
                                          sampler=sampler,
                                          stop_token_ids=stop_token_ids, **controls)
        texts = self.preprocessor.generate_postprocess(outputs)
        single = isinstance(prompts, str) and len(texts) == 1
        return texts[0] if single else texts

    def generate_stream(self, prompt, max_length=None, sampler="greedy",
                        stop_token_ids="auto", **controls):
        """Continues one text prompt, yielding the new text as it is made.

        Each token is chosen by the same step as ``generate`` (the loop runs
        from the host), so ``prompt + "".join(pieces)`` equals
        ``generate(prompt, ...)`` with the same arguments. Pieces are whole
        characters: bytes of a character split across byte-level tokens are
        held back until it is complete.

        Args:
            prompt: a str.
            max_length, sampler, stop_token_ids, **controls: as in
                ``generate_token_ids`` (greedy or sampling; one sequence).

        Returns:
            An iterator of str pieces.

        Example:
        >>> for piece in lm.generate_stream("The cat", max_new_tokens=8):  # doctest: +SKIP
        ...     print(piece, end="", flush=True)
        """
        if not isinstance(prompt, str):
            raise ValueError(f"`generate_stream` takes one prompt (a str), got "
                             f"{type(prompt).__name__}.")
        rows = self._prompt_rows(prompt)
        generation, inputs, _, _, _ = self._plan(
            rows, max_length, sampler, stop_token_ids,
            controls.pop("max_new_tokens", None), controls.pop("min_new_tokens", 0),
            controls.pop("repetition_penalty", 1.0),
            controls.pop("no_repeat_ngram_size", 0),
            controls.pop("num_return_sequences", 1), streaming=True,
            stop_strings=controls.pop("stop_strings", None))
        if controls:
            raise TypeError(f"generate_stream() got unexpected arguments "
                            f"{sorted(controls)}.")
        return self.preprocessor.generate_postprocess_stream(generation.stream(inputs))

    def _prompt_rows(self, prompts):
        if self.preprocessor is None:
            raise ValueError("Generating from text needs the task's preprocessor "
                             "(use `generate_token_ids` for token ids).")
        return self.preprocessor.generate_preprocess(
            prompts, self.backbone.max_sequence_length)
