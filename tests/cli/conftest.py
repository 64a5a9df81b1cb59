"""Tiny corpora and tiny pretrained models for the `kzoo` command's tests."""

import csv
import random

import pytest

from kzoo import cli

NOUNS = "cat dog bird king queen man woman river bank money house film story".split()
VERBS = "sees likes finds loves watches tells".split()
ADJECTIVES = "big small red old new good bad quiet".split()
# Each family's smallest sensible size.
TINY = {
    "gpt": ["--num-layers", "1", "--hidden-dim", "16", "--num-heads", "2",
            "--vocabulary-size", "300", "--sequence-length", "16", "--batch-size", "16"],
    "bert": ["--num-layers", "1", "--hidden-dim", "16", "--num-heads", "2",
             "--vocabulary-size", "200", "--sequence-length", "16", "--batch-size", "16"],
    "elmo": ["--num-layers", "1", "--hidden-dim", "16", "--projection-dim", "8",
             "--vocabulary-size", "100", "--sequence-length", "10", "--batch-size", "16"],
    "word2vec": ["--hidden-dim", "8", "--min-count", "1", "--batch-size", "256"],
}


def write_corpus(path, documents=12, seed=0):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(documents):
            for _ in range(6):
                f.write(f"the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} "
                        f"{rng.choice(VERBS)} the {rng.choice(NOUNS)}. a "
                        f"{rng.choice(NOUNS)} {rng.choice(VERBS)} a "
                        f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}.\n")
            f.write("\n")
    return str(path)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt")


@pytest.fixture(scope="session")
def labelled(tmp_path_factory):
    """A CSV with string labels: 'good' sentences are 'pos'."""
    path = tmp_path_factory.mktemp("data") / "reviews.csv"
    rng = random.Random(1)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        for i in range(32):
            good = i % 2 == 0
            writer.writerow([f"a {rng.choice(ADJECTIVES)} film , "
                             f"{'good and fun' if good else 'bad and dull'}",
                             "pos" if good else "neg"])
    return str(path)


def pretrain(family, corpus, output, *extra):
    assert cli.main(["pretrain", family, "--corpus", corpus, "--output", str(output),
                     "--epochs", "1", *TINY[family], *extra]) == 0
    return str(output)


@pytest.fixture(scope="session")
def pretrained(corpus, tmp_path_factory):
    """``pretrained(family)``: a tiny model pretrained once per session."""
    made = {}

    def get(family):
        if family not in made:
            made[family] = pretrain(family, corpus,
                                    tmp_path_factory.mktemp("runs") / family)
        return made[family]

    return get
