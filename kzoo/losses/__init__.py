"""Losses and loss helpers shared by the model families."""

from kzoo.losses.sampled_softmax import (
    log_uniform_candidates,
    log_uniform_probability,
    sampled_softmax_logits,
)
from kzoo.losses.sparse_logits_cross_entropy import SparseLogitsCrossEntropy  # noqa: F401
