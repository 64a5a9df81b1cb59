"""ELMo's character encoding of tokens (bilm-tf, AllenNLP, TF-Hub ELMo)."""

import itertools

import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.preprocessing_layer import (
    PreprocessingLayer,
    check_type,
    to_valid_utf8,
)

# Character ids 0-255 are UTF-8 bytes; these are ELMo's special characters.
BEGIN_OF_SENTENCE = 256
END_OF_SENTENCE = 257
BEGIN_OF_WORD = 258
END_OF_WORD = 259
PADDING = 260
# Tokens that are encoded as the sentence boundaries, as in bilm-tf/AllenNLP.
BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


_BOS_BYTES = BOS_TOKEN.encode("utf-8")
_EOS_BYTES = EOS_TOKEN.encode("utf-8")


def _python_tokens(inputs):
    """Python text (a list of sentences or of token lists, as `to_python`
    gives it) → one list of UTF-8 `bytes` tokens per sentence. Sentences
    are split on ASCII whitespace, as `tf.strings.split`: `bytes.split()`
    splits on exactly those bytes."""
    if isinstance(inputs, np.ndarray):
        raise TypeError(
            f"`inputs` must be strings (sentences or split tokens), got "
            f"dtype {inputs.dtype.name}.")
    tokens = []
    for item in inputs:
        if isinstance(item, str):
            tokens.append(item.encode("utf-8").split())
        elif isinstance(item, (list, tuple)):
            row = []
            for token in item:
                if not isinstance(token, str):
                    if isinstance(token, (list, tuple)):
                        raise ValueError(
                            "`inputs` must be a sentence, a batch of "
                            "sentences or a batch of token lists (rank 0, 1 "
                            "or 2), got rank 3 or more.")
                    raise TypeError(
                        "`inputs` must be strings (sentences or split "
                        f"tokens), got {type(token).__name__} {token!r}.")
                row.append(token.encode("utf-8"))
            tokens.append(row)
        else:
            raise TypeError(
                "`inputs` must be strings (sentences or split tokens), got "
                f"{type(item).__name__} {item!r}.")
    return tokens


