"""word2vec / GloVe: one vector per word, whatever the context."""

import numpy as np

from kzoo.analysis.word_in_context import WordInContext


class StaticWordInContext(WordInContext):
    """The ``WordInContext`` of static word vectors: one layer, one vector
    per word type, so the same word has the same vector in every sentence.

    The target is looked up as written, then lowercased; a word in neither
    form has a NaN vector (``vectors_at``) or raises a ``KeyError`` naming it
    (``word_vectors`` and ``similarity``).

    Args:
        word_vectors: a ``kzoo.models.WordVectors``.
        name: str. The layer's name in tables and plots.

    Example:
    >>> wv = kzoo.models.WordVectors(np.eye(3), ["bank", "river", "money"])
    >>> wic = StaticWordInContext(wv)
    >>> wic.similarity("bank", "the river bank", "the Bank lends money").tolist()
    [1.0]
    """

    def __init__(self, word_vectors, name="static vector", batch_size=1024):
        super().__init__(batch_size=batch_size)
        self.wv = word_vectors
        self.layer_names = (name,)

    def _row(self, word):
        for form in (word, word.lower()):
            if form in self.wv:
                return self.wv.get_index(form)
        return None

    def _embed(self, sentences, spans):
        out = np.full((len(sentences), 1, self.wv.vector_size), np.nan, np.float32)
        for i, (sentence, (start, end)) in enumerate(zip(sentences, spans)):
            row = self._row(sentence[start:end])
            if row is not None:
                out[i, 0] = self.wv.vectors[row]
        return out

    def word_vectors(self, sentence, word, index=None):
        vectors = super().word_vectors(sentence, word, index)
        if np.isnan(vectors).any():
            self.wv.get_index(word)  # raises the KeyError that names the word
        return vectors

    def similarity(self, word, first, second, index=None):
        for w in (word,) if isinstance(word, str) else word:
            if self._row(w) is None:
                self.wv.get_index(w)
        return super().similarity(word, first, second, index)
