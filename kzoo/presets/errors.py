"""Errors raised while resolving, loading or saving presets."""


class PresetError(ValueError):
    """A preset cannot be resolved, read or matched to what was asked."""


class OfflineError(PresetError, ConnectionError):
    """A remote preset handle was given but the network cannot be reached."""
