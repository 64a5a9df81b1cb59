"""Base class of kzoo's tokenizers."""

import os

import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.preprocessing.preprocessing_layer import (
    PreprocessingLayer,
    check_type,
    pad_rows,
    preprocessing_function,
    to_python,
    to_tf,
    to_valid_utf8,  # noqa: F401 (re-exported for tokenizers)
    use_python,
)
from kzoo.presets import preset_loader, preset_saver

VOCABULARY_FILE = "vocabulary.txt"


#: the longest line a vocabulary or merges file may hold, in bytes
MAX_LINE_BYTES = 1 << 16


def read_lines(path, max_line_bytes=MAX_LINE_BYTES):
    """Lines of a UTF-8 text file, without their line ends. A line longer
    than ``max_line_bytes`` or not valid UTF-8 raises a ValueError naming
    the file and the line, before the rest of the file is read."""
    lines = []
    with open(path, "rb") as f:
        while True:
            raw = f.readline(max_line_bytes + 1)
            if not raw:
                return lines
            if len(raw) > max_line_bytes:
                raise ValueError(
                    f"{path}, line {len(lines) + 1}: longer than "
                    f"{max_line_bytes} bytes, which no vocabulary or merges "
                    "file holds. The file is damaged or not a vocabulary: "
                    "write it again from its tokenizer.")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"{path}, line {len(lines) + 1}: not valid UTF-8 ({exc.reason} "
                    f"at byte {exc.start}). Vocabulary and merges files are "
                    "UTF-8 text: convert it, or write it again from its "
                    "tokenizer.") from None
            lines.append(line.rstrip("\n").rstrip("\r"))


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(f"{line}\n")


def _ids_rank_error(got):
    return ValueError("`inputs` must be one sequence of token ids or a batch of "
                      f"them (rank 1 or 2), got {got}.")


def _ids_dtype_error(dtype):
    return TypeError(f"`inputs` must be integer token ids, got dtype {dtype}.")


# The range errors' text, without a final period (TensorFlow's assertions
# append one).
def _negative_ids(size):
    return (f"`inputs` has negative ids: token ids must be in [0, {size}); "
            "drop or replace fill values such as -1 first")


def _ids_too_large(size):
    return (f"`inputs` has ids >= the vocabulary size {size}: token ids must be "
            f"in [0, {size}) (were they made with another vocabulary?)")


def python_ids_rank(inputs):
    """``(rows, rank)`` of ids in the Python engine's form (a 1-D or 2-D
    array, or a list of 1-D arrays for ragged rows): 1-D input is one row,
    and so is an empty list."""
    if isinstance(inputs, np.ndarray):
        if inputs.ndim == 1:
            return [inputs], 1
        if inputs.ndim == 2:
            return list(inputs), 2
        raise _ids_rank_error(f"shape {inputs.shape}")
    if isinstance(inputs, (list, tuple)):
        if not inputs:
            return [np.zeros([0], np.int64)], 1
        rows = [np.asarray(row) for row in inputs]
        for row in rows:
            if row.ndim != 1:
                raise _ids_rank_error(f"a row of shape {row.shape}")
        return rows, 2
    raise TypeError(f"`inputs` must be token ids, got {type(inputs).__name__}.")


