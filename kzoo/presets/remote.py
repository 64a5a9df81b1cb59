"""Remote preset handles (``hf://``, ``kaggle://``): fetched only when the
network allows; otherwise an immediate error that says what to do instead."""

import os
import socket

from kzoo.presets.errors import OfflineError, PresetError

_HOSTS = {"hf": "huggingface.co", "kaggle": "www.kaggle.com"}
_OFFLINE_VARS = ("KZOO_OFFLINE", "HF_HUB_OFFLINE", "KAGGLE_OFFLINE")


def is_remote(preset):
    return isinstance(preset, str) and "://" in preset


def _network_reachable(host, timeout=3.0):
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def _offline_message(preset, scheme, handle, reason):
    example = handle.rstrip("/").split("/")[-1] or "model"
    if scheme == "hf":
        how = (
            f"On a machine with internet, run `huggingface-cli download {handle} "
            f"--local-dir ./{example}`"
        )
    else:
        how = f"On a machine with internet, download {preset}"
    return (
        f"Cannot fetch {preset!r}: {reason}. {how}, copy the folder here and "
        f"pass its path instead, e.g. from_preset('./{example}'). Local "
        "Hugging Face and AllenNLP folders are converted on load."
    )


def fetch(preset):
    """Downloads a remote handle and returns the local folder."""
    scheme, _, handle = preset.partition("://")
    if scheme not in _HOSTS:
        raise PresetError(
            f"Unknown preset handle scheme {scheme!r} in {preset!r}; kzoo "
            "reads hf://, kaggle://, registered names and local folders."
        )
    for var in _OFFLINE_VARS:
        if os.environ.get(var, "").lower() in ("1", "true", "yes"):
            raise OfflineError(
                _offline_message(preset, scheme, handle, f"{var} is set")
            )
    if not _network_reachable(_HOSTS[scheme]):
        raise OfflineError(
            _offline_message(
                preset, scheme, handle, f"{_HOSTS[scheme]} cannot be reached"
            )
        )
    if scheme == "hf":
        import huggingface_hub

        return huggingface_hub.snapshot_download(handle)
    import kagglehub

    return kagglehub.model_download(handle)
