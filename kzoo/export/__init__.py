"""Export for serving: ``kzoo.export.saved_model(model, path)``, one way out
for every kzoo object that serves (each names its own signatures)."""

from kzoo.export.saved_model import saved_model  # noqa: F401
