"""The polysemy evaluation end to end: pairs, scores per layer, plots."""

import os

from kzoo.analysis.evaluation import evaluate_word_in_context, format_table
from kzoo.analysis.models import display_name, load_word_in_context
from kzoo.analysis.plots import plot_auc_per_layer, plot_word_senses
from kzoo.analysis.static_word_in_context import StaticWordInContext
from kzoo.analysis.word_in_context_pairs import build_word_in_context_pairs
from kzoo.analysis.wordnet import read_wordnet_examples

AUC_PLOT = "polysemy_auc_per_layer.png"
SENSES_PLOT = "polysemy_senses_{word}.png"


def sense_vectors(wic, examples, lemma, parts_of_speech, layer):
    """The vectors of ``lemma`` at ``layer`` in all its WordNet examples
    where it is written as the lemma itself (``"play"``, not ``"played"``:
    the inflection would be the main difference), for the parts of speech
    in ``parts_of_speech`` (``"nv"``), and each example's supersense."""
    mine = [e for e in examples if e.lemma == lemma and e.pos in parts_of_speech
            and e.sentence[e.start:e.end].lower() == lemma]
    if len(mine) < 3:
        raise ValueError(f"WordNet has {len(mine)} examples of {lemma!r} "
                         f"({parts_of_speech}) written as is: pick a word with at "
                         "least 3.")
    vectors = wic.vectors_at([e.sentence for e in mine], [(e.start, e.end) for e in mine])
    return vectors[:, layer], [e.supersense for e in mine]


def run_polysemy_evaluation(models, output, wordnet=None, max_pairs_per_lemma=2,
                            same_form=False, seed=0, plot_word=("play", "nv"),
                            verbose=True, print_fn=print):
    """Builds the WordNet pairs, scores every layer of every model, prints
    the table and writes the two plots into ``output``.

    Args:
        models: list of names / paths (``load_word_in_context``) or
            ``(name, WordInContext)`` tuples.
        output: folder for the PNG files.
        wordnet: WordNet database folder (default ``/usr/share/wordnet``).
        max_pairs_per_lemma, same_form, seed: see ``build_word_in_context_pairs``.
        plot_word: ``(lemma, parts of speech)`` for the PCA plot, drawn at the layer with
            the best dev AUC among the contextual models.

    Returns:
        ``(rows, paths)``: the ``LayerScore`` list and the written plots.
    """
    if not models:
        raise ValueError("No models to evaluate: pass at least one.")
    examples = read_wordnet_examples(wordnet)
    pairs = build_word_in_context_pairs(
        examples, max_pairs_per_lemma=max_pairs_per_lemma, same_form=same_form,
        seed=seed)
    stats = pairs.statistics()
    for split, s in stats.items():
        print_fn(f"WordNet pairs, {split}: {s['pairs']} ({s['same']} same sense, "
                 f"{s['different']} different supersense), {s['lemmas']} lemmas, "
                 f"{s['senses']} senses")
    rows, loaded = [], {}
    for model in models:
        name, wic = model if isinstance(model, tuple) else (
            display_name(model), load_word_in_context(model))
        layers = "1 layer" if wic.num_layers == 1 else f"{wic.num_layers} layers"
        print_fn(f"embedding the targets with {name} ({layers})")
        rows += evaluate_word_in_context(wic, pairs, name, verbose=verbose)
        loaded[name] = wic
    print_fn(format_table(rows))

    os.makedirs(output, exist_ok=True)
    paths = [plot_auc_per_layer(rows, os.path.join(output, AUC_PLOT))]
    contextual = [r for r in rows
                  if not isinstance(loaded[r.model], StaticWordInContext)]
    if contextual:
        best = max(contextual, key=lambda r: r.dev_auc)
        wic = loaded[best.model]
        layer = wic.layer_names.index(best.layer)
        vectors, senses = sense_vectors(wic, examples, *plot_word, layer)
        path = os.path.join(output, SENSES_PLOT.format(word=plot_word[0]))
        paths.append(plot_word_senses(vectors, senses, path, plot_word[0],
                                      f"{best.model}, {best.layer}"))
    for path in paths:
        print_fn(f"wrote {path}")
    return rows, paths
