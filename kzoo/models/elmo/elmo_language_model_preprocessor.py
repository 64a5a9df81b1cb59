"""Raw sentences → ELMo's biLM inputs and next/previous word targets."""

import keras
import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.preprocessor import Preprocessor
from kzoo.preprocessing.character_ids import BOS_TOKEN, EOS_TOKEN, CharacterIds
from kzoo.tokenizers.word_tokenizer import WordTokenizer


def _check_no_targets(y, sample_weight):
    if y is not None or sample_weight is not None:
        raise ValueError(
            "ElmoLanguageModelPreprocessor makes its targets from the text: "
            "pass sentences only (no `y`, no `sample_weight`)."
        )


@kzoo_export("kzoo.models.ElmoLanguageModelPreprocessor")
class ElmoLanguageModelPreprocessor(Preprocessor):
    """Turns sentences into ``ElmoLanguageModel`` inputs, targets and weights.

    Each sentence is split on whitespace and framed by ``<S>`` and ``</S>``
    (bilm-tf's training data): ``x`` is the ``CharacterIds`` of those tokens
    (``character_ids``, ``padding_mask``); ``y`` holds the word ids the two
    language models predict at each position, ``forward`` (the next token)
    and ``backward`` (the previous one), and ``sample_weight`` marks the
    positions that have such a token. Words out of the ``WordTokenizer``'s
    vocabulary become its ``oov_token``; the characters still see them.

    TensorFlow ops compute it (eagerly or inside ``tf.data``), or, with the
    Python preprocessing engine (see ``kzoo.preprocessing.engine``), numpy:
    the same arrays without TensorFlow.

    Args:
        tokenizer: a ``WordTokenizer`` whose vocabulary holds ``<S>`` and
            ``</S>`` (``compute_word_vocabulary(..., special_tokens=("<UNK>",
            "<S>", "</S>"), oov_token="<UNK>")``), without ``sequence_length``.
        sequence_length: int or None. Tokens per sentence, boundaries
            included (longer sentences lose their last words); None pads to
            the longest in the batch.
        max_word_length: int. Character ids per token. Defaults to 50.
        **kwargs: layer arguments.

    Call arguments:
        x: a batch of sentences (str).
        y, sample_weight: must be None (the targets come from the text).

    Returns:
        ``(x, y, sample_weight)`` as ``keras.utils.pack_x_y_sample_weight``.

    Example:
    >>> tokenizer = kzoo.tokenizers.WordTokenizer(
    ...     vocabulary=["<UNK>", "<S>", "</S>", "the", "bank"], oov_token="<UNK>")
    >>> pre = kzoo.models.ElmoLanguageModelPreprocessor(tokenizer, max_word_length=8)
    >>> x, y, w = pre(["the bank", "a"])
    >>> ops.convert_to_numpy(y["forward"]).tolist()
    [[3, 4, 2, 0], [0, 2, 0, 0]]
    >>> ops.convert_to_numpy(y["backward"]).tolist()
    [[0, 1, 3, 4], [0, 1, 0, 0]]
    >>> ops.convert_to_numpy(w["backward"]).tolist()
    [[0.0, 1.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0]]
    """

    backbone_cls = ElmoBackbone
    tokenizer_cls = WordTokenizer

    def __init__(self, tokenizer=None, sequence_length=None, max_word_length=50,
                 **kwargs):
        super().__init__(tokenizer=tokenizer, **kwargs)
        if sequence_length is not None and (
                not isinstance(sequence_length, int) or sequence_length < 2):
            raise ValueError(
                "`sequence_length` must be an int >= 2 (<S> and </S> count) or "
                f"None, got {sequence_length!r}."
            )
        if tokenizer is not None and getattr(tokenizer, "sequence_length", None):
            raise ValueError(
                "Give the tokenizer no `sequence_length`: the preprocessor's "
                "`sequence_length` (boundaries included) cuts the sentences."
            )
        self.sequence_length = sequence_length
        self.max_word_length = max_word_length
        self.characters = CharacterIds(
            max_word_length=max_word_length, add_sentence_boundaries=True,
            sequence_length=sequence_length,
        )

    def call(self, x, y=None, sample_weight=None):
        _check_no_targets(y, sample_weight)
        bos = self.special_token_id(BOS_TOKEN)
        eos = self.special_token_id(EOS_TOKEN)
        inputs = self.characters(x)
        ids = self.tokenizer.tokenize(x)
        if self.sequence_length is not None:
            ids = ids[:, : self.sequence_length - 2]
        batch = ids.nrows()
        ids = tf.concat([tf.fill([batch, 1], bos), ids, tf.fill([batch, 1], eos)], 1)
        lengths = tf.cast(ids.row_lengths(), tf.int32)[:, None]
        ids = ids.to_tensor(default_value=0, shape=[None, self.sequence_length])
        position = tf.range(tf.shape(ids)[1])[None, :]
        zeros = tf.zeros_like(ids[:, :1])
        has_target = {
            "forward": position < lengths - 1,
            "backward": (position >= 1) & (position < lengths),
        }
        shifted = {
            "forward": tf.concat([ids[:, 1:], zeros], 1),
            "backward": tf.concat([zeros, ids[:, :-1]], 1),
        }
        y = {k: tf.where(has_target[k], shifted[k], 0) for k in shifted}
        sample_weight = {k: tf.cast(v, tf.float32) for k, v in has_target.items()}
        x = {"character_ids": inputs["character_ids"],
             "padding_mask": tf.cast(inputs["padding_mask"], tf.int32)}
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def python_call(self, x, y=None, sample_weight=None):
        _check_no_targets(y, sample_weight)
        bos = self.special_token_id(BOS_TOKEN)
        eos = self.special_token_id(EOS_TOKEN)
        if isinstance(x, str):
            raise ValueError(
                "ElmoLanguageModelPreprocessor takes a batch of sentences (a "
                "list of str), got one str.")
        inputs = self.characters(x)
        rows = self.tokenizer.tokenize(x)
        keep = None if self.sequence_length is None else self.sequence_length - 2
        rows = [row[:keep] for row in rows]
        lengths = np.fromiter((len(row) + 2 for row in rows), np.int32, len(rows))
        width = (self.sequence_length if self.sequence_length is not None
                 else int(lengths.max()) if len(rows) else 0)
        ids = np.zeros((len(rows), width), np.int32)
        if rows:  # <S>, the words, </S>, as one scatter of the flat words
            words = lengths - 2
            flat = np.concatenate(rows)
            ids[:, 0] = bos
            ids[np.arange(len(rows)), lengths - 1] = eos
            ids[np.repeat(np.arange(len(rows)), words),
                1 + np.arange(len(flat)) - np.repeat(np.cumsum(words) - words,
                                                     words)] = flat
        position = np.arange(width)[None, :]
        has_target = {
            "forward": position < lengths[:, None] - 1,
            "backward": (position >= 1) & (position < lengths[:, None]),
        }
        shifted = {"forward": np.zeros_like(ids), "backward": np.zeros_like(ids)}
        shifted["forward"][:, :-1] = ids[:, 1:]
        shifted["backward"][:, 1:] = ids[:, :-1]
        y = {k: np.where(has_target[k], shifted[k], 0).astype(np.int32)
             for k in shifted}
        sample_weight = {k: v.astype(np.float32) for k, v in has_target.items()}
        x = {"character_ids": inputs["character_ids"],
             "padding_mask": inputs["padding_mask"].astype(np.int32)}
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update({"sequence_length": self.sequence_length,
                       "max_word_length": self.max_word_length})
        return config
