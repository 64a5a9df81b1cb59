"""Word in context: each layer's polysemy AUC on the WordNet pairs, as
``kzoo polysemy`` measures it."""

import itertools

import numpy as np

from kzoo.analysis.compare.probes_words import vectors_in_windows
from kzoo.analysis.evaluation import pair_cosines, score_layers
from kzoo.analysis.word_in_context_pairs import (
    WordInContextPairs,
    build_word_in_context_pairs,
)
from kzoo.analysis.wordnet import read_wordnet_examples


def _whole_lemmas(pairs, limit):
    """The first pairs of ``pairs``, whole lemmas only (each lemma's pairs
    are as many same-sense as different-sense), at most ``limit``."""
    kept = []
    for _, group in itertools.groupby(pairs, key=lambda p: p.first.lemma):
        group = list(group)
        if len(kept) + len(group) > limit:
            break
        kept += group
    return kept


def wordnet_pairs(max_pairs=None, max_pairs_per_lemma=2, seed=0, wordnet=None):
    """The WordNet same-sense / different-sense pairs every model is scored
    on (``build_word_in_context_pairs`` over ``read_wordnet_examples``).

    Args:
        max_pairs: None, or an int: at most ``max_pairs // 2`` pairs in
            each of dev and test, whole lemmas in the seeded order
            ``build_word_in_context_pairs`` shuffled them into (so still
            balanced), to keep the probe cheap.
        max_pairs_per_lemma, seed: see ``build_word_in_context_pairs``.
        wordnet: the WordNet database folder (default ``/usr/share/wordnet``).

    Returns:
        A ``WordInContextPairs``.
    """
    pairs = build_word_in_context_pairs(read_wordnet_examples(wordnet),
                                        max_pairs_per_lemma=max_pairs_per_lemma,
                                        seed=seed)
    if max_pairs is None:
        return pairs
    if not isinstance(max_pairs, int) or max_pairs < 4:
        raise ValueError(f"`max_pairs` must be None or an int >= 4 (pairs in dev and "
                         f"test together), got {max_pairs!r}.")
    return WordInContextPairs(dev=_whole_lemmas(pairs.dev, max_pairs // 2),
                              test=_whole_lemmas(pairs.test, max_pairs // 2))


class _CutToFit:
    """``wic``'s ``vectors_at`` on whole sentences where the model takes
    them, each chunk that it refuses (a sentence longer than its sequence
    length) cut to fewer words around the target (``vectors_in_windows``)."""

    def __init__(self, wic):
        self.wic = wic
        self.window = None

    def vectors_at(self, sentences, spans, verbose=False):
        contexts = list(zip(sentences, spans))
        whole = max(len(s.split()) for s in sentences)
        vectors, used = vectors_in_windows(self.wic, contexts, whole)
        self.window = used if used < whole else None
        return vectors


def polysemy(wic, pairs):
    """Per-layer polysemy scores (``kzoo.analysis.evaluate_word_in_context``):
    the ROC AUC of the cosine of a word's two in-context vectors for "same
    sense", on dev and test, and the test accuracy at the dev-tuned
    threshold.

    Args:
        wic: a ``kzoo.analysis.WordInContext``.
        pairs: ``wordnet_pairs(...)``, the same for every model.

    Returns:
        A JSON-ready dict: ``layers``, ``dev_auc``, ``test_auc``,
        ``test_accuracy``, ``threshold`` (one per layer; None for a layer
        with vectors for too few pairs to score, such as a static
        vocabulary that misses the WordNet words), ``test_pairs`` (per
        layer: the pairs it had both vectors for), ``pairs`` (each
        split's statistics) and ``window``: None where every sentence was
        embedded whole, else the words kept on either side of the target
        in the sentences of a model that takes shorter text.
    """
    if not pairs.dev or not pairs.test:
        raise ValueError("The pairs need a dev and a test part: build them with "
                         "wordnet_pairs() (max_pairs >= 4).")
    fitted = _CutToFit(wic)
    cosines, windows = {}, []
    for split in ("dev", "test"):
        cosines[split] = pair_cosines(fitted, getattr(pairs, split))
        windows.append(fitted.window)
    labels = {split: [p.label for p in getattr(pairs, split)] for split in ("dev", "test")}
    rows = []
    for i, layer in enumerate(wic.layer_names):
        try:
            rows += score_layers("model", [layer], cosines["dev"][:, i:i + 1], labels["dev"],
                                 cosines["test"][:, i:i + 1], labels["test"])
        except (ValueError, IndexError):  # too few pairs with both vectors
            rows.append(None)
    return {
        "layers": list(wic.layer_names),
        "dev_auc": [r and r.dev_auc for r in rows],
        "test_auc": [r and r.auc for r in rows],
        "test_accuracy": [r and r.accuracy for r in rows],
        "threshold": [r and r.threshold for r in rows],
        "test_pairs": [int((~np.isnan(cosines["test"][:, i])).sum())
                       for i in range(len(rows))],
        "pairs": pairs.statistics(),
        "window": min((w for w in windows if w is not None), default=None),
    }
