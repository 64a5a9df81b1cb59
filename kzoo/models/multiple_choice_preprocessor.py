"""A context and N candidate endings → N packed pairs per example."""

import keras
import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.models.preprocessor import Preprocessor


def _choices_error(x):
    return ValueError(
        "`x` must be a tuple `(contexts, endings)` (endings [batch, num_choices]) "
        "or `(contexts, ending_0, ..., ending_N)`, got " + type(x).__name__
        + (f" of length {len(x)}" if isinstance(x, (tuple, list)) else "") + ".")


@kzoo_export("kzoo.models.MultipleChoicePreprocessor")
class MultipleChoicePreprocessor(Preprocessor):
    """Packs ``(context, ending_i)`` for each of the N endings of an example.

    SWAG-style multiple choice (BERT paper, section 4.4): each candidate
    ending is packed with the context as its own pair (BERT: ``[CLS] context
    [SEP] ending [SEP]``), giving ``[batch, num_choices, sequence_length]``
    tensors; the task scores the N pairs and softmaxes over them. Pairs
    longer than ``sequence_length`` are cut (``truncate``), never an error.
    Every example of a batch has the same number of endings.

    It runs TensorFlow ops (inside ``tf.data`` and on TensorFlow tensors)
    or, with the Python preprocessing engine, the same tokenization and
    packing on Python values without TensorFlow (see
    ``kzoo.preprocessing.engine``).

    Family subclasses set ``tokenizer_cls`` and the special-token names
    ``start_token``, ``sep_token`` and ``end_token``.

    Args:
        tokenizer: the family's tokenizer.
        sequence_length: int. Length of each packed pair. Default 128.
        truncate: str. ``"round_robin"`` (default: trim the longer segment a
            token at a time, like Hugging Face's ``longest_first``) or
            ``"waterfall"`` (the ending is cut first).
        num_choices: int or None. The number of endings. None (the default)
            takes it from the data; the exported serving signature, which
            takes one string input per ending, needs it set.

    Call arguments:
        x: ``(contexts, endings)``: ``contexts`` a ``[batch]`` string batch
            and ``endings`` ``[batch, num_choices]`` strings (a list of lists
            of str); or ``(contexts, ending_0, ..., ending_{N-1})``, each a
            ``[batch]`` string batch.
        y: optional labels: the index of the right ending, ``[batch]``.
        sample_weight: optional ``[batch]`` weights, passed through.

    Returns:
        ``(x, y, sample_weight)`` packed by ``keras.utils.pack_x_y_sample_weight``,
        where ``x`` is a dict of ``token_ids``, ``segment_ids`` and
        ``padding_mask``, each ``[batch, num_choices, sequence_length]``.
    """


    def __init__(self, tokenizer=None, sequence_length=128, truncate="round_robin",
                 num_choices=None, **kwargs):
        super().__init__(tokenizer=tokenizer, **kwargs)
        if (not isinstance(sequence_length, int) or isinstance(sequence_length, bool)
                or sequence_length < 3):
            raise ValueError(
                f"`sequence_length` must be an int >= 3, got {sequence_length!r}."
            )
        if truncate not in ("round_robin", "waterfall"):
            raise ValueError(
                f'`truncate` must be "round_robin" or "waterfall", got {truncate!r}.'
            )
        if num_choices is not None and (
                not isinstance(num_choices, int) or isinstance(num_choices, bool)
                or num_choices < 1):
            raise ValueError(
                f"`num_choices` must be a positive int or None, got {num_choices!r}."
            )
        self.sequence_length = sequence_length
        self.truncate = truncate
        self.num_choices = num_choices
        self.packer = None  # built on first call, once the vocabulary is known

    def _split_x(self, x):
        if not isinstance(x, (tuple, list)) or len(x) < 2:
            raise _choices_error(x)
        contexts = x[0]
        for value in x:
            if value.dtype != tf.string:
                raise TypeError(f"`x` must hold strings, got {value.dtype.name}.")
        if contexts.shape.rank != 1:
            raise ValueError(
                f"`x` contexts must be a 1-D batch of strings, got shape "
                f"{contexts.shape}."
            )
        if len(x) == 2 and x[1].shape.rank == 2:
            endings = x[1]
            if isinstance(endings, tf.RaggedTensor):
                endings = endings.to_tensor()
                if tf.executing_eagerly():
                    lengths = x[1].row_lengths().numpy()
                    if len(set(lengths.tolist())) > 1:
                        raise ValueError(
                            "Every example must have the same number of "
                            f"endings, got {lengths.tolist()}."
                        )
        else:
            for value in x[1:]:
                if value.shape.rank != 1:
                    raise ValueError(
                        "`x` endings must be [batch, num_choices] strings, or "
                        f"one [batch] batch per ending; got shape {value.shape}."
                    )
            endings = tf.stack(list(x[1:]), axis=1)
        num_choices = endings.shape[1]
        if (self.num_choices is not None and num_choices is not None
                and num_choices != self.num_choices):
            raise ValueError(
                f"Got {num_choices} endings per example, but this preprocessor "
                f"has `num_choices={self.num_choices}`."
            )
        return contexts, endings

    def call(self, x, y=None, sample_weight=None):
        if self.packer is None:
            self.packer = self.build_packer(self.sequence_length, self.truncate)
        contexts, endings = self._split_x(x)
        num_choices = tf.shape(endings)[1]
        batch = tf.shape(contexts, out_type=tf.int64)[0]
        # One tokenizer call for both (half the graph to build in tf.data).
        ids = self.tokenizer(tf.concat([contexts, tf.reshape(endings, [-1])], 0))
        repeated = tf.gather(
            ids, tf.repeat(tf.range(batch), tf.cast(num_choices, tf.int64)))
        ending_ids = ids[batch:]
        packed = self.packer((repeated, ending_ids))
        static_choices = endings.shape[1]
        packed = {
            key: tf.reshape(value, [-1, num_choices, self.sequence_length])
            for key, value in packed.items()
        }
        for value in packed.values():
            value.set_shape([None, static_choices, self.sequence_length])
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)

    # --- the Python engine (the same steps on Python values) ---
    def _python_split_x(self, x):
        if (not isinstance(x, (tuple, list)) or len(x) < 2
                or isinstance(x, list) and any(isinstance(v, str) for v in x)):
            # (a list of str is one batch of texts, not a tuple of batches)
            raise _choices_error(x)
        for value in x:
            if isinstance(value, np.ndarray):
                raise TypeError(f"`x` must hold strings, got {value.dtype.name}.")
            if not isinstance(value, (str, list)):
                raise TypeError(f"`x` must hold strings, got {type(value).__name__}.")

        def rank(value):
            if isinstance(value, str):
                return 0
            if value and all(isinstance(v, list) for v in value):
                if any(not isinstance(w, str) for v in value for w in v):
                    return 3
                return 2
            if any(not isinstance(v, str) for v in value):
                raise TypeError("`x` must hold strings: every item of a batch "
                                "must be a str.")
            return 1

        contexts = x[0]
        if rank(contexts) != 1:
            raise ValueError(
                f"`x` contexts must be a 1-D batch of strings, got shape "
                f"{np.shape(contexts)}."
            )
        if len(x) == 2 and rank(x[1]) == 2:
            lengths = [len(v) for v in x[1]]
            if len(set(lengths)) > 1:
                raise ValueError(
                    "Every example must have the same number of "
                    f"endings, got {lengths}."
                )
            endings = x[1]
        else:
            for value in x[1:]:
                if rank(value) != 1:
                    raise ValueError(
                        "`x` endings must be [batch, num_choices] strings, or "
                        "one [batch] batch per ending; got shape "
                        f"{np.shape(value)}."
                    )
            if len({len(v) for v in x}) > 1:
                raise ValueError("Every batch of `x` must have the same size, got "
                                 f"{[len(v) for v in x]}.")
            endings = [list(e) for e in zip(*x[1:])]
        num_choices = len(endings[0]) if endings else len(x) - 1
        if self.num_choices is not None and endings and num_choices != self.num_choices:
            raise ValueError(
                f"Got {num_choices} endings per example, but this preprocessor "
                f"has `num_choices={self.num_choices}`."
            )
        if len(endings) != len(contexts):
            raise ValueError(f"`x` has {len(contexts)} contexts but "
                             f"{len(endings)} rows of endings.")
        return contexts, endings, num_choices

    def python_call(self, x, y=None, sample_weight=None):
        if self.packer is None:
            self.packer = self.build_packer(self.sequence_length, self.truncate)
        contexts, endings, num_choices = self._python_split_x(x)
        batch = len(contexts)
        flat_endings = [e for row in endings for e in row]
        ids = self.tokenizer(list(contexts) + flat_endings) if batch else []
        ids = [np.asarray(r) for r in ids]
        repeated = [ids[i] for i in range(batch) for _ in range(num_choices)]
        packed = self.packer(tuple(rows if rows else np.zeros((0, 0), np.int32)
                                   for rows in (repeated, ids[batch:])))
        packed = {key: np.reshape(value, (batch, num_choices, self.sequence_length))
                  for key, value in packed.items()}
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(sequence_length=self.sequence_length, truncate=self.truncate,
                      num_choices=self.num_choices)
        return config
