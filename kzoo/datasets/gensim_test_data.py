"""Real corpora and evaluation sets shipped inside the gensim wheel.

gensim's ``gensim/test/test_data/`` holds (among others) the Google analogy
questions, WordSim-353, SimLex-999, the Lee news corpus, an English Wikipedia
excerpt and 200 labelled Pang & Lee movie-review sentences. Installing gensim
(``pip install gensim``, part of kzoo's ``test`` extra) makes them available
offline.
"""

import importlib.util
import os
import re

import numpy as np


def gensim_test_data_path(name=""):
    """Path of a file in gensim's test data (raises with the install command)."""
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "This data ships inside the gensim package, which is not installed. "
            "Install it with: pip install gensim (or pip install -e '.[test]')."
        )
    root = os.path.join(list(spec.submodule_search_locations)[0], "test", "test_data")
    path = os.path.join(root, name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"gensim's test data has no {name!r} (looked in {root}).")
    return path


def pang_lee_polarity(seed=None):
    """The 200 labelled movie-review sentences of Pang & Lee (gensim's copy).

    The file has a few bytes that are not UTF-8; they become U+FFFD.

    Args:
        seed: ``None`` for the file's order (the positive sentences, then
            the negative ones), else an int: the sentences in the order of
            ``numpy.random.default_rng(seed).permutation(200)``, ready to cut
            into a held-out part and a training part.

    Returns:
        (texts, labels): a list of 200 str and a list of int, 1 = positive,
        0 = negative (100 each).
    """
    texts, labels = [], []
    with open(gensim_test_data_path("pang_lee_polarity.cor"), encoding="utf-8",
              errors="replace") as f:
        for line in f:
            label, _, text = line.strip().partition(" ")
            if label not in ("__label__pos", "__label__neg"):
                continue
            texts.append(text)
            labels.append(1 if label == "__label__pos" else 0)
    if seed is not None:
        order = np.random.default_rng(seed).permutation(len(texts))
        texts, labels = [texts[i] for i in order], [labels[i] for i in order]
    return texts, labels


def lee_background():
    """The Lee news corpus: 300 short articles, one str each (lowercased)."""
    with open(gensim_test_data_path("lee_background.cor"), encoding="utf-8",
              errors="replace") as f:
        return [line.strip() for line in f if line.strip()]


ENWIKI_EXCERPT = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def enwiki_excerpt():
    """gensim's English Wikipedia excerpt: 106 articles, ~480k words.

    The wiki markup is stripped with gensim's ``filter_wiki`` (links keep
    their text; templates, tables and references go), as is the bold and
    italic quote markup; redirect pages are dropped. Takes a few seconds.

    Returns:
        A list of str, one article each, in the dump's order (mixed case,
        punctuation kept, paragraphs separated by newlines).
    """
    import bz2

    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    articles = []
    with bz2.open(gensim_test_data_path(ENWIKI_EXCERPT), "rt", encoding="utf-8",
                  errors="replace") as f:
        for _, text, _ in extract_pages(f, filter_namespaces=("0",)):
            if text.lstrip().upper().startswith("#REDIRECT"):
                continue
            text = re.sub(r"'{2,}", "", filter_wiki(text))
            text = "\n".join(
                line.strip() for line in text.splitlines() if line.strip()
            )
            if text:
                articles.append(text)
    return articles


def evaluation_file(name):
    """Path of one of gensim's word-vector evaluation sets.

    Args:
        name: ``"questions-words.txt"`` (Google analogies, 19,544
            questions), ``"wordsim353.tsv"`` or ``"simlex999.txt"``.
    """
    known = ("questions-words.txt", "wordsim353.tsv", "simlex999.txt")
    if name not in known:
        raise ValueError(f"Unknown evaluation file {name!r}; choose one of {known}.")
    return gensim_test_data_path(name)
