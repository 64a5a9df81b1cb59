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

Raw data held in memory (lists or numpy arrays of text) that a task's
``fit``, ``evaluate`` or ``predict`` preprocesses follows ``data_engine``:
the engine chosen as above when one is chosen; else, on the JAX and PyTorch
backends, Python for up to ``PYTHON_DATA_LIMIT`` examples and ``tf.data``
for more (TensorFlow installed). Building a ``tf.data`` pipeline costs a
fixed setup on every call, which dominates a small request; its parallel
map tokenizes large data with less CPU per example. The TensorFlow backend
keeps ``tf.data``, whose batches it reads natively, and so does a
multi-process ``keras.distribution`` that shards the data itself (Keras
takes only a ``tf.data.Dataset`` there).

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

from kzoo._modules import imported

ENGINES = ("tensorflow", "python")
# The most examples of in-memory raw data that the Python engine
# preprocesses by default on the JAX and PyTorch backends (see the module
# doc); more go through tf.data where TensorFlow is installed.
PYTHON_DATA_LIMIT = 2048
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
    return imported("tensorflow")


def require_tensorflow(what):
    """Raises ``TensorFlowNotInstalledError`` naming ``what`` needs it."""
    if not tensorflow_installed():
        raise TensorFlowNotInstalledError(
            f"{what} needs TensorFlow (and tensorflow-text), which is not "
            f"installed: {INSTALL_TENSORFLOW}")


def _hide_gpus(tf):
    """Keeps TensorFlow off the accelerators when it only feeds data to JAX
    or PyTorch (it would reserve most of a GPU's memory at its first op)."""
    if _keras_backend() in ("jax", "torch"):
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
            if not imported(self._name):
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


def chosen_engine():
    """The engine chosen for this thread or process (``engine_scope``,
    ``set_engine``, ``KZOO_PREPROCESSING``, in that order), or None when
    none is chosen."""
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
    return None


def engine():
    """The engine eager preprocessing calls use now (see the module doc)."""
    chosen = chosen_engine()
    if chosen is not None:
        return chosen
    return "tensorflow" if tensorflow_installed() else "python"


def data_engine(num_examples=None):
    """The engine that preprocesses raw in-memory data (lists or numpy
    arrays of text, not a ``tf.data.Dataset``) for a task's ``fit``,
    ``evaluate`` or ``predict``: the chosen engine when there is one (see
    ``chosen_engine``), else on the JAX and PyTorch backends Python for at
    most ``PYTHON_DATA_LIMIT`` examples (any number when ``num_examples`` is
    None) unless a multi-process distribution shards the data (Keras then
    takes only ``tf.data``), else ``engine()``.

    >>> from kzoo.preprocessing.engine import data_engine, engine_scope
    >>> with engine_scope("python"):
    ...     data_engine(10**6)
    'python'
    """
    chosen = chosen_engine()
    if chosen is not None:
        return chosen
    if not tensorflow_installed():
        return "python"
    if _keras_backend() in ("jax", "torch") and not _needs_tf_dataset() and (
            num_examples is None or num_examples <= PYTHON_DATA_LIMIT):
        return "python"
    return "tensorflow"


def _needs_tf_dataset():
    """Whether Keras only reads a ``tf.data.Dataset`` now: under a
    multi-process ``keras.distribution`` that shards the data over the
    processes itself (``auto_shard_dataset``)."""
    keras = sys.modules.get("keras")
    distribution = keras.distribution.distribution() if keras else None
    return (distribution is not None
            and getattr(distribution, "_is_multi_process", False)
            and getattr(distribution, "auto_shard_dataset", False))


def _keras_backend():
    """The Keras backend in use (from ``KERAS_BACKEND`` before Keras is
    imported)."""
    if imported("keras"):
        return sys.modules["keras"].config.backend()
    return os.environ.get("KERAS_BACKEND", "tensorflow")


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
