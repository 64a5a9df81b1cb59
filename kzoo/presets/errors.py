"""Errors raised while resolving, loading or saving presets."""


class PresetError(ValueError):
    """A preset cannot be resolved, read or matched to what was asked."""


class OfflineError(PresetError, ConnectionError):
    """A remote preset handle is not in its library's cache and cannot be
    downloaded (offline mode, or the network fails)."""


class MissingLibraryError(PresetError, ModuleNotFoundError):
    """A remote preset handle needs a library that is not installed."""
