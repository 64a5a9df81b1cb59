"""Real data that pip packages carry, for examples, demos and evaluation."""

from kzoo.datasets.gensim_test_data import (  # noqa: F401
    enwiki_excerpt,
    evaluation_file,
    gensim_test_data_path,
    lee_background,
    pang_lee_polarity,
)
from kzoo.datasets.jane_austen import jane_austen, write_jane_austen  # noqa: F401
