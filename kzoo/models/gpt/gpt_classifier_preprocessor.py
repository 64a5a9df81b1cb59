"""Strings → GPT fine-tuning inputs: ``<|start|> a <|delim|> b <|extract|>``,
or the text's own tokens (transformers' GPT-2 classifier)."""

import keras
import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.models.gpt.gpt_tokenizer import (
    DELIMITER_TOKEN,
    EXTRACT_TOKEN,
    START_TOKEN,
    GPTTokenizer,
)
from kzoo.models.text_classifier_preprocessor import TextClassifierPreprocessor


@kzoo_export("kzoo.models.GPTClassifierPreprocessor")
class GPTClassifierPreprocessor(TextClassifierPreprocessor):
    """GPT-1's input transformations for classification, entailment and similarity.

    The shared ``MultiSegmentPacker`` lays one text out as ``<|start|> text
    <|extract|>`` (classification) and a pair as ``<|start|> a <|delim|> b
    <|extract|>`` (entailment: premise and hypothesis), right-padded; the
    classifier reads the hidden state of ``<|extract|>``. With
    ``symmetric=True`` (similarity, where the two texts have no order) a pair
    is packed in both orders: the first ``batch`` rows of the output are
    ``a, b`` and the next ``batch`` rows ``b, a``; the classifier adds the
    two extract states. The tokenizer's vocabulary needs the three tokens
    (``kzoo.models.gpt.add_fine_tuning_tokens`` adds them to a pretrained
    model).

    With ``fine_tuning_tokens=False`` the text's own tokens are packed with
    no special token (a pair: the two texts' tokens one after the other),
    right-padded: the input of transformers' ``GPT2ForSequenceClassification``,
    which reads the last real token.

    Args:
        tokenizer: a ``GPTTokenizer`` whose vocabulary has ``<|start|>``,
            ``<|delim|>`` and ``<|extract|>``.
        sequence_length: int. Default 128.
        truncate: ``"round_robin"`` or ``"waterfall"``.
        num_segments: 1 or 2 texts per example (the export signature's inputs).
        symmetric: bool. Pack pairs in both orders (similarity).
        fine_tuning_tokens: bool. Frame the text with ``<|start|>``,
            ``<|delim|>`` and ``<|extract|>`` (GPT-1); False packs the
            text's tokens alone.

    Returns:
        ``(x, y, sample_weight)`` with ``x`` a dict of ``token_ids`` and
        ``padding_mask`` (``[batch, sequence_length]``, or ``[2 * batch,
        sequence_length]`` when symmetric).

    ``call`` runs TensorFlow ops, or without TensorFlow ``python_call`` (see
    ``kzoo.preprocessing.engine``), where a tuple is a set of segments and a
    list one batch of text.
    """

    backbone_cls = GPTBackbone
    tokenizer_cls = GPTTokenizer
    start_token = START_TOKEN
    sep_token = DELIMITER_TOKEN
    end_token = EXTRACT_TOKEN

    def __init__(self, tokenizer=None, sequence_length=128, truncate="round_robin",
                 num_segments=1, symmetric=False, fine_tuning_tokens=True, **kwargs):
        if symmetric and num_segments != 2:
            raise ValueError("`symmetric=True` packs text pairs in both orders: "
                             "it needs `num_segments=2`.")
        super().__init__(tokenizer=tokenizer, sequence_length=sequence_length,
                         truncate=truncate, num_segments=num_segments, **kwargs)
        self.symmetric = symmetric
        self.fine_tuning_tokens = bool(fine_tuning_tokens)
        if not self.fine_tuning_tokens:
            self.start_token = self.sep_token = self.end_token = None

    def _pack(self, segments, concat):
        if self.packer is None:
            self.packer = self.build_packer(self.sequence_length, self.truncate)
        tokens = tuple(self.tokenizer(s) for s in segments)
        packed = self.packer(tokens)
        out = {"token_ids": packed["token_ids"], "padding_mask": packed["padding_mask"]}
        if self.symmetric:
            if len(tokens) != 2:
                raise ValueError("A symmetric GPTClassifierPreprocessor takes "
                                 f"text pairs, got {len(tokens)} segment(s).")
            swapped = self.packer(tokens[::-1])
            out = {k: concat([v, swapped[k]]) for k, v in out.items()}
        return out

    def call(self, x, y=None, sample_weight=None):
        segments = tuple(x) if isinstance(x, (tuple, list)) else (x,)
        out = self._pack(segments, lambda v: tf.concat(v, axis=0))
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)

    def python_call(self, x, y=None, sample_weight=None):
        segments = x if isinstance(x, tuple) else (x,)
        out = self._pack(segments, lambda v: np.concatenate(v, axis=0))
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(symmetric=self.symmetric,
                      fine_tuning_tokens=self.fine_tuning_tokens)
        return config
