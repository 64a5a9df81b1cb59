"""The backend and the log noise, set before Keras is imported."""

import importlib.util
import logging
import os
import sys

from kzoo._modules import imported

BACKENDS = ("tensorflow", "jax", "torch")
# What each backend needs: its module, and the install that brings it.
PACKAGES = {"tensorflow": ("tensorflow", "kzoo[tensorflow]"),
            "jax": ("jax", "kzoo[jax]"),
            "torch": ("torch", "kzoo[torch]")}


class CommandError(Exception):
    """Bad input to a command: the message says what and how to fix it."""


def _quiet_import(*modules):
    """Imports the modules with file descriptor 2 closed: TensorFlow's C++
    logging writes its start-up lines ("All log messages before
    absl::InitializeLog()", oneDNN, cuda) there before any setting of
    Python's can stop it."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        for module in modules:
            importlib.import_module(module)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _missing_backend(backend):
    module, pip = PACKAGES[backend]
    if importlib.util.find_spec(module) is None:
        return (f"the {backend} backend needs the {module} package, which is "
                f"not installed: pip install '{pip}'")
    return None


def default_backend():
    """The backend without --backend or KERAS_BACKEND: Keras' own default,
    TensorFlow, when it is installed, else the first of JAX and PyTorch that
    is (an install without TensorFlow then just works)."""
    for name in BACKENDS:
        if importlib.util.find_spec(PACKAGES[name][0]) is not None:
            return name
    return "tensorflow"


def prepare(backend=None, verbose=False):
    """Sets ``KERAS_BACKEND`` (checking that its package is installed), then
    imports Keras and kzoo, silently unless ``verbose``, and the model
    families outside kzoo (``kzoo.models.family.load_plugins``)."""
    if backend:
        if imported("keras"):
            import keras

            if keras.config.backend() != backend:
                raise CommandError(
                    f"Keras is already imported with the {keras.config.backend()} "
                    f"backend in this process; run kzoo in a new process for "
                    f"--backend {backend}.")
        os.environ["KERAS_BACKEND"] = backend
    if imported("keras"):  # its backend is fixed
        chosen = sys.modules["keras"].config.backend()
    else:
        chosen = backend or os.environ.get("KERAS_BACKEND") or default_backend()
        os.environ["KERAS_BACKEND"] = chosen
    if chosen in PACKAGES and _missing_backend(chosen):
        raise CommandError(_missing_backend(chosen))
    if verbose:
        import kzoo.models  # noqa: F401
    elif importlib.util.find_spec("tensorflow") is None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        _quiet_import("keras", "kzoo.models")
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        # (Not kzoo.preprocessing.engine: importing it imports Keras, which
        # imports TensorFlow, unsilenced, on the TensorFlow backend.)
        _quiet_import("tensorflow", "tensorflow_text", "keras", "kzoo.models")
        import absl.logging

        absl.logging.set_verbosity(absl.logging.ERROR)
        logging.getLogger("tensorflow").setLevel(logging.ERROR)
    from kzoo.models.family import load_plugins

    load_plugins()  # the families outside kzoo (KZOO_FAMILIES, entry points)
