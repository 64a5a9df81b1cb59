"""Word similarity and analogies from each layer's context-averaged word
vectors.

A word's vector at a layer is the mean of its in-context vectors
(``WordInContext.vectors_at``) over up to ``max_contexts`` of its
occurrences in the training text, each cut to a window of words around it.
For static word vectors (one layer, the same vector in every context) the
mean is the word's row of the table. Every model is scored on the same
words: the evaluation sets' words that the corpus holds often enough
(``evaluation_vocabulary``).
"""

import collections
import random
import re

import numpy as np

from kzoo.analysis.compare.probes_statistics import finite
from kzoo.datasets import evaluation_file

#: a whole word as ``kzoo.analysis.find_all`` matches one: letters, digits
#: and "_" with no letter, digit, "_" or "-" on either side
WORD = re.compile(r"(?<![\w-])\w+(?![\w-])")
WORD_PAIRS = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}
ANALOGIES = "questions-words.txt"
#: fewer pairs than this give no correlation (None)
MIN_PAIRS = 3


def read_word_pairs(name):
    """``[(word1, word2, score)]`` of ``wordsim353`` or ``simlex999``,
    lowercased (lines starting with ``#`` and lines that do not parse are
    skipped, as ``WordVectors.evaluate_word_pairs`` does)."""
    pairs = []
    with open(evaluation_file(WORD_PAIRS[name]), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            parts = line.split("\t")
            try:
                a, b, score = parts
                pairs.append((a.lower(), b.lower(), float(score)))
            except ValueError:
                continue
    return pairs


def read_analogies():
    """The Google analogy questions, each a tuple of four lowercased words."""
    with open(evaluation_file(ANALOGIES), encoding="utf-8", errors="replace") as f:
        return [tuple(w.lower() for w in line.split()) for line in f
                if not line.startswith(": ") and len(line.split()) == 4]


def evaluation_words():
    """Every word of WordSim-353, SimLex-999 and the Google analogies, lowercased."""
    words = {w for name in WORD_PAIRS for a, b, _ in read_word_pairs(name) for w in (a, b)}
    return words | {w for question in read_analogies() for w in question}


def count_words(texts):
    """A ``Counter`` of the lowercased whole words of ``texts``."""
    counts = collections.Counter()
    for text in texts:
        counts.update(m.group().lower() for m in WORD.finditer(text))
    return counts


def evaluation_vocabulary(texts, min_count=5):
    """The words every model is scored on: the evaluation sets' words that
    occur at least ``min_count`` times in ``texts`` (whole words, case
    ignored), sorted.

    Args:
        texts: iterable of str (the training part of the corpus).
        min_count: int >= 1.

    Returns:
        A sorted list of lowercased words.
    """
    if not isinstance(min_count, int) or min_count < 1:
        raise ValueError(f"`min_count` must be a positive int, got {min_count!r}.")
    counts = count_words(texts)
    return sorted(w for w in evaluation_words() if counts[w] >= min_count)


def cut_window(text, start, end, window):
    """``(context, (start, end))``: ``text`` cut to ``window`` whitespace-
    separated pieces on each side of the span, the span moved with it."""
    pieces = [m.span() for m in re.finditer(r"\S+", text)]
    at = next(i for i, (s, e) in enumerate(pieces) if s <= start < e)
    first = pieces[max(0, at - window)][0]
    last = pieces[min(len(pieces) - 1, at + window)][1]
    return text[first:last], (start - first, end - first)


def vectors_in_windows(wic, contexts, window, chunk=256):
    """``wic.vectors_at`` of ``contexts`` (``[(text, (start, end))]``), each
    cut to ``window`` words on either side of its word; where a chunk of
    ``chunk`` contexts is refused (a window longer than the model takes),
    that chunk is cut again to half the window, down to the word alone.

    Returns:
        ``(vectors, smallest window used)``.
    """
    parts, used = [], window
    for first in range(0, len(contexts), chunk):
        part, size = contexts[first:first + chunk], window
        while True:
            cut = [cut_window(text, start, end, size) for text, (start, end) in part]
            try:
                parts.append(wic.vectors_at([c for c, _ in cut], [s for _, s in cut]))
                break
            except ValueError:
                if size == 0:
                    raise
                size //= 2
        used = min(used, size)
    return np.concatenate(parts), used


def word_contexts(texts, vocabulary, max_contexts=8, window=16, seed=0):
    """Up to ``max_contexts`` occurrences of each vocabulary word, drawn
    uniformly from all its occurrences in ``texts`` (reservoir sampling from
    ``random.Random(seed)``, so the same texts and seed give the same
    contexts), each cut to ``window`` words on either side.

    Returns:
        ``{word: [(context, (start, end)), ...]}`` for the words found (in
        the order of ``texts``), the span being the word in its context.
    """
    if not isinstance(max_contexts, int) or max_contexts < 1:
        raise ValueError(f"`max_contexts` must be a positive int, got {max_contexts!r}.")
    if not isinstance(window, int) or window < 0:
        raise ValueError(f"`window` must be an int >= 0, got {window!r}.")
    wanted = set(vocabulary)
    rng = random.Random(seed)
    seen, chosen = collections.Counter(), collections.defaultdict(list)
    texts = list(texts)
    for t, text in enumerate(texts):
        for m in WORD.finditer(text):
            word = m.group().lower()
            if word not in wanted:
                continue
            seen[word] += 1
            if seen[word] <= max_contexts:
                chosen[word].append((t, m.start(), m.end()))
            else:
                j = rng.randrange(seen[word])
                if j < max_contexts:
                    chosen[word][j] = (t, m.start(), m.end())
    return {word: [cut_window(texts[t], s, e, window) for t, s, e in sorted(places)]
            for word, places in chosen.items()}


def context_word_vectors(wic, contexts, window=None):
    """Each word's vector at each layer: the mean of its in-context vectors.

    Args:
        wic: a ``kzoo.analysis.WordInContext``.
        contexts: ``{word: [(sentence, (start, end)), ...]}`` (``word_contexts``).
        window: None (the contexts as they are) or an int: each context cut
            to that many words on either side, fewer where the model refuses
            it as too long (``vectors_in_windows``).

    Returns:
        ``(words, vectors, counts)``: the words (sorted), float64
        ``[num_layers, len(words), dim]`` vectors (NaN where no context gave
        one: a word outside a static model's vocabulary) and int
        ``[num_layers, len(words)]`` the contexts each mean is over.
    """
    return _context_word_vectors(wic, contexts, window)[:3]


def _context_word_vectors(wic, contexts, window):
    words = sorted(w for w in contexts if contexts[w])
    if not words:
        raise ValueError("No word has a context: none of the vocabulary is in the "
                         "texts. Pass the corpus the models were trained on.")
    targets = [(i, c) for i, w in enumerate(words) for c in contexts[w]]
    used = window
    if window is None:
        found = wic.vectors_at([c[0] for _, c in targets], [c[1] for _, c in targets])
    else:
        found, used = vectors_in_windows(wic, [c for _, c in targets], window)
    found = found.astype(np.float64)
    owner = np.array([i for i, _ in targets])
    ok = ~np.isnan(found).any(axis=-1)  # [targets, layers]
    sums = np.zeros((len(words),) + found.shape[1:])
    np.add.at(sums, owner, np.where(ok[..., None], found, 0.0))
    counts = np.zeros((len(words), found.shape[1]), np.int64)
    np.add.at(counts, owner, ok)
    with np.errstate(invalid="ignore", divide="ignore"):
        vectors = sums / counts[..., None]
    vectors[counts == 0] = np.nan
    return words, vectors.transpose(1, 0, 2), counts.T, used


def _layer_scores(words, vectors):
    """WordSim-353 and SimLex-999 Spearman, analogy accuracy and the pairs
    and questions scored, for one layer's ``WordVectors``."""
    from kzoo.models import WordVectors

    known = ~np.isnan(vectors).any(axis=-1)
    if not known.any():
        return {"wordsim353": None, "simlex999": None, "analogy": None,
                "pairs_scored": {name: 0 for name in WORD_PAIRS}, "questions_scored": 0}
    wv = WordVectors(vectors[known], [w for w, k in zip(words, known) if k])
    have = set(wv.index_to_key)
    scores, scored = {}, {}
    for name, file in WORD_PAIRS.items():
        scored[name] = sum(a in have and b in have for a, b, _ in read_word_pairs(name))
        if scored[name] < MIN_PAIRS:
            scores[name] = None
            continue
        _, spearman, _ = wv.evaluate_word_pairs(evaluation_file(file))
        scores[name] = finite(spearman[0])
    accuracy, sections = wv.evaluate_word_analogies(evaluation_file(ANALOGIES))
    answered = len(sections[-1]["correct"]) + len(sections[-1]["incorrect"])
    return {"wordsim353": scores["wordsim353"], "simlex999": scores["simlex999"],
            "analogy": finite(accuracy) if answered else None,
            "pairs_scored": scored, "questions_scored": answered}


def word_similarity(wic, contexts, vocabulary, max_contexts=8, window=16, seed=0):
    """Word similarity and analogies per layer, from context-averaged vectors.

    Each layer's word vectors (``context_word_vectors`` over
    ``word_contexts``) make a ``kzoo.models.WordVectors`` of the vocabulary
    words it has a vector for; on it, the Spearman correlation with
    WordSim-353 and SimLex-999 (``evaluate_word_pairs``) and the accuracy on
    the Google analogies whose four words it has (``evaluate_word_analogies``;
    the answer is searched among those words only, the same for every model).

    Args:
        wic: a ``kzoo.analysis.WordInContext``.
        contexts: iterable of str, the training text the contexts are drawn from.
        vocabulary: the words scored (``evaluation_vocabulary``), the same
            for every model.
        max_contexts: int. Most occurrences averaged per word.
        window: int. Words kept on either side of an occurrence.
        seed: int. Which occurrences (``word_contexts``).

    Returns:
        A JSON-ready dict: ``layers`` (names), ``wordsim353``, ``simlex999``
        and ``analogy`` (one float or None per layer: None where fewer than
        ``MIN_PAIRS`` pairs, or no question, could be scored), ``pairs_covered`` (pairs of each set with
        both words in the vocabulary), ``questions_covered`` (questions with
        all four), ``words`` (the vocabulary size), per layer
        ``words_with_vector``, ``pairs_scored`` and ``questions_scored``, and
        the settings (``smallest_window``: the fewest words on either side
        that a context was cut to, where the model took no longer one).
    """
    vocabulary = sorted(set(vocabulary))
    if not vocabulary:
        raise ValueError("`vocabulary` is empty: compute it with "
                         "evaluation_vocabulary(texts, min_count) on the training text.")
    found = word_contexts(contexts, vocabulary, max_contexts, window, seed)
    words, vectors, counts, used = _context_word_vectors(wic, found, window)
    known = set(vocabulary)
    layers = [_layer_scores(words, vectors[i]) for i in range(len(wic.layer_names))]
    return {
        "layers": list(wic.layer_names),
        "wordsim353": [s["wordsim353"] for s in layers],
        "simlex999": [s["simlex999"] for s in layers],
        "analogy": [s["analogy"] for s in layers],
        "pairs_covered": {name: sum(a in known and b in known
                                    for a, b, _ in read_word_pairs(name))
                          for name in WORD_PAIRS},
        "questions_covered": sum(all(w in known for w in q) for q in read_analogies()),
        "words": len(vocabulary),
        "words_with_vector": [int((c > 0).sum()) for c in counts],
        "pairs_scored": [s["pairs_scored"] for s in layers],
        "questions_scored": [s["questions_scored"] for s in layers],
        "max_contexts": max_contexts,
        "window": window,
        "smallest_window": used,
        "contexts": int(counts.max(axis=0).sum()),
    }
