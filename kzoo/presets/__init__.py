"""Preset loading and saving: registered names, local folders, converters."""

from kzoo.presets.preset_registry import list_presets  # noqa: F401
