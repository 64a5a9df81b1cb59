"""Scoring word-in-context pairs: ROC AUC and a tuned cosine threshold."""

import dataclasses

import numpy as np


def roc_auc(scores, labels):
    """Area under the ROC curve: the chance that a random positive scores
    above a random negative, ties counting one half (Mann-Whitney U).

    Example:
    >>> roc_auc([0.9, 0.5, 0.5, 0.1], [1, 1, 0, 0])
    0.875
    """
    from scipy.stats import rankdata  # a dependency of jax, so always installed

    scores, labels = np.asarray(scores, np.float64), np.asarray(labels).astype(bool)
    positives, negatives = labels.sum(), (~labels).sum()
    if positives == 0 or negatives == 0:
        raise ValueError("ROC AUC needs both positive and negative pairs, got "
                         f"{positives} and {negatives}.")
    ranks = rankdata(scores)  # ties get their average rank
    return float((ranks[labels].sum() - positives * (positives + 1) / 2)
                 / (positives * negatives))


def best_threshold(scores, labels):
    """The threshold ``t`` for "same sense if ``score >= t``" with the best
    accuracy on these pairs (the midpoint between two neighbouring scores;
    the smallest such ``t`` on ties), and that accuracy.

    Example:
    >>> best_threshold([0.9, 0.8, 0.3, 0.1], [1, 0, 1, 0])
    (0.2, 0.75)
    """
    scores, labels = np.asarray(scores, np.float64), np.asarray(labels).astype(bool)
    values = np.unique(scores)
    candidates = np.concatenate([[values[0]], (values[1:] + values[:-1]) / 2,
                                 [values[-1] + 1.0]])
    accuracies = [np.mean((scores >= t) == labels) for t in candidates]
    best = int(np.argmax(accuracies))
    return float(candidates[best]), float(accuracies[best])


@dataclasses.dataclass
class LayerScore:
    """One model layer on the word-in-context pairs."""

    model: str
    layer: str
    pairs: int          # test pairs the model had a vector for (both words)
    auc: float          # ROC AUC of the cosine on those test pairs
    accuracy: float     # test accuracy at the dev-tuned threshold
    threshold: float
    dev_pairs: int
    dev_auc: float


def pair_cosines(wic, pairs, verbose=False):
    """``[len(pairs), num_layers]`` cosines of each pair's two targets,
    rounded to 6 decimals (NaN where the model has no vector for a word).
    Each distinct target is embedded once."""
    from kzoo.analysis.word_in_context import cosine

    targets = {}
    for pair in pairs:
        for e in (pair.first, pair.second):
            targets.setdefault((e.sentence, e.start, e.end), len(targets))
    if not targets:
        raise ValueError("No pairs were given: build them with "
                         "build_word_in_context_pairs(read_wordnet_examples()).")
    keys = list(targets)
    vectors = wic.vectors_at([k[0] for k in keys], [k[1:] for k in keys], verbose=verbose)
    first = [targets[(p.first.sentence, p.first.start, p.first.end)] for p in pairs]
    second = [targets[(p.second.sentence, p.second.start, p.second.end)] for p in pairs]
    with np.errstate(invalid="ignore"):
        cosines = cosine(vectors[first], vectors[second])
    # The vectors are float32: below 1e-6 a difference is rounding (a word's
    # one static vector gives 1 +- 2e-16 by word), which would break the ties
    # that make a context-free layer score 0.5.
    return np.round(cosines, 6)


def score_layers(model, layer_names, dev_cosines, dev_labels, test_cosines, test_labels):
    """A ``LayerScore`` per layer: the threshold is tuned on dev, the AUC
    and the accuracy are measured on test; pairs with a NaN cosine are left
    out (and not counted)."""
    dev_labels, test_labels = np.asarray(dev_labels), np.asarray(test_labels)
    rows = []
    for i, layer in enumerate(layer_names):
        dev_ok = ~np.isnan(dev_cosines[:, i])
        test_ok = ~np.isnan(test_cosines[:, i])
        dev_s, dev_y = dev_cosines[dev_ok, i], dev_labels[dev_ok]
        test_s, test_y = test_cosines[test_ok, i], test_labels[test_ok]
        threshold, _ = best_threshold(dev_s, dev_y)
        rows.append(LayerScore(
            model=model, layer=layer, pairs=int(test_ok.sum()),
            auc=roc_auc(test_s, test_y),
            accuracy=float(np.mean((test_s >= threshold) == test_y.astype(bool))),
            threshold=threshold, dev_pairs=int(dev_ok.sum()),
            dev_auc=roc_auc(dev_s, dev_y)))
    return rows


def evaluate_word_in_context(wic, pairs, model_name, verbose=False):
    """Every layer of ``wic`` on ``pairs`` (a ``WordInContextPairs``)."""
    cosines = {name: pair_cosines(wic, getattr(pairs, name), verbose)
               for name in ("dev", "test")}
    return score_layers(model_name, wic.layer_names,
                        cosines["dev"], [p.label for p in pairs.dev],
                        cosines["test"], [p.label for p in pairs.test])


def format_table(rows):
    """A Markdown table of ``LayerScore`` rows."""
    lines = ["| model | layer | test pairs | ROC AUC | accuracy | threshold | dev AUC |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.model} | {r.layer} | {r.pairs} | {r.auc:.3f} | "
                     f"{r.accuracy:.3f} | {r.threshold:.4f} | {r.dev_auc:.3f} |")
    return "\n".join(lines)
