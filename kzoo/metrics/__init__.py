"""Metrics shared by the model families."""

from kzoo.metrics.perplexity import Perplexity  # noqa: F401
