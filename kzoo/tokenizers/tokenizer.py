"""Base class of kzoo's tokenizers."""

import os


from kzoo.preprocessing.engine import tf
from kzoo.preprocessing.preprocessing_layer import (
    PreprocessingLayer,
    check_type,
    pad_rows,
    preprocessing_function,
    to_valid_utf8,  # noqa: F401 (re-exported for tokenizers)
)
from kzoo.presets import preset_loader, preset_saver

VOCABULARY_FILE = "vocabulary.txt"


def read_lines(path):
    """Lines of a UTF-8 text file, without their line ends."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").rstrip("\r") for line in f]


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(f"{line}\n")


class Tokenizer(PreprocessingLayer):
    """Strings to token ids and back; the base of every kzoo tokenizer.

    Subclasses implement ``tokenize`` and ``detokenize`` with TF ops and the
    vocabulary accessors; the base class supplies eager/``tf.data`` handling
    (see ``kzoo.preprocessing.preprocessing_layer``), vocabulary assets for
    ``.keras`` files and presets, and ``from_preset``.

    A scalar string gives a 1-D result; a batch of strings a ragged
    ``[batch, None]`` result, or dense ``[batch, sequence_length]`` (padded
    with the padding id) when ``sequence_length`` is set.
    """

    input_dtype = "string"
    #: asset files written by save_assets, read by load_assets
    asset_files = (VOCABULARY_FILE,)

    def __init__(self, sequence_length=None, dtype="int32", **kwargs):
        if sequence_length is not None:
            check_type("sequence_length", sequence_length, int, "an int or None")
        super().__init__(dtype=dtype, **kwargs)
        self.sequence_length = sequence_length

    # --- to implement ---
    def tokenize(self, inputs):
        raise NotImplementedError

    def detokenize(self, inputs):
        raise NotImplementedError

    def get_vocabulary(self):
        raise NotImplementedError

    def set_vocabulary(self, vocabulary):
        raise NotImplementedError

    # --- shared ---
    @preprocessing_function
    def call(self, inputs):
        return self.tokenize(inputs)

    def python_call(self, inputs):
        return self.tokenize(inputs)

    def vocabulary_size(self):
        return len(self.get_vocabulary())

    def id_to_token(self, id):
        vocabulary = self.get_vocabulary()
        if not 0 <= int(id) < len(vocabulary):
            raise ValueError(
                f"`id` must be in [0, {len(vocabulary)}), got {id}."
            )
        return vocabulary[int(id)]

    def token_to_id(self, token):
        index = getattr(self, "_token_index", None)
        if index is None or len(index) != self.vocabulary_size():
            index = {t: i for i, t in enumerate(self.get_vocabulary())}
            # Plain attribute: Keras' tracking would wrap and copy the dict.
            object.__setattr__(self, "_token_index", index)
        if token not in index:
            raise KeyError(f"Token {token!r} is not in the vocabulary.")
        return index[token]

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
