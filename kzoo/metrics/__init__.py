"""Metrics shared by the model families, held-out evaluation helpers, and
the scores of the NLP benchmarks as their official scripts compute them."""

from kzoo.metrics.classification import (  # noqa: F401
    binary_f1,
    classification_scores,
    matthews_correlation,
)
from kzoo.metrics.entities import entity_scores  # noqa: F401
from kzoo.metrics.evaluation import evaluate_perplexity  # noqa: F401
from kzoo.metrics.glue import GLUE_TASKS, glue_scores  # noqa: F401
from kzoo.metrics.pearson_correlation import PearsonCorrelation  # noqa: F401
from kzoo.metrics.perplexity import Perplexity  # noqa: F401
from kzoo.metrics.spearman_correlation import SpearmanCorrelation  # noqa: F401
from kzoo.metrics.squad import normalize_answer, squad_scores  # noqa: F401
