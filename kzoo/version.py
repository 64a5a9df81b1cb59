"""kzoo's version (its own module, so that low-level code can read it without
importing the package)."""

__version__ = "0.1.0"
