"""Real data that pip packages carry, for examples, demos and evaluation."""

from kzoo.datasets.gensim_test_data import (  # noqa: F401
    enwiki_excerpt,
    evaluation_file,
    gensim_test_data_path,
    lee_background,
    pang_lee_polarity,
)


def __getattr__(name):
    # Jane Austen's reader is imported when first asked for, so that
    # `python -m kzoo.datasets.austen FILE` runs it fresh.
    if name in ("jane_austen", "write_jane_austen"):
        import importlib

        return getattr(importlib.import_module("kzoo.datasets.austen"), name)
    raise AttributeError(f"module 'kzoo.datasets' has no attribute {name!r}")
