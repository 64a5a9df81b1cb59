"""Word-in-context pairs: two sentences with one word, same sense or not."""

import collections
import dataclasses
import itertools
import random


@dataclasses.dataclass(frozen=True)
class WordInContextPair:
    """Two usage examples (``SenseExample``) of one lemma and part of speech;
    ``label`` is 1 when both are the same synset, 0 otherwise."""

    first: object
    second: object
    label: int


@dataclasses.dataclass
class WordInContextPairs:
    """Balanced same-sense / different-sense pairs, split by lemma."""

    dev: list
    test: list

    def statistics(self):
        """Per split: ``pairs``, ``same``, ``different``, ``lemmas`` and
        ``senses`` (distinct synsets in its pairs)."""
        stats = {}
        for name, pairs in (("dev", self.dev), ("test", self.test)):
            examples = [e for p in pairs for e in (p.first, p.second)]
            stats[name] = {
                "pairs": len(pairs),
                "same": sum(p.label for p in pairs),
                "different": sum(1 - p.label for p in pairs),
                "lemmas": len({e.lemma for e in examples}),
                "senses": len({e.synset for e in examples}),
            }
        return stats


def _form(example):
    return example.sentence[example.start:example.end].lower()


def _candidate_pairs(examples, coarse, same_form):
    same, different = [], []
    for a, b in itertools.combinations(examples, 2):
        if a.sentence == b.sentence or (same_form and _form(a) != _form(b)):
            continue
        if a.synset == b.synset:
            same.append(WordInContextPair(a, b, 1))
        elif not coarse or a.supersense != b.supersense:
            different.append(WordInContextPair(a, b, 0))
    return same, different


def build_word_in_context_pairs(examples, max_pairs_per_lemma=2, dev_fraction=0.5,
                                coarse=True, same_form=False, seed=0):
    """Pairs of usage examples of the same lemma and part of speech.

    For each (lemma, part of speech) the same-synset pairs and the
    different-synset pairs are listed; ``n = min(#same, #different,
    max_pairs_per_lemma)`` of each are drawn, so every lemma contributes as
    many same-sense as different-sense pairs. Lemmas (not lemma + part of
    speech: no lemma is in both splits) are shuffled and the first
    ``dev_fraction`` of them go to ``dev``, the rest to ``test``. Everything
    is drawn from ``random.Random(seed)``, so a seed gives the same pairs,
    whatever the order of ``examples``.

    Args:
        examples: ``SenseExample`` list (``read_wordnet_examples()``).
        max_pairs_per_lemma: int. Most same-sense (and different-sense)
            pairs per lemma and part of speech.
        dev_fraction: float in [0, 1]. Share of lemmas in the dev split.
        coarse: bool. Different-sense pairs must also differ in supersense
            (``noun.artifact`` vs ``noun.group``): WordNet's synsets of a
            word are often near-synonyms, which no model can tell apart.
        same_form: bool. Only pair examples where the word is written the
            same (``"plays"`` with ``"plays"``, not with ``"played"``): then a
            static model's cosine is 1 for every pair (AUC 0.5 exactly) and
            the surface form tells nothing about the sense.
        seed: int.

    Returns:
        ``WordInContextPairs`` (``.dev``, ``.test``, ``.statistics()``).

    Example:
    >>> from kzoo.analysis.wordnet import SenseExample
    >>> def ex(synset, supersense, sentence):
    ...     return SenseExample("bank", "n", synset, supersense, sentence, 0, 4)
    >>> examples = [ex("n:1", "noun.object", "bank of the river"),
    ...             ex("n:1", "noun.object", "bank of the stream"),
    ...             ex("n:2", "noun.group", "bank loan")]
    >>> pairs = build_word_in_context_pairs(examples, dev_fraction=0.0)
    >>> [p.label for p in pairs.test], pairs.statistics()["test"]["senses"]
    ([1, 0], 2)
    """
    if not 0.0 <= dev_fraction <= 1.0:
        raise ValueError(f"`dev_fraction` must be in [0, 1], got {dev_fraction!r}.")
    if not isinstance(max_pairs_per_lemma, int) or max_pairs_per_lemma < 1:
        raise ValueError("`max_pairs_per_lemma` must be a positive int, got "
                         f"{max_pairs_per_lemma!r}.")
    groups = collections.defaultdict(list)
    for example in examples:
        groups[(example.lemma, example.pos)].append(example)
    rng = random.Random(seed)
    by_lemma = collections.defaultdict(list)
    for key in sorted(groups):
        group = sorted(groups[key], key=lambda e: (e.synset, e.sentence, e.start))
        same, different = _candidate_pairs(group, coarse, same_form)
        n = min(len(same), len(different), max_pairs_per_lemma)
        if n:
            by_lemma[key[0]] += rng.sample(same, n) + rng.sample(different, n)
    lemmas = sorted(by_lemma)
    rng.shuffle(lemmas)
    cut = round(dev_fraction * len(lemmas))
    return WordInContextPairs(
        dev=[p for lemma in lemmas[:cut] for p in by_lemma[lemma]],
        test=[p for lemma in lemmas[cut:] for p in by_lemma[lemma]],
    )
