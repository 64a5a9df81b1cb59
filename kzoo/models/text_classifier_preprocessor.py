"""Strings (one text or a pair) → packed token ids, for every family."""

import keras

from kzoo.api_export import kzoo_export
from kzoo.models.preprocessor import Preprocessor


@kzoo_export("kzoo.models.TextClassifierPreprocessor")
class TextClassifierPreprocessor(Preprocessor):
    """Tokenizes one or more text segments and packs them into one sequence.

    ``x`` is a batch of strings (single-text tasks) or a tuple of batches
    (pairs: premise and hypothesis, question and passage). Each segment is
    tokenized, the segments are truncated to fit ``sequence_length`` (see
    ``truncate``) and packed by the shared ``MultiSegmentPacker`` between the
    family's special tokens: BERT's ``[CLS] a [SEP] b [SEP]`` or GPT-1's
    ``<start> a <delim> b <extract>``. Text longer than ``sequence_length``
    is cut, never an error; an empty string packs to the special tokens only.

    Family subclasses set ``tokenizer_cls`` and the special-token names
    ``start_token``, ``sep_token`` and ``end_token``.

    Args:
        tokenizer: the family's tokenizer.
        sequence_length: int. Length of the packed sequence. Default 128.
        truncate: str. ``"round_robin"`` (trim the longest segment a token at
            a time) or ``"waterfall"`` (trim the last segments first).
        num_segments: int. How many texts make one example (1, or 2 for
            pairs). Calls may pass either; the exported serving signature
            takes this many string inputs.

    Call arguments:
        x: a string batch, or a tuple of string batches (one per segment).
        y: optional labels, passed through.
        sample_weight: optional weights, passed through.

    Returns:
        ``(x, y, sample_weight)`` packed by ``keras.utils.pack_x_y_sample_weight``,
        where ``x`` is a dict of ``token_ids``, ``segment_ids``, ``padding_mask``.
    """

    def __init__(self, tokenizer=None, sequence_length=128,
                 truncate="round_robin", num_segments=1, **kwargs):
        super().__init__(tokenizer=tokenizer, **kwargs)
        if not isinstance(sequence_length, int) or sequence_length < 2:
            raise ValueError(
                f"`sequence_length` must be an int >= 2, got {sequence_length!r}."
            )
        if num_segments not in (1, 2, 3):
            raise ValueError(f"`num_segments` must be 1, 2 or 3, got {num_segments!r}.")
        self.sequence_length = sequence_length
        self.truncate = truncate
        self.num_segments = num_segments
        self.packer = None  # built on first call, once the vocabulary is known

    def call(self, x, y=None, sample_weight=None):
        if self.packer is None:
            self.packer = self.build_packer(self.sequence_length, self.truncate)
        segments = tuple(x) if isinstance(x, (tuple, list)) else (x,)
        packed = self.packer(tuple(self.tokenizer(s) for s in segments))
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)

    def python_call(self, x, y=None, sample_weight=None):
        # Python values: a pair is a tuple; a list is one batch of texts.
        return self.call(x if isinstance(x, tuple) else (x,), y, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(sequence_length=self.sequence_length, truncate=self.truncate,
                      num_segments=self.num_segments)
        return config
