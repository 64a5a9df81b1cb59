"""Keras callbacks for training kzoo models."""

from kzoo.callbacks.time_budget import TimeBudget  # noqa: F401
