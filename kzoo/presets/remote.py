"""Remote preset handles, fetched through their own libraries.

``hf://owner/name[@revision]`` goes to ``huggingface_hub.snapshot_download``
and ``kaggle://owner/model/framework/variation[/version]`` to
``kagglehub.model_download``. Each library keeps its own cache, proxies and
credentials (``HF_HOME``, ``HF_HUB_CACHE``, ``HF_HUB_OFFLINE``, ``HF_TOKEN``;
``KAGGLEHUB_CACHE``, ``KAGGLE_USERNAME`` / ``KAGGLE_KEY``; ``HTTPS_PROXY`` for
both): nothing here overrides them. Their errors become one-line
``PresetError`` messages that say what to do.
"""

import importlib
import os
import re
import warnings

from kzoo.presets.errors import MissingLibraryError, OfflineError, PresetError

INSTALL = "pip install 'kzoo[hub]'"

#: the files of a Hugging Face repository that some preset source reads,
#: whatever the weights' format: configs, tokenizers, vocabularies and
#: merges (sentence-transformers' modules.json and 1_Pooling/config.json
#: among them), kzoo and keras-hub presets (config.json, model.weights.h5,
#: task.weights.h5, assets/), AllenNLP ELMo (options JSON + weights hdf5),
#: word-vector folders (*_emb.npy + *_index.parquet). Not TensorFlow's
#: tf_model.h5, Flax's *.msgpack, ONNX, Rust or Core ML weights.
HF_FILES = ("*.json", "vocab.txt", "merges.txt", "*.weights.h5", "assets/*",
            "*.hdf5", "*_emb.npy", "*_index.parquet")
#: a Hugging Face checkpoint's weights: safetensors when the snapshot has
#: them, else the PyTorch pickle
HF_SAFETENSORS = ("model.safetensors", "model-*-of-*.safetensors")
HF_TORCH = ("pytorch_model.bin", "pytorch_model-*-of-*.bin")

_KAGGLE_FORMAT = "kaggle://owner/model/framework/variation[/version]"


def is_remote(preset):
    return isinstance(preset, str) and "://" in preset


def fetch(preset):
    """The local folder of a remote handle: from its library's cache, or
    downloaded into it."""
    scheme, _, handle = preset.partition("://")
    if scheme == "hf":
        return _fetch_hugging_face(preset, handle)
    if scheme == "kaggle":
        return _fetch_kaggle(preset, handle)
    raise PresetError(
        f"Unknown preset handle scheme {scheme!r} in {preset!r}; kzoo reads "
        "hf://, kaggle://, registered names and local folders.")


def _library(name, preset):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise MissingLibraryError(
            f"{preset} needs the {name} package: {INSTALL}.") from exc


