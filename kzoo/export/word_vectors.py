"""Word vectors as a SavedModel: words in, vectors (and neighbours) out.

A ``tf.Module`` holding the table (a variable, so it is stored under
``variables/`` and not in the graph) and a word → row hash table; it needs
no Keras and no tf-text to load, on any backend.
"""

import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.tokenizers.word_tokenizer import normalize_words

NEIGHBOURS = 10


class _WordVectorsModule(tf.Module):
    def __init__(self, words, vectors, lowercase, neighbours):
        super().__init__()
        vectors = np.asarray(vectors, dtype=np.float32)
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


def export_word_vectors(word_vectors, path, lowercase=False, neighbours=NEIGHBOURS):
    """Writes ``word_vectors`` (a ``kzoo.models.WordVectors``) as a SavedModel.

    Signatures (``words``: a ``tf.string`` batch):

    * ``serving_default``: ``vectors`` ``[batch, dim]`` (zeros for a word
      not in the vocabulary) and ``found`` (bool ``[batch]``);
    * ``most_similar``: the ``neighbours`` most similar words by cosine
      (``[batch, neighbours]`` strings, the word itself left out, as
      gensim's ``most_similar``), their ``scores`` and ``found``.

    Args:
        word_vectors: a ``WordVectors``.
        path: the folder to write (not atomic: ``kzoo.export.saved_model``
            wraps this in its atomic write).
        lowercase: lowercase each word before the lookup (for vectors
            trained on lowercased text).
        neighbours: int. How many neighbours ``most_similar`` returns.
    """
    words = list(word_vectors.index_to_key)
    if not words:
        raise ValueError("There are no word vectors to export (an empty vocabulary).")
    module = _WordVectorsModule(words, word_vectors.vectors, lowercase, neighbours)
    tf.saved_model.save(module, path, signatures={
        "serving_default": module.lookup, "most_similar": module.most_similar})
