"""Tiny random corpora for the tests of preparation and streaming."""

import numpy as np

WORDS = tuple("the cat sat on a mat and dog ran to river bank in old town with".split())


def write_corpus(path, documents=30, sentences=(2, 6), words=(3, 12), seed=0):
    """Writes ``documents`` paragraphs of random sentences (a paragraph a
    line, a blank line after each) to ``path``; returns the documents as
    lists of sentences.

    Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> documents = write_corpus(path, documents=2, sentences=(2, 3), seed=1)
    >>> [len(d) for d in documents]
    [2, 2]
    """
    rng = np.random.default_rng(seed)
    out = []
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(documents):
            document = [" ".join(rng.choice(WORDS, int(rng.integers(*words)))).capitalize()
                        + "." for _ in range(int(rng.integers(*sentences)))]
            out.append(document)
            f.write(" ".join(document) + "\n\n")
    return out
