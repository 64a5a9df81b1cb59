"""The comparison's figures (PNG, matplotlib Agg): per-layer polysemy AUC of
every family on one axis, the probes as bars, the pretraining loss curves.
Each family keeps one colour, in the order of ``results["families"]``."""

import math
import os

from kzoo.analysis.plots import _pyplot, _save

# (key of probe_figures, axis label)
PROBES = (
    ("wordsim353", "WordSim-353\nSpearman (best layer)"),
    ("simlex999", "SimLex-999\nSpearman (best layer)"),
    ("analogy", "Google analogies\naccuracy (best layer)"),
    ("polysemy", "polysemy test AUC\n(layer best on dev)"),
    ("feature_probe", "frozen-feature probe\naccuracy"),
    ("fine_tuning", "fine-tuning\naccuracy"),
)


def colours(results):
    """``{family name: matplotlib colour}``, by the order of the results."""
    return {name: f"C{i}" for i, name in enumerate(results["families"])}


def _finite(value):
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)


def best_layer(layers, values):
    """``(layer name, value)`` of the largest finite value, or ``(None, None)``."""
    best = None
    for name, value in zip(layers or (), values or ()):
        if _finite(value) and (best is None or value > best[1]):
            best = (name, value)
    return best or (None, None)


def scored(words):
    """``{key: n}``: the word pairs (``wordsim353``, ``simlex999``) and
    analogy questions a word-similarity result scored at its best layer."""
    counts = {}
    layers = list(words.get("layers") or ())
    for key in ("wordsim353", "simlex999", "analogy"):
        layer, _ = best_layer(layers, words.get(key))
        if layer is None:
            continue
        i = layers.index(layer)
        if key == "analogy":
            n = (words.get("questions_scored") or [None] * len(layers))[i]
        else:
            n = ((words.get("pairs_scored") or [{}] * len(layers))[i] or {}).get(key)
        if n is not None:
            counts[key] = n
    return counts


def probe_figures(entry):
    """A family's headline figure per probe: ``{key: (value, std, layer)}``
    (value None where the family has no such figure), and under
    ``"scored"`` the pairs and questions the word figures are over.

    Word similarity and analogies: the best layer's score (no held-out set
    picks the layer). Polysemy: the test AUC of the layer with the best
    dev AUC. Feature probe and fine-tuning: the mean accuracy over the
    splits and its standard deviation."""
    figures = {}
    words = entry.get("word_similarity") or {}
    for key in ("wordsim353", "simlex999", "analogy"):
        layer, value = best_layer(words.get("layers"), words.get(key))
        figures[key] = (value, None, layer)
    figures["scored"] = scored(words)
    poly = entry.get("polysemy") or {}
    layer, _ = best_layer(poly.get("layers"), poly.get("dev_auc"))
    value = None
    if layer is not None:
        value = poly["test_auc"][list(poly["layers"]).index(layer)]
    figures["polysemy"] = (value if _finite(value) else None, None, layer)
    for key in ("feature_probe", "fine_tuning"):
        probe = entry.get(key) or {}
        figures[key] = (probe.get("mean"), probe.get("std"), probe.get("layer"))
    return figures


def plot_polysemy(results, path):
    """Per-layer test AUC (same vs different WordNet sense) of every family on
    one axis; a one-layer (static) family is a dashed level across the chart."""
    plt = _pyplot()
    families = results["families"]
    colour = colours(results)
    width = max([len((e.get("polysemy") or {}).get("layers") or ()) for e in
                 families.values()] + [1])
    fig, ax = plt.subplots(figsize=(10, 4.8), dpi=120)
    ax.axhline(0.5, color="grey", lw=1, ls=":", label="chance (0.5)")
    for name, entry in families.items():
        poly = entry.get("polysemy") or {}
        layers, auc = list(poly.get("layers") or ()), list(poly.get("test_auc") or ())
        if not layers:
            continue
        label = f"{entry.get('title', name)}: " + ", ".join(layers)
        if len(layers) == 1:
            ax.plot([0, width - 1], [auc[0]] * 2, ls="--", lw=2, color=colour[name],
                    label=label)
        else:
            ax.plot(range(len(layers)), auc, marker="o", lw=2, color=colour[name],
                    label=label)
    ax.set_xticks(range(width))
    ax.set_xlabel("layer index (0 = the input layer; each family's layer names in "
                  "the legend, in order)")
    ax.set_ylabel("test ROC AUC, same vs different sense")
    ax.set_title("Word in context per layer: is the cosine higher for the same sense?")
    return _save(plt, fig, ax, path, "family: layers")


def plot_probes(results, path):
    """The probes' headline figures as grouped bars, one colour per family,
    error bars one standard deviation over the splits where there are
    several (feature probe, fine-tuning); a missing figure is no bar."""
    plt = _pyplot()
    families = results["families"]
    colour = colours(results)
    figures = {name: probe_figures(entry) for name, entry in families.items()}
    n = max(len(families), 1)
    bar = 0.8 / n
    fig, ax = plt.subplots(figsize=(11, 4.8), dpi=120)
    for i, (name, entry) in enumerate(families.items()):
        xs, ys, errs = [], [], []
        for j, (key, _) in enumerate(PROBES):
            value, std, _ = figures[name][key]
            if _finite(value):
                xs.append(j - 0.4 + bar * (i + 0.5))
                ys.append(value)
                errs.append(std if _finite(std) else None)
        ax.bar(xs, ys, bar * 0.95, color=colour[name], label=entry.get("title", name))
        spread = [(x, y, e) for x, y, e in zip(xs, ys, errs) if e]
        if spread:
            ax.errorbar(*zip(*spread), fmt="none", ecolor="black", capsize=3)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(range(len(PROBES)))
    ax.set_xticklabels([label for _, label in PROBES], fontsize=8)
    ax.set_ylabel("score (Spearman ρ, accuracy or AUC)")
    ax.set_title("The same probes for every family (error bars: std over 5 splits)")
    return _save(plt, fig, ax, path, "family")


def plot_losses(results, path):
    """Each family's pretraining loss against training seconds, one panel a
    family (the losses are different objectives, not comparable in size)."""
    plt = _pyplot()
    families = results["families"]
    colour = colours(results)
    n = max(len(families), 1)
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n, 3.4), dpi=120, squeeze=False)
    for ax, (name, entry) in zip(axes[0], families.items()):
        curve = (entry.get("cost") or {}).get("loss_curve") or []
        ax.plot([p[0] for p in curve], [p[2] for p in curve], color=colour[name], lw=1.5)
        ax.set_title(entry.get("title", name))
        ax.set_xlabel("training seconds")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("pretraining loss (its own objective)")
    fig.suptitle("Pretraining loss during the budget")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def write_plots(results, output):
    """The three PNGs in folder ``output``; returns ``{name: path}``."""
    paths = {"polysemy": os.path.join(output, "polysemy_auc_per_layer.png"),
             "probes": os.path.join(output, "probes.png"),
             "loss": os.path.join(output, "pretraining_loss.png")}
    plot_polysemy(results, paths["polysemy"])
    plot_probes(results, paths["probes"])
    plot_losses(results, paths["loss"])
    return paths
