"""Strings → next-token prediction inputs, targets and weights; prompts for generation."""

import warnings

import keras
import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.models.preprocessor import Preprocessor
from kzoo.preprocessing.multi_segment_packer import MultiSegmentPacker
from kzoo.preprocessing.preprocessing_layer import check_type


@kzoo_export("kzoo.models.CausalLMPreprocessor")
class CausalLMPreprocessor(Preprocessor):
    """Tokenizes text for a left-to-right language model.

    Training (``call``): each string is tokenized, framed by the start and
    end tokens (``<|endoftext|> text <|endoftext|>`` for GPT-2), cut to
    ``sequence_length + 1`` tokens and right-padded by the shared
    ``MultiSegmentPacker``. The model input is every token but the last, the
    target every token but the first (the next token at each position), and
    the sample weight is 1 where the target is a real token, 0 on padding,
    so padding never counts in the loss.

    Generation (``generate_preprocess`` / ``generate_postprocess``): prompts
    become lists of ids starting with the start token (an empty prompt is
    the start token alone); generated ids become text again.

    Family subclasses set ``tokenizer_cls``; the tokenizer provides
    ``start_token_id``, ``end_token_id`` and ``pad_token_id``.

    Args:
        tokenizer: the family's tokenizer.
        sequence_length: int >= 2. Length of the model input. Default 1024.
        add_start_token: bool. Put the start token first. Default True.
        add_end_token: bool. Put the end token last (training). Default True.

    Call arguments:
        x: a string or a batch of strings.
        y: must be None (the targets are made here).
        sample_weight: must be None.

    Returns:
        ``(x, y, sample_weight)``: ``x`` is a dict of ``token_ids`` and
        ``padding_mask`` ``[batch, sequence_length]``, ``y`` the next-token ids
        and ``sample_weight`` the float mask of real targets.

    ``call`` runs TensorFlow ops, or without TensorFlow ``python_call`` (see
    ``kzoo.preprocessing.engine``); ``generate_preprocess`` and
    ``generate_postprocess`` run on whichever engine the tokenizer runs.
    """

    def __init__(self, tokenizer=None, sequence_length=1024, add_start_token=True,
                 add_end_token=True, **kwargs):
        super().__init__(tokenizer=tokenizer, **kwargs)
        check_type("sequence_length", sequence_length, int, "an int >= 2")
        if sequence_length < 2:
            raise ValueError(f"`sequence_length` must be an int >= 2, got "
                             f"{sequence_length!r}.")
        check_type("add_start_token", add_start_token, bool, "a bool")
        check_type("add_end_token", add_end_token, bool, "a bool")
        self.sequence_length = sequence_length
        self.add_start_token = add_start_token
        self.add_end_token = add_end_token
        self.packer = None

    def _special_ids(self):
        start = self.tokenizer.start_token_id
        end = self.tokenizer.end_token_id
        pad = self.tokenizer.pad_token_id
        return start, end, 0 if pad is None else pad

    def _check_no_targets(self, y, sample_weight):
        if y is not None or sample_weight is not None:
            raise ValueError(
                f"{type(self).__name__} makes its own targets (the next token at "
                "each position) and weights: pass only text, got "
                + ("`y`" if y is not None else "`sample_weight`") + ".")

    def _build_packer(self):
        if self.packer is None:
            start, end, pad = self._special_ids()
            self.packer = MultiSegmentPacker(
                sequence_length=self.sequence_length + 1,
                start_value=start if self.add_start_token else None,
                end_value=end if self.add_end_token else None,
                pad_value=pad)
        return self.packer

    def call(self, x, y=None, sample_weight=None):
        self._check_no_targets(y, sample_weight)
        packer = self._build_packer()
        scalar = x.shape.rank == 0
        if scalar:
            x = x[None]
        packed = packer(self.tokenizer(x))
        ids, mask = packed["token_ids"], packed["padding_mask"]
        inputs = {"token_ids": ids[:, :-1], "padding_mask": mask[:, :-1]}
        targets, weights = ids[:, 1:], tf.cast(mask[:, 1:], "float32")
        if scalar:
            inputs = {k: v[0] for k, v in inputs.items()}
            targets, weights = targets[0], weights[0]
        return keras.utils.pack_x_y_sample_weight(inputs, targets, weights)

    def python_call(self, x, y=None, sample_weight=None):
        self._check_no_targets(y, sample_weight)
        packer = self._build_packer()
        scalar = isinstance(x, str)
        tokens = self.tokenizer([x] if scalar else x)
        if isinstance(tokens, list) and not tokens:  # an empty batch
            tokens = np.zeros([0, 0], self.tokenizer.compute_dtype)
        packed = packer((tokens,))
        ids, mask = packed["token_ids"], packed["padding_mask"]
        inputs = {"token_ids": ids[:, :-1], "padding_mask": mask[:, :-1]}
        targets, weights = ids[:, 1:], mask[:, 1:].astype("float32")
        if scalar:
            inputs = {k: v[0] for k, v in inputs.items()}
            targets, weights = targets[0], weights[0]
        return keras.utils.pack_x_y_sample_weight(inputs, targets, weights)

    # --- generation (eager, on Python lists) ---
    def generate_preprocess(self, prompts, context_length):
        """Prompts → lists of token ids, the start token first.

        Args:
            prompts: a str or a list of str.
            context_length: int. A prompt longer than this (start token
                included) keeps only its last ``context_length - 1`` tokens,
                with a warning, so that at least one token can be generated.

        Returns:
            A list of lists of ints, one per prompt.
        """
        texts = [prompts] if isinstance(prompts, str) else list(prompts)
        if not texts:
            raise ValueError("`prompts` is empty: pass a string or a list of strings.")
        for text in texts:
            check_type("prompts", text, str, "a str or a list of str")
        start, _, _ = self._special_ids()
        ids = self.tokenizer(texts)  # nested lists (ragged), on either engine
        if not isinstance(ids, list):  # dense: a tokenizer with a sequence_length
            ids = keras.ops.convert_to_numpy(ids).tolist()
        rows = []
        for i, row in enumerate(ids):
            row = [int(t) for t in row]
            if self.add_start_token or not row:
                row = [start] + row
            if len(row) > context_length - 1:
                warnings.warn(
                    f"Prompt {i} has {len(row)} tokens, more than the model's "
                    f"context of {context_length} leaves room for: keeping its last "
                    f"{context_length - 1} tokens.", stacklevel=3)
                row = row[-(context_length - 1):]
            rows.append(row)
        return rows

    def generate_postprocess(self, token_ids):
        """Lists of token ids → strings (start and end tokens dropped)."""
        start, end, _ = self._special_ids()
        drop = {start, end}
        texts = []
        for row in token_ids:
            kept = [t for t in row if t not in drop]
            texts.append(self.tokenizer.detokenize(np.asarray([kept], "int32"))[0]
                         if kept else "")
        return texts

    def token_bytes(self):
        """The bytes of each token id's text (a list, by id), for stop
        strings; needs a byte-level tokenizer."""
        id_bytes = getattr(self.tokenizer, "_python_id_bytes", None)
        if id_bytes is None:
            raise ValueError(f"Stop strings need each token's bytes, which "
                             f"{type(self.tokenizer).__name__} does not give: use "
                             "stop_token_ids.")
        return id_bytes()

    def generate_postprocess_stream(self, token_ids):
        """Token ids arriving one at a time → text pieces, yielded as soon as
        they are whole characters.

        The tokens since the last piece are decoded together; while their
        text ends in U+FFFD (the bytes of a character split across byte-level
        tokens, not all there yet) they are held back, as transformers'
        ``TextStreamer`` does. Start and stop tokens give no text. The
        pieces joined equal ``generate_postprocess`` of all the ids.

        Args:
            token_ids: an iterable of ints.

        Returns:
            An iterator of str.
        """
        pending = []
        for token in token_ids:
            pending.append(int(token))
            text = self.generate_postprocess([pending])[0]
            if text and not text.endswith("\ufffd"):
                yield text
                pending = []
        if pending:
            text = self.generate_postprocess([pending])[0]
            if text:
                yield text

    # --- generation inside a TensorFlow graph (the exported signature) ---
    def generate_preprocess_graph(self, texts, max_length):
        """A ``[batch]`` string tensor → ``(token_ids, prompt_mask)``, each
        int32 ``[batch, max_length]``: the start token and the text's tokens,
        right-padded, the longest prompts keeping their last
        ``max_length - 1`` tokens. TensorFlow ops (for a SavedModel)."""
        start, _, pad = self._special_ids()
        ids = tf.cast(self.tokenizer(texts), tf.int32)
        starts = tf.fill([tf.shape(texts)[0], 1], tf.constant(start, tf.int32))
        ids = tf.concat([tf.RaggedTensor.from_tensor(starts), ids], axis=1)
        keep = tf.minimum(ids.row_lengths(), max_length - 1)
        ids = tf.RaggedTensor.from_row_lengths(
            tf.gather(ids.flat_values, tf.ragged.range(
                ids.row_limits() - keep, ids.row_limits()).flat_values), keep)
        token_ids = ids.to_tensor(default_value=pad, shape=[None, max_length])
        prompt_mask = tf.cast(tf.sequence_mask(keep, max_length), tf.int32)
        return token_ids, prompt_mask

    def generate_postprocess_graph(self, token_ids, prompt_mask, stop_token_ids):
        """Generated ``[batch, max_length]`` ids → ``[batch]`` strings: the
        prompt and its continuation up to (without) the first stop token, the
        start token dropped. TensorFlow ops (for a SavedModel)."""
        token_ids = tf.convert_to_tensor(token_ids)
        prompt_mask = tf.cast(prompt_mask, tf.bool)
        length = tf.shape(token_ids)[1]
        positions = tf.range(length)[None, :]
        stops = tf.zeros_like(prompt_mask)
        for stop in stop_token_ids:
            stops |= tf.equal(token_ids, tf.cast(stop, token_ids.dtype))
        stops &= ~prompt_mask
        first_stop = tf.reduce_min(tf.where(stops, positions, length), axis=1)
        keep = (positions >= 1) & (positions < first_stop[:, None])
        return self.tokenizer.detokenize(tf.ragged.boolean_mask(token_ids, keep))

    def get_config(self):
        config = super().get_config()
        config.update(sequence_length=self.sequence_length,
                      add_start_token=self.add_start_token,
                      add_end_token=self.add_end_token)
        return config
