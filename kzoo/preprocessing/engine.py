"""Which implementation kzoo's preprocessing runs: TensorFlow or Python.

Every preprocessing layer and tokenizer has two implementations of the same
algorithm, tested equal:

* ``"tensorflow"``: TensorFlow and tensorflow-text ops, which run inside
  ``tf.data`` and inside an exported SavedModel's graph;
* ``"python"``: Hugging Face ``tokenizers`` and numpy, which need no
  TensorFlow (JAX and PyTorch users need not install it).

Inside a ``tf.function`` / ``tf.data`` map, or on TensorFlow tensors, the
TensorFlow implementation always runs. Otherwise the engine decides:
``KZOO_PREPROCESSING`` (``tensorflow`` or ``python``) when set, else
TensorFlow when it is installed and Python when it is not.
``set_engine`` / ``engine_scope`` change it in a program.

TensorFlow itself is imported on first use (``tf`` and ``tf_text`` here are
lazy modules). On the JAX and PyTorch backends its GPUs are hidden from it as
it is imported, so that a ``tf.data`` pipeline never takes accelerator
memory from the model.
"""

import contextlib
import importlib
import importlib.util
import os
import sys
import threading

ENGINES = ("tensorflow", "python")
INSTALL_TENSORFLOW = "pip install 'kzoo[tensorflow]'"

_STATE = threading.local()
_DEFAULT = {}


class TensorFlowNotInstalledError(ModuleNotFoundError):
    """Raised where a feature needs TensorFlow and it is not installed."""


def tensorflow_installed():
    """Whether ``import tensorflow`` can succeed (checked once, cheaply)."""
    if "installed" not in _DEFAULT:
        try:
            found = (importlib.util.find_spec("tensorflow") is not None
                     and importlib.util.find_spec("tensorflow_text") is not None)
        except (ImportError, ValueError):
            found = False
        _DEFAULT["installed"] = found
    return _DEFAULT["installed"]


def tensorflow_imported():
    """Whether TensorFlow is already imported in this process."""
    return "tensorflow" in sys.modules


def require_tensorflow(what):
    """Raises ``TensorFlowNotInstalledError`` naming ``what`` needs it."""
    if not tensorflow_installed():
        raise TensorFlowNotInstalledError(
            f"{what} needs TensorFlow (and tensorflow-text), which is not "
            f"installed: {INSTALL_TENSORFLOW}")


def _hide_gpus(tf):
    """Keeps TensorFlow off the accelerators when it only feeds data to JAX
    or PyTorch (it would reserve most of a GPU's memory at its first op)."""
    backend = os.environ.get("KERAS_BACKEND")
    if "keras" in sys.modules:
        backend = sys.modules["keras"].config.backend()
    if backend in ("jax", "torch"):
        try:
            tf.config.set_visible_devices([], "GPU")
        except (RuntimeError, ValueError):  # already initialized: leave it
            pass


class _LazyModule:
    """A module imported on its first attribute access, with a clear error
    (and the pip line that fixes it) when it is not installed."""

    def __init__(self, name, setup=None):
        self._name = name
        self._setup = setup
        self._module = None

    def _load(self):
        if self._module is None:
            if self._name not in sys.modules:
                require_tensorflow(f"`{self._name}`")
            try:
                module = importlib.import_module(self._name)
            except ImportError as error:
                raise TensorFlowNotInstalledError(
                    f"importing {self._name} failed ({error}): "
                    f"{INSTALL_TENSORFLOW}") from error
            if self._setup is not None:
                self._setup(module)
            self._module = module
        return self._module

    def __getattr__(self, name):
        return getattr(self._load(), name)

    def __repr__(self):
        return f"<lazy module {self._name!r}>"


tf = _LazyModule("tensorflow", setup=_hide_gpus)
tf_text = _LazyModule("tensorflow_text")


def set_engine(name):
    """Sets the preprocessing engine of this process: ``"tensorflow"``,
    ``"python"`` or None (back to the default)."""
    if name is not None and name not in ENGINES:
        raise ValueError(f"The preprocessing engine must be one of {ENGINES} "
                         f"or None, got {name!r}.")
    if name == "tensorflow":
        require_tensorflow("The 'tensorflow' preprocessing engine")
    _DEFAULT["engine"] = name


@contextlib.contextmanager
def engine_scope(name):
    """Runs the block (in this thread) with the given preprocessing engine.

    >>> with kzoo.preprocessing.engine_scope("python"):
    ...     kzoo.preprocessing.engine.engine()
    'python'
    """
    if name not in ENGINES:
        raise ValueError(f"The preprocessing engine must be one of {ENGINES}, "
                         f"got {name!r}.")
    if name == "tensorflow":
        require_tensorflow("The 'tensorflow' preprocessing engine")
    previous = getattr(_STATE, "engine", None)
    _STATE.engine = name
    try:
        yield
    finally:
        _STATE.engine = previous


def engine():
    """The engine eager preprocessing calls use now (see the module doc)."""
    scoped = getattr(_STATE, "engine", None)
    if scoped is not None:
        return scoped
    chosen = _DEFAULT.get("engine")
    if chosen is not None:
        return chosen
    env = os.environ.get("KZOO_PREPROCESSING")
    if env:
        if env not in ENGINES:
            raise ValueError(f"KZOO_PREPROCESSING must be one of {ENGINES}, "
                             f"got {env!r}.")
        if env == "tensorflow":
            require_tensorflow("KZOO_PREPROCESSING=tensorflow")
        return env
    return "tensorflow" if tensorflow_installed() else "python"


def is_tensorflow_value(x):
    """Whether ``x`` is a TensorFlow tensor, ragged tensor, variable or spec
    (False without importing TensorFlow when it is not imported yet)."""
    if not tensorflow_imported():
        return False
    module = type(x).__module__ or ""
    return module.startswith(("tensorflow", "tf_keras"))


def in_tensorflow_graph():
    """Whether the code runs inside a ``tf.function`` / ``tf.data`` trace."""
    if not tensorflow_imported():
        return False
    return not sys.modules["tensorflow"].executing_eagerly()