def _first_line(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _is_network_error(exc):
    """Connection failures of the HTTP clients the hub libraries use
    (httpx, requests), and Python's own."""
    root = type(exc).__module__.split(".")[0]
    return (isinstance(exc, (ConnectionError, TimeoutError))
            or (root in ("httpx", "httpx2", "requests", "urllib3")
                and getattr(exc, "response", None) is None))


# === Hugging Face ===

def _fetch_hugging_face(preset, handle):
    repo_id, at, revision = handle.partition("@")
    if not repo_id or (at and not revision):
        raise PresetError(
            f"{preset!r} is not a Hugging Face handle: write hf://owner/name "
            "or hf://owner/name@revision.")
    hub = _library("huggingface_hub", preset)
    revision = revision or None
    # Safetensors first; the PyTorch pickle only where the snapshot has
    # neither safetensors nor Keras weights. Both calls ask for the same
    # files online and offline (offline, huggingface_hub checks a cached
    # snapshot against its cached listing of the repository, filtered by
    # the same patterns), so a snapshot fetched once loads from the cache.
    try:
        folder = hub.snapshot_download(
            repo_id, revision=revision, allow_patterns=[*HF_FILES, *HF_SAFETENSORS])
        if not any(os.path.isfile(os.path.join(folder, name)) for name in
                   ("model.safetensors", "model.safetensors.index.json", "model.weights.h5")):
            folder = hub.snapshot_download(
                repo_id, revision=revision, allow_patterns=[*HF_FILES, *HF_TORCH])
    except Exception as exc:  # noqa: BLE001 — mapped below, or raised as it is
        error = _hugging_face_error(preset, repo_id, revision, exc)
        if error is None:
            raise
        raise error from exc
    return folder


def _hugging_face_error(preset, repo_id, revision, exc):
    errors = importlib.import_module("huggingface_hub.errors")
    constants = importlib.import_module("huggingface_hub.constants")
    kinds = {name: getattr(errors, name, ()) for name in (
        "HFValidationError", "GatedRepoError", "RevisionNotFoundError",
        "RepositoryNotFoundError", "DisabledRepoError", "IncompleteSnapshotError",
        "LocalEntryNotFoundError", "OfflineModeIsEnabled", "HfHubHTTPError")}
    cache = constants.HF_HUB_CACHE
    page = f"{constants.ENDPOINT}/{repo_id}"
    download = f"`hf download {repo_id}{f' --revision {revision}' if revision else ''}`"
    login = "log in with `hf auth login` or set HF_TOKEN"
    if isinstance(exc, kinds["HFValidationError"]):
        return PresetError(
            f"{preset!r} does not name a Hugging Face repository ({_first_line(exc)}): "
            "write hf://owner/name or hf://owner/name@revision.")
    if isinstance(exc, kinds["GatedRepoError"]):
        return PresetError(
            f"{preset} is a gated repository: accept its terms on {page} "
            f"with your account, then {login}.")
    if isinstance(exc, kinds["RevisionNotFoundError"]):
        return PresetError(
            f"{preset}: the repository {repo_id} has no revision {revision!r} "
            f"(a branch, tag or commit hash); see {page}/tree/main for its branches.")
    if isinstance(exc, kinds["RepositoryNotFoundError"]):
        return PresetError(
            f"{preset}: there is no repository {repo_id!r} on the Hugging Face "
            f"Hub, or it is private ({login}). Check the name on {page}.")
    if isinstance(exc, kinds["DisabledRepoError"]):
        return PresetError(f"{preset}: the repository {repo_id} is disabled on the Hub.")
    offline = constants.HF_HUB_OFFLINE
    if isinstance(exc, kinds["IncompleteSnapshotError"]):
        why = ("HF_HUB_OFFLINE is set" if offline else
               f"the Hub cannot be reached ({_first_line(exc.__cause__ or exc)})")
        return OfflineError(
            f"{why} and the cached copy of {preset} at {exc.snapshot_path} lacks "
            f"files it needs: fetch it once with network ({download} or this "
            "from_preset) or pass a local folder.")
    if isinstance(exc, (kinds["LocalEntryNotFoundError"], kinds["OfflineModeIsEnabled"])):
        if offline or exc.__cause__ is None:
            return OfflineError(
                f"HF_HUB_OFFLINE is set and {preset} is not in the cache at "
                f"{cache}: download it once with network ({download} or this "
                "from_preset) or pass a local folder.")
        exc = exc.__cause__
    if _is_network_error(exc) or isinstance(exc, kinds["LocalEntryNotFoundError"]):
        return OfflineError(
            f"Cannot reach the Hugging Face Hub for {preset} ({_first_line(exc)}) "
            f"and it is not in the cache at {cache}: check the network and the "
            "proxy settings (HTTPS_PROXY), set HF_HUB_OFFLINE=1 to read only "
            "the cache, or pass a local folder.")
    if isinstance(exc, kinds["HfHubHTTPError"]):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        fix = f": {login}" if status in (401, 403) else ""
        return PresetError(
            f"The Hugging Face Hub refused {preset} ({_first_line(exc)}){fix}.")
    return None


# === Kaggle ===

def _fetch_kaggle(preset, handle):
    parts = handle.split("/")
    if (len(parts) not in (4, 5) or not all(parts)
            or (len(parts) == 5 and not parts[4].isdigit())):
        raise PresetError(
            f"{preset!r} is not a Kaggle model handle: write {_KAGGLE_FORMAT} "
            "(the version a number).")
    kagglehub = _library("kagglehub", preset)
    try:
        return kagglehub.model_download(handle)
    except Exception as exc:  # noqa: BLE001 — mapped below, or raised as it is
        failure = exc
    if _is_network_error(failure) and len(parts) == 4:
        # The newest version is asked of Kaggle; without a network, the newest
        # complete version in kagglehub's cache (a versioned handle never
        # asks: kagglehub reads it from the cache).
        version = _newest_cached_kaggle_version(parts)
        if version is not None:
            warnings.warn(
                f"Kaggle cannot be reached ({_first_line(failure)}): {preset} "
                f"loads version {version}, the newest in the kagglehub cache. "
                f"Write kaggle://{handle}/{version} to load it without asking Kaggle.",
                stacklevel=2)
            return kagglehub.model_download(f"{handle}/{version}")
    error = _kaggle_error(preset, parts, failure)
    if error is None:
        raise failure
    raise error from failure


def _kaggle_models_cache(parts):
    """kagglehub's cache folder of a model variation: a folder and a
    ``<version>.complete`` marker per downloaded version."""
    config = importlib.import_module("kagglehub.config")
    return os.path.join(config.get_cache_folder(), "models", *parts[:4])


def _newest_cached_kaggle_version(parts):
    folder = _kaggle_models_cache(parts)
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    versions = [int(m.group(1)) for m in map(re.compile(r"(\d+)\.complete").fullmatch, names)
                if m and os.path.isdir(os.path.join(folder, m.group(1)))]
    return max(versions, default=None)


def _kaggle_error(preset, parts, exc):
    page = f"https://www.kaggle.com/models/{parts[0]}/{parts[1]}"
    credentials = ("give kagglehub your Kaggle credentials (KAGGLE_USERNAME and "
                   "KAGGLE_KEY, ~/.kaggle/kaggle.json, or kagglehub.login())")
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status == 404:
        return PresetError(
            f"{preset}: no such model on Kaggle; check the owner, model, "
            f"framework, variation and version on {page}.")
    if status in (401, 403) or type(exc).__name__ == "UnauthenticatedError":
        return PresetError(
            f"Kaggle refused {preset} ({_first_line(exc)}): accept the model's "
            f"license on {page} with your account, then {credentials}.")
    if _is_network_error(exc):
        return OfflineError(
            f"Cannot reach Kaggle for {preset} ({_first_line(exc)}) and it is not "
            f"in the kagglehub cache at {_kaggle_models_cache(parts)}: "
            "check the network and the proxy settings (HTTPS_PROXY), or pass a "
            "local folder.")
    if status is not None:
        return PresetError(f"Kaggle answered {preset} with {_first_line(exc)}.")
    return None
