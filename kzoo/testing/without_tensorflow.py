"""Running code as if TensorFlow were not installed.

``run_without_tensorflow(code)`` runs Python source in a fresh process whose
imports of TensorFlow (and the packages that need it) fail as they do where
it is not installed; the rest of the environment is this one's. Uninstalling
TensorFlow from a shared environment would break every other test.
"""

import os
import subprocess
import sys
import textwrap

#: Top-level packages that fail to import in the process.
BLOCKED = ("tensorflow", "tensorflow_text", "tf_keras", "tensorboard",
           "keras_hub", "keras_nlp", "tensorflow_serving", "tensorflow_hub")

_HOOK = f"""
import importlib.abc, importlib.util, sys

_BLOCKED = {BLOCKED!r}


class _NoTensorFlow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


_find_spec = importlib.util.find_spec


def _find_spec_without_tensorflow(name, package=None):
    # As where the packages are not installed: None, not an error (torch
    # asks whether TensorFlow is there while Keras imports it).
    if name.split(".")[0] in _BLOCKED:
        return None
    return _find_spec(name, package)


importlib.util.find_spec = _find_spec_without_tensorflow
sys.meta_path.insert(0, _NoTensorFlow())
"""


def run_without_tensorflow(code, backend=None, timeout=600, env=None, cwd=None):
    """Runs ``code`` in a new process where TensorFlow cannot be imported.

    Args:
        code: Python source.
        backend: the ``KERAS_BACKEND`` of the process (default: this one's,
            or JAX where this one is TensorFlow's).
        timeout: seconds.
        env: extra environment variables.
        cwd: the working directory.

    Returns:
        The ``subprocess.CompletedProcess`` (text ``stdout`` / ``stderr``).
        The caller checks ``returncode``.
    """
    import keras

    environment = dict(os.environ)
    if backend is None:
        backend = keras.config.backend()
        backend = "jax" if backend == "tensorflow" else backend
    environment["KERAS_BACKEND"] = backend
    environment.pop("KZOO_PREPROCESSING", None)
    environment.update(env or {})
    source = _HOOK + "\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", source], capture_output=True,
                          text=True, timeout=timeout, env=environment, cwd=cwd)


def check_without_tensorflow(code, **kwargs):
    """``run_without_tensorflow``, raising with the process's output when it
    fails (or imported TensorFlow); returns its stdout."""
    check = ("\nfrom kzoo._modules import imported as _imported\n"
             "assert not _imported('tensorflow')\n")
    result = run_without_tensorflow(textwrap.dedent(code) + check, **kwargs)
    if result.returncode != 0:
        raise AssertionError(
            f"The code failed without TensorFlow (exit {result.returncode}):\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
    return result.stdout