class Tokenizer(PreprocessingLayer):
    """Strings to token ids and back; the base of every kzoo tokenizer.

    Subclasses implement ``tokenize`` and ``_detokenize`` (a batch of ids to
    strings) with TF ops, their Python engine's ``python_tokenize`` and
    ``python_detokenize``, and ``set_vocabulary``, and keep the vocabulary in
    ``vocabulary`` (None until set; the tokens in id order, or a subclass
    overrides ``_id_tokens`` and ``_token_ids``). The base class supplies
    the vocabulary accessors, ``detokenize`` for one sequence or a batch,
    the input checks both engines share (``_check_text``,
    ``_checked_ids``, ``_python_checked_ids``), eager/``tf.data`` handling
    (see ``kzoo.preprocessing.preprocessing_layer``), vocabulary assets for
    ``.keras`` files and presets, and ``from_preset``.

    A scalar string gives a 1-D result; a batch of strings a ragged
    ``[batch, None]`` result, or dense ``[batch, sequence_length]`` (padded
    with the padding id) when ``sequence_length`` is set.
    """

    input_dtype = "string"
    #: asset files written by save_assets, read by load_assets
    asset_files = (VOCABULARY_FILE,)
    #: how to give the tokenizer a vocabulary, for the error when it has none
    vocabulary_hint = "pass `vocabulary=` or call `set_vocabulary()` / `load_assets()`"

    def __init__(self, sequence_length=None, dtype="int32", **kwargs):
        if sequence_length is not None:
            check_type("sequence_length", sequence_length, int, "an int or None")
        super().__init__(dtype=dtype, **kwargs)
        self.sequence_length = sequence_length

    # --- to implement ---
    def tokenize(self, inputs):
        raise NotImplementedError

    def _detokenize(self, inputs):
        raise NotImplementedError

    def set_vocabulary(self, vocabulary):
        raise NotImplementedError

    # --- shared ---
    @preprocessing_function
    def call(self, inputs):
        return self.tokenize(inputs)

    def python_call(self, inputs):
        return self.tokenize(inputs)

    def detokenize(self, inputs):
        """Token ids to text: one sequence (1-D) gives a string, a batch
        (2-D, dense or ragged) a list of strings. Ids must be integers in
        ``[0, vocabulary_size())``; what text they give is the class's (see
        its docstring)."""
        if use_python((inputs,)):
            inputs = to_python(inputs)  # once: nested lists are slow to walk
            rows, rank = python_ids_rank(inputs)
            return self._detokenize(rows)[0] if rank == 1 else self._detokenize(inputs)
        # The layer reads Python lists as strings (its input dtype): ids here.
        # One sequence is detokenized as a batch of one (the eager conversion
        # handles 1-D string tensors, not scalars).
        inputs = to_tf(inputs, tf.int32)
        if inputs.shape.rank == 1:
            return self._detokenize(inputs[None])[0]
        return self._detokenize(inputs)

    # --- vocabulary ---
    def _check_vocabulary(self):
        if self.vocabulary is None:
            raise ValueError(f"No vocabulary is set on this {type(self).__name__}: "
                             f"{self.vocabulary_hint}.")

    def _id_tokens(self):
        """The tokens in id order, not copied."""
        self._check_vocabulary()
        return self.vocabulary

    def _token_ids(self):
        """The token → id dict, built once per vocabulary."""
        index = getattr(self, "_token_index", None)
        if index is None or len(index) != self.vocabulary_size():
            index = {t: i for i, t in enumerate(self._id_tokens())}
            # Plain attribute: Keras' tracking would wrap and copy the dict.
            object.__setattr__(self, "_token_index", index)
        return index

    def get_vocabulary(self):
        """The vocabulary, a list of str in id order."""
        return list(self._id_tokens())

    def vocabulary_size(self):
        return len(self._id_tokens())

    def id_to_token(self, id):
        tokens = self._id_tokens()
        if not 0 <= int(id) < len(tokens):
            raise ValueError(f"`id` must be in [0, {len(tokens)}), got {id}.")
        return tokens[int(id)]

    def token_to_id(self, token):
        index = self._token_ids()
        if token not in index:
            raise KeyError(f"Token {token!r} is not in the vocabulary.")
        return index[token]

    # --- input checks ---
    def _check_text(self, inputs):
        """The rank (0 or 1) of a TensorFlow text input: a string or a 1-D
        batch of them; an error for other dtypes and ranks, or without a
        vocabulary."""
        self._check_vocabulary()
        if inputs.dtype != tf.string:
            raise TypeError(f"`inputs` must be strings, got a {inputs.dtype.name} "
                            "tensor.")
        rank = inputs.shape.rank
        if rank is None or rank > 1:
            raise ValueError("`inputs` must be a string or a 1-D batch of strings, "
                             f"got shape {inputs.shape}.")
        return rank

    def _checked_ids(self, inputs):
        """A TensorFlow batch of ids (``[batch, length]``, dense or ragged)
        as int64, checked to lie in ``[0, vocabulary_size())`` when it runs
        (an ``InvalidArgumentError`` otherwise)."""
        self._check_vocabulary()
        if not inputs.dtype.is_integer:
            raise _ids_dtype_error(inputs.dtype.name)
        ids = tf.cast(inputs, tf.int64)
        if ids.shape.rank != 2:
            raise _ids_rank_error(f"shape {ids.shape}")
        size = self.vocabulary_size()
        flat = ids.flat_values if isinstance(ids, tf.RaggedTensor) else ids
        with tf.control_dependencies([
            tf.debugging.assert_non_negative(flat, message=_negative_ids(size)),
            tf.debugging.assert_less(flat, tf.constant(size, tf.int64),
                                     message=_ids_too_large(size)),
        ]):
            return tf.identity(ids)

    def _python_checked_ids(self, inputs):
        """The Python engine's ``_checked_ids``: a batch of ids (a 2-D array,
        or a list of 1-D arrays) as its rows, 1-D integer arrays with every
        id in ``[0, vocabulary_size())``."""
        self._check_vocabulary()
        rows, rank = python_ids_rank(inputs)
        if rank != 2:
            raise _ids_rank_error(f"shape {np.shape(inputs)}")
        for row in rows:
            if row.size and row.dtype.kind not in "iu":
                raise _ids_dtype_error(row.dtype.name)
        flat = np.concatenate(rows) if rows else np.zeros([0], np.int64)
        size = self.vocabulary_size()
        if flat.size and flat.min() < 0:
            raise ValueError(_negative_ids(size) + ".")
        if flat.size and flat.max() >= size:
            raise ValueError(_ids_too_large(size) + ".")
        return rows

    def _pad_to_sequence_length(self, ids, pad_id):
        if self.sequence_length is None or not isinstance(ids, tf.RaggedTensor):
            return ids
        return ids.to_tensor(
            default_value=pad_id, shape=[None, self.sequence_length]
        )

    def _python_pad_to_sequence_length(self, rows, pad_id):
        """The Python engine's ``_pad_to_sequence_length``: a list of 1-D
        id arrays stays a list without ``sequence_length``, else becomes a
        dense ``[batch, sequence_length]`` array."""
        if self.sequence_length is None:
            return rows
        return pad_rows(rows, self.sequence_length, pad_id, self.compute_dtype)

    def save_assets(self, dir_path):
        write_lines(os.path.join(dir_path, VOCABULARY_FILE), self.get_vocabulary())

    def load_assets(self, dir_path):
        self.set_vocabulary(os.path.join(dir_path, VOCABULARY_FILE))

    def get_config(self):
        config = super().get_config()
        config.update({"sequence_length": self.sequence_length})
        return config

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """Builds the tokenizer stored in a preset (name or folder)."""
        return preset_loader.load_tokenizer(preset, cls=cls, **kwargs)

    def save_to_preset(self, preset_dir):
        """Writes ``tokenizer.json`` and its assets into ``preset_dir``."""
        preset_saver.save_preset(preset_dir, tokenizer=self)
