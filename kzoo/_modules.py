"""Whether a module is imported in this process."""

import sys


def imported(name):
    """Whether module ``name`` is imported in this process.

    ``sys.modules[name] = None`` is Python's way to block an import (the
    next ``import name`` raises ``ImportError``), so a name set to ``None``
    counts as absent, not imported.
    """
    return sys.modules.get(name) is not None
