"""Metrics shared by the model families, and held-out evaluation helpers."""

from kzoo.metrics.evaluation import evaluate_perplexity  # noqa: F401
from kzoo.metrics.perplexity import Perplexity  # noqa: F401
from kzoo.metrics.squad import normalize_answer, squad_scores  # noqa: F401
from kzoo.metrics.entities import entity_scores  # noqa: F401
from kzoo.metrics.classification import classification_scores  # noqa: F401