@kzoo_export("kzoo.preprocessing.CharacterIds")
class CharacterIds(PreprocessingLayer):
    """Encodes each token as ELMo's `max_word_length` character ids.

    The encoding of AllenNLP's `ELMoCharacterMapper` and bilm-tf's
    `UnicodeCharsVocabulary` (which TF-Hub's ELMo was trained with): a token
    becomes begin-of-word (258), its UTF-8 bytes cut to
    `max_word_length - 2`, end-of-word (259), then padding (260) up to
    `max_word_length`. The tokens `<S>` and `</S>` are the sentence
    boundaries: begin-of-word, 256 (or 257), end-of-word, padding. Every id
    is then shifted by +1, so that 0 is free for positions past the end of a
    sentence, whose rows are all zeros.

    TensorFlow ops (run eagerly or inside `tf.data`) compute it, or, with
    the Python preprocessing engine (see `kzoo.preprocessing.engine`), numpy
    on the sentences' UTF-8 bytes, giving the same ids without TensorFlow.

    With `add_sentence_boundaries=True`, `<S>` and `</S>` are put around each
    sentence, as bilm-tf's `Batcher` does. AllenNLP's `batch_to_ids` does not
    (its `Elmo` module adds them inside the model), hence the default False.

    Args:
        max_word_length: int. Character ids per token (50 for every
            released ELMo); words longer than `max_word_length - 2` bytes are
            cut, possibly inside a multi-byte character, as ELMo does.
        add_sentence_boundaries: bool. Add `<S>`/`</S>` around each sentence.
        sequence_length: int or None. If set, pad or truncate every sentence
            to this many tokens (boundaries included; truncation drops
            words, never the boundaries).

    Call arguments:
        inputs: a sentence or a batch of sentences (strings, split on ASCII
            whitespace after invalid UTF-8 is replaced by U+FFFD), or
            already split tokens: a ragged `[batch, None]` string tensor or
            a list of lists of str.

    Returns:
        A dict with `character_ids`, int32 `[batch, tokens, max_word_length]`
        (`tokens` is `sequence_length` or the longest sentence), and
        `padding_mask`, bool `[batch, tokens]`, True on real tokens. For one
        sentence (a scalar string) the batch axis is dropped.

    Example:
    >>> layer = kzoo.preprocessing.CharacterIds(max_word_length=6)
    >>> out = layer(["hi there", "a"])
    >>> ops.convert_to_numpy(out["character_ids"]).tolist()[1]
    [[259, 98, 260, 261, 261, 261], [0, 0, 0, 0, 0, 0]]
    >>> ops.convert_to_numpy(out["padding_mask"]).tolist()
    [[True, True], [True, False]]
    >>> layer = kzoo.preprocessing.CharacterIds(
    ...     max_word_length=6, add_sentence_boundaries=True)
    >>> ops.convert_to_numpy(layer("a")["character_ids"]).tolist()
    [[259, 257, 260, 261, 261, 261], [259, 98, 260, 261, 261, 261], [259, 258, 260, 261, 261, 261]]

    Reference:
        - [Peters et al., 2018](https://arxiv.org/abs/1802.05365) (ELMo).
        - [bilm-tf](https://github.com/allenai/bilm-tf), `bilm/data.py`.
    """

    input_dtype = "string"

    def __init__(
        self,
        max_word_length=50,
        add_sentence_boundaries=False,
        sequence_length=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_type("max_word_length", max_word_length, int, "an int >= 3")
        if max_word_length < 3:
            raise ValueError(
                f"`max_word_length` must be >= 3 (begin, end of word and one "
                f"byte), got {max_word_length}."
            )
        check_type(
            "add_sentence_boundaries", add_sentence_boundaries, bool, "a bool"
        )
        if sequence_length is not None:
            check_type("sequence_length", sequence_length, int, "an int or None")
            minimum = 2 if add_sentence_boundaries else 0
            if sequence_length < minimum:
                raise ValueError(
                    f"`sequence_length` must be >= {minimum}, got {sequence_length}."
                )
        self.max_word_length = max_word_length
        self.add_sentence_boundaries = add_sentence_boundaries
        self.sequence_length = sequence_length

    def _encode(self, tokens):
        """A 1-D string tensor of tokens → `[n, max_word_length]` ids (+1)."""
        max_bytes = self.max_word_length - 2
        cut = tf.strings.substr(tokens, 0, max_bytes, unit="BYTE")
        length = tf.strings.length(cut)[:, tf.newaxis]
        chars = tf.cast(tf.io.decode_raw(cut, tf.uint8, fixed_length=max_bytes),
                        tf.int32)
        # Column p holds byte p - 1, so shift the bytes right by one.
        chars = tf.pad(chars, [[0, 0], [1, 1]])
        position = tf.range(self.max_word_length)[tf.newaxis, :]
        ids = tf.where(position <= length, chars, PADDING)
        ids = tf.where(position == length + 1, END_OF_WORD, ids)
        boundary = tf.where(tokens == BOS_TOKEN, BEGIN_OF_SENTENCE, END_OF_SENTENCE)
        is_boundary = (tokens == BOS_TOKEN) | (tokens == EOS_TOKEN)
        ids = tf.where(
            is_boundary[:, tf.newaxis],
            tf.where(position == 1, boundary[:, tf.newaxis],
                     tf.where(position == 2, END_OF_WORD, PADDING)),
            ids,
        )
        ids = tf.where(position == 0, BEGIN_OF_WORD, ids)
        return ids + 1

    def call(self, inputs):
        if inputs.dtype != tf.string:
            raise TypeError(
                f"`inputs` must be strings (sentences or split tokens), got "
                f"dtype {inputs.dtype.name}."
            )
        rank = inputs.shape.rank
        if rank == 0:
            outputs = self.call(inputs[tf.newaxis])
            return {key: value[0] for key, value in outputs.items()}
        inputs = tf.ragged.map_flat_values(to_valid_utf8, inputs)
        if rank == 1:
            tokens = tf.strings.split(inputs)
        elif rank == 2:
            tokens = inputs
            if not isinstance(tokens, tf.RaggedTensor):
                tokens = tf.RaggedTensor.from_tensor(tokens)
        else:
            raise ValueError(
                "`inputs` must be a sentence, a batch of sentences or a batch "
                f"of token lists (rank 0, 1 or 2), got rank {rank}."
            )
        if self.add_sentence_boundaries:
            if self.sequence_length is not None:
                tokens = tokens[:, : self.sequence_length - 2]
            batch = tokens.nrows()
            tokens = tf.concat(
                [tf.fill([batch, 1], BOS_TOKEN), tokens,
                 tf.fill([batch, 1], EOS_TOKEN)],
                axis=1,
            )
        ids = tokens.with_flat_values(self._encode(tokens.flat_values))
        shape = [None, self.sequence_length, self.max_word_length]
        character_ids = ids.to_tensor(default_value=0, shape=shape)
        lengths = tokens.row_lengths()
        if self.sequence_length is not None:
            lengths = tf.minimum(lengths, self.sequence_length)
        padding_mask = tf.sequence_mask(
            lengths, maxlen=tf.shape(character_ids)[1]
        )
        return {"character_ids": character_ids, "padding_mask": padding_mask}

    def python_call(self, inputs):
        if isinstance(inputs, str):
            outputs = self.python_call([inputs])
            return {key: value[0] for key, value in outputs.items()}
        tokens = _python_tokens(inputs)
        if self.add_sentence_boundaries:
            keep = (None if self.sequence_length is None
                    else self.sequence_length - 2)
            tokens = [[_BOS_BYTES] + row[:keep] + [_EOS_BYTES] for row in tokens]
        lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
        if self.sequence_length is not None:
            width = self.sequence_length
            tokens = [row[:width] for row in tokens]
            lengths = np.minimum(lengths, width)
        else:
            width = int(lengths.max()) if len(tokens) else 0
        flat = list(itertools.chain.from_iterable(tokens))
        character_ids = np.zeros(
            (len(tokens), width, self.max_word_length), np.int32)
        # Each token's row in the [batch * width, max_word_length] view.
        slots = np.repeat(np.arange(len(tokens)) * width, lengths) + (
            np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths))
        self._python_encode(flat, character_ids.reshape(-1, self.max_word_length),
                            slots)
        padding_mask = np.arange(width)[None, :] < lengths[:, None]
        return {"character_ids": character_ids, "padding_mask": padding_mask}

    def _python_encode(self, tokens, out, slots):
        """Writes `_encode`'s ids (+1) of a list of UTF-8 `bytes` tokens into
        the rows `slots` of the int32 array `out`, vectorized over all the
        tokens' bytes at once."""
        max_bytes = self.max_word_length - 2
        length = np.fromiter(map(len, tokens), np.int64, len(tokens))
        data = np.frombuffer(b"".join(tokens), np.uint8)
        # Each byte's place in its token; the bytes past max_bytes go.
        place = np.arange(len(data)) - np.repeat(np.cumsum(length) - length, length)
        kept = place < max_bytes
        empty = np.full(self.max_word_length, PADDING + 1, np.int32)
        empty[0] = BEGIN_OF_WORD + 1
        out[slots] = empty
        out[np.repeat(slots, length)[kept], place[kept] + 1] = (
            data[kept].astype(np.int32) + 1)
        out[slots, np.minimum(length, max_bytes) + 1] = END_OF_WORD + 1
        # The tokens <S> and </S>, found on their bytes.
        start = np.cumsum(length) - length
        for token, character in ((_BOS_BYTES, BEGIN_OF_SENTENCE),
                                 (_EOS_BYTES, END_OF_SENTENCE)):
            found = np.flatnonzero(length == len(token))
            for i, byte in enumerate(token):
                found = found[data[start[found] + i] == byte]
            if found.size:
                rows = slots[found]
                out[rows, 1:] = PADDING + 1
                out[rows, 1] = character + 1
                out[rows, 2] = END_OF_WORD + 1

    def get_config(self):
        config = super().get_config()
        config.update({
            "max_word_length": self.max_word_length,
            "add_sentence_boundaries": self.add_sentence_boundaries,
            "sequence_length": self.sequence_length,
        })
        return config


