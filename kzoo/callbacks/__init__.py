"""Keras callbacks for training kzoo models."""

from kzoo.callbacks.epoch_checkpoint import EpochCheckpoint  # noqa: F401
from kzoo.callbacks.time_budget import TimeBudget  # noqa: F401
from kzoo.callbacks.training_curves import TrainingCurves  # noqa: F401
