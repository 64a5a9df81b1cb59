"""A left-to-right language model on any decoder backbone, with generation."""

import inspect

import keras
import numpy as np
from keras import ops

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


class _Generation(keras.Model):
    """The whole generation loop as one model call, compiled by Keras.

    ``predict_on_batch`` compiles ``call`` the way Keras compiles any
    prediction (``jax.jit`` on JAX; ``tf.function``, with XLA when the task's
    ``jit_compile`` is on, on TensorFlow; eager on torch), once per input
    shape: the prompt buffer ``[batch, max_length]`` and the prefill's
    ``[batch, prefill]`` (a power of two, see ``_prefill_length``) are the
    only shapes, so new prompts of the same batch size, ``max_length`` and
    prefill reuse the compiled loop. The sampler and stop tokens are fixed
    per instance.
    """

    def __init__(self, task, sampler, stop_token_ids, pad_token_id):
        super().__init__(name="generation")
        self.task = task
        # Plain attribute: a sampler is not a layer.
        object.__setattr__(self, "sampler", sampler)
        self.stop_token_ids = tuple(stop_token_ids)
        self.pad_token_id = pad_token_id
        self.jit_compile = task.jit_compile
        self.built = True

    def call(self, inputs):
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
            rows = ops.shape(token_ids)[0]  # batch * num_beams for beam search
            token = ops.slice(token_ids, (0, index - 1), (rows, 1))
            hidden, cache = backbone.call_with_cache(token, cache, index - 1,
                                                     **in_place)
            logits = head(hidden)[:, 0, :]
            if self.task.vocabulary_mask is not None:
                logits = self.task.vocabulary_mask(logits)
            return logits, cache

        return self.sampler(next_fn, token_ids, cache, index, prompt_mask,
                            inputs["noise"], stop_token_ids=self.stop_token_ids,
                            pad_token_id=self.pad_token_id)


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
        object.__setattr__(self, "_generations", {})
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
        object.__setattr__(self, "_generations", {})  # jit_compile may change

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
    def _generation(self, sampler, stop_token_ids, pad_token_id):
        key = (type(sampler), tuple(sorted(sampler.get_config().items())),
               tuple(stop_token_ids), pad_token_id, self.jit_compile)
        if key not in self._generations:
            self._generations[key] = _Generation(
                self, sampler, stop_token_ids, pad_token_id)
        return self._generations[key]

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

    def generate_token_ids(self, prompt_token_ids, max_length=None, sampler="greedy",
                           stop_token_ids="auto"):
        """Continues prompts given as token ids.

        Args:
            prompt_token_ids: a list of lists of ints (each non-empty), one
                prompt per row; rows may have different lengths.
            max_length: int. Total length (prompt + new tokens) of the
                longest row. Defaults to the preprocessor's
                ``sequence_length`` (the backbone's context without one); at
                most the backbone's ``max_sequence_length``.
            sampler: a ``kzoo.samplers.Sampler`` or a name (``"greedy"``,
                ``"random"``, ``"top_k"``, ``"top_p"``, ``"beam"``).
            stop_token_ids: ints that end a row (the stop token is kept);
                ``"auto"`` (the tokenizer's end token) or None.

        Returns:
            A list of lists of ints: each prompt and its continuation, up to
            and including its first generated stop token.
        """
        sampler = samplers_lib.get(sampler)
        stop_token_ids = self._stop_token_ids(stop_token_ids)
        rows = [[int(t) for t in row] for row in prompt_token_ids]
        context = self.backbone.max_sequence_length
        if not rows or any(not row for row in rows):
            raise ValueError("Every prompt needs at least one token (text prompts "
                             "start with the start token).")
        longest = max(len(row) for row in rows)
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
        pad = getattr(getattr(self.preprocessor, "tokenizer", None), "pad_token_id",
                      None) or 0
        token_ids = np.full((len(rows), max_length), pad, dtype="int32")
        prompt_mask = np.zeros((len(rows), max_length), dtype="int32")
        for i, row in enumerate(rows):
            token_ids[i, :len(row)] = row
            prompt_mask[i, :len(row)] = 1
        noise = ops.convert_to_numpy(sampler.make_noise((len(rows), max_length)))
        generation = self._generation(sampler, stop_token_ids, pad)
        prefill = _prefill_length(min(len(row) for row in rows), max_length)
        output = generation.predict_on_batch(
            {"token_ids": token_ids, "prompt_mask": prompt_mask,
             "noise": noise.astype("float32"),
             "prefill_ids": token_ids[:, :prefill]})
        output = np.asarray(output)
        results = []
        for i, row in enumerate(rows):
            new = output[i, len(row):].tolist()
            for j, t in enumerate(new):
                if t in stop_token_ids:
                    new = new[:j + 1]
                    break
            results.append(row + new)
        return results

    def generate(self, prompts, max_length=None, sampler="greedy",
                 stop_token_ids="auto"):
        """Continues text prompts.

        A prompt starts with the start token (an empty prompt is the start
        token alone); one longer than the context is cut from the left with
        a warning. See ``generate_token_ids`` for the arguments.

        Args:
            prompts: a str or a list of str (different lengths are fine).

        Returns:
            The prompt and its continuation (without start and stop tokens):
            a str for a str, else a list of str.
        """
        if self.preprocessor is None:
            raise ValueError("Generating from text needs the task's preprocessor "
                             "(use `generate_token_ids` for token ids).")
        rows = self.preprocessor.generate_preprocess(
            prompts, self.backbone.max_sequence_length)
        outputs = self.generate_token_ids(rows, max_length=max_length,
                                          sampler=sampler,
                                          stop_token_ids=stop_token_ids)
        texts = self.preprocessor.generate_postprocess(outputs)
        return texts[0] if isinstance(prompts, str) else texts

