"""The vector of a word inside a sentence, at every layer of a model."""

import keras
import numpy as np

from kzoo.analysis.targets import check_span, find_all, find_word


def cosine(a, b):
    """Cosine similarity along the last axis (0 where a vector is zero, NaN
    where one is NaN).

    Example:
    >>> cosine(np.array([[1., 0.], [1., 1.], [np.nan, 0.]]),
    ...        np.array([[2., 0.], [0., 3.], [1., 0.]])).round(3).tolist()
    [1.0, 0.707, nan]
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    dots = np.sum(a * b, axis=-1)
    out = np.where(np.isnan(norms), np.nan, 0.0)
    return np.divide(dots, norms, out=out, where=norms > 0)


class WordInContext:
    """Base class: a word's vectors in context, one per layer of a model.

    Subclasses (``StaticWordInContext``, ``ElmoWordInContext``,
    ``GPTWordInContext``, ``BertWordInContext``; ``word_in_context(model)``
    picks one) set
    ``layer_names`` and implement ``_embed(sentences, spans)``, which gives
    ``[len(sentences), num_layers, dim]`` for target character spans.
    A target given as a word is found by ``find_word`` (whole words, case
    ignored; ``index`` says which occurrence when there are several).

    Args:
        batch_size: int. Sentences per forward pass.
    """

    layer_names = ()

    def __init__(self, batch_size=32):
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"`batch_size` must be a positive int, got {batch_size!r}.")
        self.batch_size = batch_size

    @staticmethod
    def backbone_and_tokenizer(model, tokenizer, tokenizer_name):
        """``(backbone, tokenizer)`` of a backbone or a task holding one; a
        missing ``tokenizer`` is the task's ``preprocessor.tokenizer``, else a
        clear error naming ``tokenizer_name`` (the class to pass)."""
        if tokenizer is None:
            tokenizer = getattr(getattr(model, "preprocessor", None), "tokenizer", None)
            if tokenizer is None:
                raise ValueError(
                    f"Pass the model's `tokenizer` (a {tokenizer_name}, e.g. "
                    f"kzoo.models.{tokenizer_name}.from_preset(...)).")
        return getattr(model, "backbone", model), tokenizer

    @property
    def num_layers(self):
        return len(self.layer_names)

    def _embed(self, sentences, spans):
        raise NotImplementedError

    def vectors_at(self, sentences, spans, verbose=False):
        """The vectors of the targets ``sentences[i][spans[i][0]:spans[i][1]]``.

        Sentences are embedded ``batch_size`` at a time, shortest first (less
        padding); ``verbose=True`` shows a progress bar.

        Returns:
            float array ``[len(sentences), num_layers, dim]``; a row is NaN
            where the model has no vector for its word (a static vocabulary).
        """
        sentences = list(sentences)
        spans = [check_span(s, span) for s, span in zip(sentences, spans, strict=True)]
        if not sentences:
            raise ValueError("No sentences were given: pass at least one.")
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        progress = keras.utils.Progbar(len(sentences)) if verbose else None
        result = None
        for first in range(0, len(order), self.batch_size):
            rows = order[first:first + self.batch_size]
            vectors = self._embed([sentences[i] for i in rows], [spans[i] for i in rows])
            if result is None:
                result = np.zeros((len(sentences),) + vectors.shape[1:], np.float32)
            result[rows] = vectors
            if progress:
                progress.add(len(rows))
        return result

    def word_vectors(self, sentence, word, index=None):
        """``[num_layers, dim]``: the vectors of ``word`` in ``sentence``."""
        return self.vectors_at([sentence], [find_word(sentence, word, index)])[0]

    def similarity(self, word, first, second, index=None):
        """Cosine of ``word`` in sentence ``first`` vs ``second``, per layer.

        Args:
            word: str, or a pair of str when the two sentences write it
                differently (``("bank", "banks")``).
            first, second: str sentences.
            index: None, an int for both sentences, or a pair of them: which
                occurrence of the word (see ``find_word``).

        Returns:
            float array ``[num_layers]``.
        """
        words = (word, word) if isinstance(word, str) else tuple(word)
        indices = index if isinstance(index, (tuple, list)) else (index, index)
        spans = [find_word(s, w, i) for s, w, i in zip((first, second), words, indices)]
        a, b = self.vectors_at([first, second], spans)
        return cosine(a, b)

    def nearest_sentences(self, word, sentence, candidates, layer=-1, topn=5, index=None):
        """The candidate sentences where ``word`` is used most like in ``sentence``.

        Every whole-word occurrence of ``word`` in each candidate is scored by
        the cosine of its vector at ``layer`` with the query's; candidates
        without the word are skipped.

        Returns:
            Up to ``topn`` ``(cosine, candidate, (start, end))``, best first.
        """
        candidates = list(candidates)
        if not candidates:
            raise ValueError("`candidates` is empty: pass the sentences to search.")
        targets = [(text, span) for text in candidates for span in find_all(text, word)]
        if not targets:
            raise ValueError(f"None of the {len(candidates)} candidate sentences "
                             f"contains the word {word!r}.")
        query = self.word_vectors(sentence, word, index)[layer]
        vectors = self.vectors_at([t[0] for t in targets], [t[1] for t in targets])
        scores = cosine(vectors[:, layer], query[None])
        best = np.argsort(-scores, kind="stable")[:topn]
        return [(float(scores[i]), targets[i][0], targets[i][1]) for i in best]
