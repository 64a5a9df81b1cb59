"""A table of word vectors as SavedModel signatures: words in, vectors out.

``WordTable`` is what a static embedding (word vectors) serves: it follows
``kzoo.export.saved_model``'s protocol (``serving_endpoints``,
``serving_trackables``) and holds the table (a variable, so it is stored
under ``variables/`` and not in the graph) and a word → row hash table. Its
SavedModel needs no Keras and no tf-text to load, and it is written in
process on any backend (its signatures are plain TensorFlow).

``write_onnx`` writes the same lookup for onnxruntime: ``model.onnx``
(``token_ids`` in, ``vectors`` and ``found`` out) and a ``tokenizer.json``
that maps each word to its row.
"""

import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.tokenizers.word_tokenizer import normalize_words

NEIGHBOURS = 10


class WordTable(tf.Module):
    """Word vectors looked up by word, as SavedModel signatures.

    Signatures (``words``: a ``tf.string`` batch):

    * ``serving_default``: ``vectors`` ``[batch, dim]`` (zeros for a word
      not in the vocabulary) and ``found`` (bool ``[batch]``);
    * ``most_similar``: the ``neighbours`` most similar words by cosine
      (``[batch, neighbours]`` strings, the word itself left out, as
      gensim's ``most_similar``), their ``scores`` and ``found``.

    Args:
        words: the vocabulary, one str per row of ``vectors``.
        vectors: float ``[len(words), dim]``.
        lowercase: bool. Lowercase each word before the lookup (for vectors
            trained on lowercased text).
        neighbours: int. How many neighbours ``most_similar`` returns (at
            most ``len(words) - 1``).
    """

    def __init__(self, words, vectors, lowercase=False, neighbours=NEIGHBOURS):
        super().__init__()
        words = list(words)
        if not words:
            raise ValueError(
                "There are no word vectors to export (an empty vocabulary).")
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape[0] != len(words):
            raise ValueError(
                f"`vectors` has {vectors.shape[0]} rows for {len(words)} words: "
                "pass one row per word.")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self.vectors = tf.Variable(vectors, trainable=False, name="vectors")
        self.unit_vectors = tf.Variable(vectors / np.maximum(norms, 1e-12),
                                        trainable=False, name="unit_vectors")
        self.words = tf.Variable(np.array(words, dtype=object), trainable=False,
                                 dtype=tf.string, name="words")
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(words), tf.range(len(words), dtype=tf.int64)),
            default_value=-1)
        self.lowercase = lowercase
        self.neighbours = min(neighbours, max(len(words) - 1, 1))

    def serving_endpoints(self, sequence_length=None):
        """``serving_default`` (``lookup``) and ``most_similar``, each taking
        ``words``; ``sequence_length`` does not apply (one word per row)."""
        signature = [tf.TensorSpec([None], tf.string, name="words")]
        return {"serving_default": (self.lookup, signature),
                "most_similar": (self.most_similar, signature)}

    def serving_trackables(self):
        """The table itself: its variables and its word → row hash table."""
        return {"word_table": self}

    def _rows(self, words):
        rows = self.table.lookup(normalize_words(words, self.lowercase))
        return tf.maximum(rows, 0), rows >= 0

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="words")])
    def lookup(self, words):
        rows, found = self._rows(words)
        vectors = tf.gather(self.vectors, rows) * tf.cast(found, tf.float32)[:, None]
        return {"vectors": vectors, "found": found}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="words")])
    def most_similar(self, words):
        rows, found = self._rows(words)
        cosines = tf.matmul(tf.gather(self.unit_vectors, rows), self.unit_vectors,
                            transpose_b=True)
        # The word itself is not its own neighbour (gensim's habit).
        cosines += tf.one_hot(rows, tf.shape(cosines)[1], on_value=-np.inf,
                              off_value=0.0)
        scores, best = tf.math.top_k(cosines, k=self.neighbours)
        scores = tf.where(found[:, None], scores, 0.0)
        neighbours = tf.where(found[:, None], tf.gather(self.words, best), "")
        return {"neighbours": neighbours, "scores": scores, "found": found}


#: the token of ``tokenizer.json`` that a word outside the vocabulary gets
ONNX_UNKNOWN = "<kzoo:unknown-word>"


def write_onnx(words, vectors, folder, lowercase=False):
    """Writes word vectors as ``model.onnx`` and ``tokenizer.json`` in ``folder``.

    ``tokenizer.json`` (Hugging Face ``tokenizers``, a word-level model)
    gives each string one id: its row, after lowercasing when
    ``lowercase``; a string that is not a word of the vocabulary gets the
    id ``len(words)``. ``model.onnx`` takes those ids (``token_ids``,
    ``int64 [batch]``) and returns ``vectors`` (``float32 [batch, dim]``,
    zeros for an unknown word) and ``found`` (``bool [batch]``), as the
    SavedModel's ``serving_default`` does.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer, models, normalizers

    words = list(words)
    vectors = np.asarray(vectors, dtype=np.float32)
    if not words or vectors.shape[0] != len(words):
        raise ValueError(
            f"Pass one row of `vectors` per word, got {vectors.shape[0]} rows for "
            f"{len(words)} words.")
    if ONNX_UNKNOWN in words:
        raise ValueError(f"The vocabulary holds {ONNX_UNKNOWN!r}, the token "
                         "tokenizer.json keeps for unknown words.")
    count, dim = vectors.shape
    table = np.concatenate([vectors, np.zeros((1, dim), np.float32)])
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "token_ids"], ["vectors"], axis=0),
         helper.make_node("Less", ["token_ids", "count"], ["found"])],
        "word_vectors",
        [helper.make_tensor_value_info("token_ids", TensorProto.INT64, ["batch"])],
        [helper.make_tensor_value_info("vectors", TensorProto.FLOAT, ["batch", dim]),
         helper.make_tensor_value_info("found", TensorProto.BOOL, ["batch"])],
        initializer=[numpy_helper.from_array(table, "table"),
                     numpy_helper.from_array(np.array(count, np.int64), "count")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              producer_name="kzoo")
    model.ir_version = 10
    onnx.checker.check_model(model)
    onnx.save(model, f"{folder}/model.onnx")
    vocabulary = {word: i for i, word in enumerate(words)}
    vocabulary[ONNX_UNKNOWN] = count
    tokenizer = Tokenizer(models.WordLevel(vocabulary, unk_token=ONNX_UNKNOWN))
    if lowercase:
        tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.save(f"{folder}/tokenizer.json")
