"""Export for serving: ``kzoo.export.saved_model(task, path)``; ``elmo_hub_module`` for ELMo."""

from kzoo.export.saved_model import saved_model  # noqa: F401
from kzoo.export.elmo_hub import elmo_hub_module  # noqa: F401,E402