def unpad_tokens(tokens, lengths, name="lengths"):
    """A padded token matrix and each row's length → ragged tokens.

    TF-Hub ELMo's ``tokens`` input (``CharacterIds`` then encodes them):
    row ``i`` of ``tokens`` keeps its first ``lengths[i]`` tokens, whatever
    pads the rest. TensorFlow ops (inside a SavedModel's graph).

    Args:
        tokens: string ``[batch, width]``.
        lengths: int ``[batch]``, each in ``[0, width]``.
        name: str. What the lengths are called in the errors.

    Returns:
        A ragged string ``[batch, None]`` tensor.

    Raises:
        tf.errors.InvalidArgumentError: a length is larger than ``width``
            ("<name> is larger than the width of the tokens matrix") or
            negative.

    Example:
    >>> tokens = unpad_tokens(tf.constant([["a", "b"], ["c", ""]]), [2, 1])
    >>> tokens.to_list()
    [[b'a', b'b'], [b'c']]
    """
    tokens = tf.convert_to_tensor(tokens, tf.string)
    lengths = tf.cast(lengths, tf.int64)
    checks = [
        tf.debugging.assert_less_equal(
            lengths, tf.shape(tokens, out_type=tf.int64)[1],
            message=f"{name} is larger than the width of the tokens matrix"),
        tf.debugging.assert_non_negative(lengths, message=f"{name} must be >= 0"),
    ]
    with tf.control_dependencies(checks):
        return tf.RaggedTensor.from_tensor(tokens, lengths=lengths)
