"""The polysemy plots (PNG files, matplotlib)."""

import numpy as np


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("The plots need matplotlib: pip install 'kzoo[analysis]' "
                          "(or pip install matplotlib).") from None
    return plt


def plot_auc_per_layer(rows, path, title=None):
    """ROC AUC per layer, one line per model (a static model is one dashed
    level across the chart); the legend gives each model's test pairs.

    Args:
        rows: ``LayerScore`` list (``evaluate_word_in_context``), in layer order.
        path: the PNG to write.
    """
    plt = _pyplot()
    models = list(dict.fromkeys(r.model for r in rows))
    width = max(sum(r.model == m for r in rows) for m in models)
    fig, ax = plt.subplots(figsize=(10, 4.8), dpi=120)
    ax.axhline(0.5, color="grey", lw=1, ls=":", label="chance (0.5)")
    for model in models:
        mine = [r for r in rows if r.model == model]
        label = f"{model} ({mine[0].pairs})"
        if len(mine) == 1:
            ax.plot([0, width - 1], [mine[0].auc] * 2, ls="--", lw=2, label=label)
        else:
            ax.plot(range(len(mine)), [r.auc for r in mine], marker="o", lw=2, label=label)
    ax.set_xticks(range(width))
    ax.set_xlabel("layer (0 = the context-free layer: GPT's and BERT's embeddings, "
                  "ELMo's token layer)")
    ax.set_ylabel("ROC AUC, same vs different sense")
    ax.set_title(title or "Word in context: is the cosine higher for the same sense?")
    return _save(plt, fig, ax, path, "model (test pairs scored)")


def _save(plt, fig, ax, path, legend_title):
    """Grid, the legend outside the axes on the right, then the PNG."""
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              title=legend_title, title_fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def pca_2d(vectors):
    """The first two principal components of ``vectors`` (rows), and the
    projection function for other points in the same space.

    Example:
    >>> points, project = pca_2d(np.array([[0., 0.], [2., 0.], [4., 0.]]))
    >>> np.abs(points[:, 0]).round(3).tolist(), bool(np.abs(points[:, 1]).max() < 1e-9)
    ([2.0, 0.0, 2.0], True)
    """
    vectors = np.asarray(vectors, np.float64)
    mean = vectors.mean(axis=0)
    _, _, vt = np.linalg.svd(vectors - mean, full_matrices=False)
    axes = vt[:2]

    def project(x):
        return (np.asarray(x, np.float64) - mean) @ axes.T

    return project(vectors), project


def plot_word_senses(vectors, senses, path, word, layer, max_senses=8):
    """A 2-D PCA of one word's vectors in many sentences, coloured by sense.

    The mean of all the vectors is marked with a star: the one point a
    static model (word2vec, GloVe) gives the word in every sentence. Verb
    senses (``verb.*``) are triangles, the others circles ("other": squares).

    Args:
        vectors: float ``[num_uses, dim]``, the word's vectors at one layer.
        senses: str per use (its sense or supersense).
        path: the PNG to write.
        word, layer: str, for the title.
        max_senses: the most frequent senses get colours, the rest are "other".
    """
    plt = _pyplot()
    senses = list(senses)
    points, project = pca_2d(vectors)
    counts = {s: senses.count(s) for s in dict.fromkeys(senses)}
    kept = sorted(counts, key=lambda s: -counts[s])[:max_senses]
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=120)
    groups = kept + (["other"] if len(kept) < len(counts) else [])
    for sense in groups:
        mask = np.array([(s if s in kept else "other") == sense for s in senses])
        ax.scatter(points[mask, 0], points[mask, 1], s=40, alpha=0.85,
                   marker="s" if sense == "other" else "^" if sense.startswith("verb.")
                   else "o",
                   color="lightgrey" if sense == "other" else None,
                   label=f"{sense} ({int(mask.sum())})")
    star = project(np.mean(vectors, axis=0)[None])[0]
    ax.scatter([star[0]], [star[1]], marker="*", s=320, color="black", zorder=5,
               label=f"static vector: one point\nfor all {len(senses)} uses (their mean)")
    ax.set_xlabel("principal component 1")
    ax.set_ylabel("principal component 2")
    ax.set_title(f'"{word}" in {len(senses)} WordNet examples: {layer}, '
                 "coloured by supersense")
    return _save(plt, fig, ax, path, "WordNet supersense (uses)")
