"""Export for serving: ``kzoo.export.saved_model(task, path)``."""

from kzoo.export.saved_model import saved_model  # noqa: F401
