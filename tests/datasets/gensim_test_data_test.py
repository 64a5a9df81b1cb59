import numpy as np
import pytest

import kzoo

pytest.importorskip("gensim")


def test_pang_lee_polarity_is_balanced():
    texts, labels = kzoo.datasets.pang_lee_polarity()
    assert len(texts) == len(labels) == 200
    assert sum(labels) == 100


def test_pang_lee_polarity_shuffled_by_a_seed():
    texts, labels = kzoo.datasets.pang_lee_polarity()
    order = np.random.default_rng(3).permutation(200)
    assert kzoo.datasets.pang_lee_polarity(seed=3) == (
        [texts[i] for i in order], [labels[i] for i in order])


def test_enwiki_excerpt_is_plain_text():
    articles = kzoo.datasets.enwiki_excerpt()
    words = sum(len(a.split()) for a in articles)
    assert len(articles) > 100 and 400_000 < words < 600_000
    assert articles[0].startswith("Anarchism is a political philosophy")
    joined = "\n".join(articles)
    assert "#REDIRECT" not in joined.upper() and "'''" not in joined and "[[" not in joined


def test_evaluation_files_exist_and_unknown_names_fail():
    with open(kzoo.datasets.evaluation_file("questions-words.txt")) as f:
        assert sum(1 for line in f if not line.startswith(":")) == 19544
    with pytest.raises(ValueError, match="simlex999.txt"):
        kzoo.datasets.evaluation_file("simlex.txt")
