"""Strings → masked language model inputs and targets, for every family."""

import math

import keras
import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.models.preprocessor import Preprocessor
from kzoo.preprocessing.masked_lm_mask_generator import MaskedLMMaskGenerator
from kzoo.preprocessing.preprocessing_layer import check_type, preprocessing_function


@kzoo_export("kzoo.models.MaskedLMPreprocessor")
class MaskedLMPreprocessor(Preprocessor):
    """Tokenizes, packs and masks text for masked language modeling.

    ``x`` is a batch of strings, or a tuple of batches (sentence pairs). The
    segments are tokenized, truncated to fit ``sequence_length`` and packed
    by the shared ``MultiSegmentPacker`` between the family's special tokens
    (BERT: ``[CLS] a [SEP] (b [SEP])``), then the shared
    ``MaskedLMMaskGenerator`` picks about ``mask_selection_rate`` of the real
    tokens (never the special tokens nor the padding) and corrupts them:
    ``mask_token_rate`` of them become the mask token, ``random_token_rate``
    a random token, the rest stay as they are.

    Family subclasses set ``tokenizer_cls`` and the special-token names
    ``start_token``, ``sep_token``, ``end_token`` and ``mask_token``.

    Args:
        tokenizer: the family's tokenizer.
        sequence_length: int. Length of the packed sequence. Default 128.
        truncate: str. ``"round_robin"`` or ``"waterfall"`` (see
            ``MultiSegmentPacker``).
        mask_selection_rate: float. Fraction of the real tokens predicted.
            Defaults to 0.15.
        mask_selection_length: int or None. Width of the ``mask_*`` tensors,
            the most tokens predicted per sequence. None (the default) uses
            ``ceil(mask_selection_rate * sequence_length)``, which is never
            exceeded, so no selected token is dropped and every batch has the
            same shape.
        mask_token_rate: float. Share of the selected tokens replaced by the
            mask token. Defaults to 0.8.
        random_token_rate: float. Share replaced by a random token. Defaults
            to 0.1.
        seed: int or None. Seed of the masking stream: the same seed gives
            the same masks for the same calls, eagerly and in ``tf.data``.
        whole_word_masking: bool. Select whole words (all the pieces of a
            chosen word together, ``mask_selection_rate`` of the words; see
            ``MaskedLMMaskGenerator(whole_word=True)``), with the word
            boundaries of the tokenizer's ``continuation_token_ids()``. A
            word whose pieces do not fit in ``mask_selection_length`` is
            skipped. Defaults to False.

    Call arguments:
        x: a string batch, or a tuple of string batches (one per segment).
        y: must be None: the targets are made here.
        sample_weight: must be None: the weights are made here.

    Returns:
        ``(x, y, sample_weight)``: ``x`` is a dict of ``token_ids`` (with
        the corrupted tokens), ``segment_ids``, ``padding_mask`` and
        ``mask_positions``; ``y`` is ``mask_ids`` (the original tokens at
        those positions) and ``sample_weight`` is ``mask_weights`` (1.0 for
        a real prediction, 0.0 for padding of the ``mask_*`` tensors).

    ``call`` and ``fill_mask_inputs`` run TensorFlow ops, or without
    TensorFlow their Python implementations (``python_call``,
    ``python_fill_mask_inputs``; see ``kzoo.preprocessing.engine``), on the
    tokenizer's, packer's and masker's own Python paths. On the Python
    engine a tuple is a set of segments and a list one batch of text.
    """

    mask_token = None

    def __init__(
        self,
        tokenizer=None,
        sequence_length=128,
        truncate="round_robin",
        mask_selection_rate=0.15,
        mask_selection_length=None,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        seed=None,
        whole_word_masking=False,
        **kwargs,
    ):
        super().__init__(tokenizer=tokenizer, **kwargs)
        check_type("whole_word_masking", whole_word_masking, bool, "a bool")
        check_type("sequence_length", sequence_length, int, "an int >= 2")
        if sequence_length < 2:
            raise ValueError(
                f"`sequence_length` must be an int >= 2, got {sequence_length!r}."
            )
        if mask_selection_length is not None:
            check_type("mask_selection_length", mask_selection_length, int,
                       "a positive int or None")
            if mask_selection_length < 1:
                raise ValueError(
                    "`mask_selection_length` must be a positive int or None, "
                    f"got {mask_selection_length}."
                )
        if seed is not None:
            check_type("seed", seed, int, "an int or None")
        self.sequence_length = sequence_length
        self.truncate = truncate
        self.mask_selection_rate = mask_selection_rate
        self.mask_selection_length = mask_selection_length
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.seed = seed
        self.whole_word_masking = whole_word_masking
        # Built on first call, once the vocabulary is known; built now when it
        # is, so that bad rates are reported at construction.
        self.packer = None
        self.masker = None
        if tokenizer is not None and _has_vocabulary(tokenizer):
            self._build()

    def _build(self):
        self.packer = self.build_packer(self.sequence_length, self.truncate)
        special = (self.packer.start_value, self.packer.sep_value,
                   self.packer.end_value, self.packer.pad_value)
        unselectable = sorted({i for i in special if i is not None})
        width = self.mask_selection_length
        if width is None:
            width = max(1, math.ceil(self.mask_selection_rate * self.sequence_length))
        continuations = ()
        if self.whole_word_masking:
            if not hasattr(self.tokenizer, "continuation_token_ids"):
                raise ValueError(
                    "`whole_word_masking=True` needs a tokenizer that marks the "
                    "pieces continuing a word (a WordPiece tokenizer's "
                    f"`continuation_token_ids()`); {type(self.tokenizer).__name__} "
                    "has none: use whole_word_masking=False.")
            continuations = self.tokenizer.continuation_token_ids()
        self.masker = MaskedLMMaskGenerator(
            vocabulary_size=self.tokenizer.vocabulary_size(),
            mask_token_id=self.special_token_id(self.mask_token),
            mask_selection_rate=self.mask_selection_rate,
            mask_selection_length=width,
            unselectable_token_ids=tuple(unselectable),
            mask_token_rate=self.mask_token_rate,
            random_token_rate=self.random_token_rate,
            seed=self.seed,
            whole_word=self.whole_word_masking,
            continuation_token_ids=continuations,
        )

    def reset_seed(self, seed=None):
        """Restarts the masking stream (from ``seed``, or the layer's own)."""
        if seed is not None:
            self.seed = seed
        if self.masker is not None:
            self.masker.reset_seed(self.seed)

    def _tokenize_segments(self, segments):
        """Tokenizes string batches of the same size in one tokenizer call.

        One call (on the concatenated batches, split afterwards) instead of
        one per segment: half the graph to trace for sentence pairs.
        """
        segments = tuple(segments)
        if len(segments) == 1 or any(s.shape.rank != 1 for s in segments):
            return tuple(self.tokenizer(s) for s in segments)
        sizes = [tf.shape(s)[0] for s in segments]
        tokens = self.tokenizer(tf.concat(segments, axis=0))
        outputs, start = [], 0
        for size in sizes:
            outputs.append(tokens[start:start + size])
            start = start + size
        return tuple(outputs)

    def _pack_and_mask(self, segments):
        """Token id segments (TF ragged, or the Python engine's rows) → the
        masked model inputs.

        Returns:
            ``(x, mask_ids, mask_weights)`` as in ``call``.
        """
        if self.packer is None:
            self._build()
        packed = self.packer(tuple(segments))
        masked = self.masker(packed["token_ids"])
        x = {
            "token_ids": masked["token_ids"],
            "segment_ids": packed["segment_ids"],
            "padding_mask": packed["padding_mask"],
            "mask_positions": masked["mask_positions"],
        }
        return x, masked["mask_ids"], masked["mask_weights"]

    def _check_no_targets(self, y, sample_weight):
        if y is not None or sample_weight is not None:
            raise ValueError(
                f"{type(self).__name__} makes its own targets (the masked "
                "token ids) and weights: pass only text, got "
                + ("`y`" if y is not None else "`sample_weight`") + "."
            )

    def call(self, x, y=None, sample_weight=None):
        self._check_no_targets(y, sample_weight)
        segments = tuple(x) if isinstance(x, (tuple, list)) else (x,)
        x, mask_ids, mask_weights = self._pack_and_mask(
            self._tokenize_segments(segments)
        )
        return keras.utils.pack_x_y_sample_weight(x, mask_ids, mask_weights)

    def _python_tokenize_segments(self, segments):
        """The Python engine's ``_tokenize_segments``: text batches (lists
        of str) of the same size in one tokenizer call; each batch's ids a
        list of 1-D arrays (an empty batch a ``[0, 0]`` array)."""
        segments = tuple(segments)
        if len(segments) > 1 and all(isinstance(s, list) for s in segments):
            tokens = self.tokenizer([text for s in segments for text in s])
            outputs, start = [], 0
            for s in segments:
                outputs.append(tokens[start:start + len(s)])
                start += len(s)
        else:
            outputs = [self.tokenizer(s) for s in segments]
        return tuple(_python_batch(t, self.tokenizer) for t in outputs)

    def python_call(self, x, y=None, sample_weight=None):
        self._check_no_targets(y, sample_weight)
        segments = x if isinstance(x, tuple) else (x,)
        x, mask_ids, mask_weights = self._pack_and_mask(
            self._python_tokenize_segments(segments)
        )
        return keras.utils.pack_x_y_sample_weight(x, mask_ids, mask_weights)

    # --- fill-mask (inference) ---
    @preprocessing_function
    def fill_mask_inputs(self, x):
        """Text with the mask token written in it → inputs that predict it.

        No random masking: ``"the [MASK] sat"`` is tokenized with the mask
        token kept as one token (special tokens written in the text are
        special, as in Hugging Face's tokenizers), packed as in ``call``, and
        ``mask_positions`` points at each mask token.

        Args:
            x: a string batch, or a tuple of string batches (segments).

        Returns:
            ``(x, mask_weights)``: the model inputs (``mask_positions``
            ``[batch, width]`` with ``width`` the masker's
            ``mask_selection_length``, 0 past a row's masks) and float
            ``mask_weights`` (1.0 at a real mask). A text with more masks than
            ``width`` is an error (pass a larger ``mask_selection_length``).
        """
        if self.packer is None:
            self._build()
        segments = tuple(x) if isinstance(x, (tuple, list)) else (x,)
        tokenizer = self.fill_mask_tokenizer()
        packed = self.packer(tuple(tokenizer(s) for s in segments))
        token_ids = tf.convert_to_tensor(packed["token_ids"])
        width = self.masker.mask_selection_length
        is_mask = tf.equal(token_ids, tf.cast(self.masker.mask_token_id, token_ids.dtype))
        counts = tf.reduce_sum(tf.cast(is_mask, tf.int32), axis=1)
        check = tf.debugging.assert_less_equal(
            counts, width, message=(
                f"A text holds more {self.mask_token} tokens than the "
                f"{width} this preprocessor predicts per sequence: pass a "
                "larger `mask_selection_length`."))
        with tf.control_dependencies([check]):
            # Mask positions first, in order (a stable sort), then the rest.
            order = tf.argsort(tf.cast(~is_mask, tf.int32), axis=1, stable=True)
        order = tf.pad(order, [[0, 0], [0, tf.maximum(width - tf.shape(order)[1], 0)]])
        weights = tf.sequence_mask(counts, width, dtype=tf.float32)
        positions = order[:, :width] * tf.cast(weights, order.dtype)
        x = {
            "token_ids": token_ids,
            "segment_ids": packed["segment_ids"],
            "padding_mask": packed["padding_mask"],
            "mask_positions": tf.cast(positions, token_ids.dtype),
        }
        return x, weights

    def python_fill_mask_inputs(self, x):
        if self.packer is None:
            self._build()
        segments = x if isinstance(x, tuple) else (x,)
        tokenizer = self.fill_mask_tokenizer()
        packed = self.packer(tuple(_python_batch(tokenizer(s), tokenizer)
                                   for s in segments))
        token_ids = packed["token_ids"]
        width = self.masker.mask_selection_length
        is_mask = token_ids == self.masker.mask_token_id
        counts = is_mask.sum(axis=1, dtype=np.int32)
        if counts.size and counts.max() > width:
            raise ValueError(
                f"A text holds more {self.mask_token} tokens than the "
                f"{width} this preprocessor predicts per sequence: pass a "
                "larger `mask_selection_length`.")
        # Mask positions first, in order (a stable sort), then the rest.
        order = np.argsort(~is_mask, axis=1, kind="stable").astype(np.int32)
        order = np.pad(order, [[0, 0], [0, max(width - order.shape[1], 0)]])
        weights = (np.arange(width) < counts[:, None]).astype(np.float32)
        positions = order[:, :width] * weights.astype(np.int32)
        x = {
            "token_ids": token_ids,
            "segment_ids": packed["segment_ids"],
            "padding_mask": packed["padding_mask"],
            "mask_positions": positions.astype(token_ids.dtype),
        }
        return x, weights

    @preprocessing_function
    def fill_mask_tokens(self, token_ids):
        """Token ids → their strings (the vocabulary's entries)."""
        vocabulary = tf.constant(self.tokenizer.get_vocabulary())
        return tf.gather(vocabulary, tf.cast(token_ids, tf.int32))

    def python_fill_mask_tokens(self, token_ids):
        vocabulary = np.asarray(self.tokenizer.get_vocabulary(), dtype=object)
        return vocabulary[np.asarray(token_ids).astype(np.int32)]

    def fill_mask_tokenizer(self):
        """The tokenizer ``fill_mask_inputs`` uses: the preprocessor's,
        reading special tokens written in the text (a copy with
        ``special_tokens_in_strings=True`` when it does not already)."""
        if getattr(self.tokenizer, "special_tokens_in_strings", True):
            return self.tokenizer
        tokenizer = getattr(self, "_special_in_text", None)
        if tokenizer is None:
            config = dict(self.tokenizer.get_config(), special_tokens_in_strings=True)
            config["vocabulary"] = self.tokenizer.get_vocabulary()
            tokenizer = type(self.tokenizer).from_config(config)
            # Kept out of Keras' layer tracking: not a weight-bearing sublayer.
            object.__setattr__(self, "_special_in_text", tokenizer)
        return tokenizer

    def get_config(self):
        config = super().get_config()
        config.update(
            sequence_length=self.sequence_length,
            truncate=self.truncate,
            mask_selection_rate=self.mask_selection_rate,
            mask_selection_length=self.mask_selection_length,
            mask_token_rate=self.mask_token_rate,
            random_token_rate=self.random_token_rate,
            seed=self.seed,
            whole_word_masking=self.whole_word_masking,
        )
        return config


def _python_batch(tokens, tokenizer):
    """A Python-engine tokenizer output as the packer reads it: an empty
    batch (``[]``, which alone reads as one empty sequence) as a ``[0, 0]``
    array."""
    if isinstance(tokens, list) and not tokens:
        return np.zeros([0, 0], tokenizer.compute_dtype)
    return tokens


def _has_vocabulary(tokenizer):
    try:
        return bool(tokenizer.get_vocabulary())
    except (ValueError, TypeError, AttributeError):
        return False
