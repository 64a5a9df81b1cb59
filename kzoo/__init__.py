"""kzoo: word2vec, ELMo, GPT and BERT for Keras 3 on TensorFlow, JAX and PyTorch.

Names load on first use (a module ``__getattr__``): ``import kzoo`` alone
imports neither Keras nor any backend library, so a program (or the ``kzoo``
command) can still choose ``KERAS_BACKEND`` after it. The first name used
imports ``kzoo.models``, which registers every kzoo class for Keras
serialization (``keras.models.load_model`` finds them); when Keras is already
imported, that happens at ``import kzoo``. Model classes are also available
at the top level (``kzoo.BertClassifier``).
"""

import importlib
import importlib.util

from kzoo._modules import imported as _imported
from kzoo.version import __version__  # noqa: F401

_SUBPACKAGES = ("analysis", "callbacks", "data", "datasets", "distribution", "export",
                "layers", "losses", "metrics", "models", "ops", "pipelines",
                "preprocessing", "presets", "samplers", "testing", "tokenizers",
                "training")
# Top-level names that are not model classes, and where they live.
_NAMES = {
    "list_presets": "kzoo.presets",
    "OfflineError": "kzoo.presets.errors",
    "pipeline": "kzoo.pipelines",
    "PresetError": "kzoo.presets.errors",
    "Tokenizer": "kzoo.tokenizers",
}


def _model_classes():
    models = importlib.import_module("kzoo.models")
    return {k: v for k, v in vars(models).items() if isinstance(v, type)}


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _SUBPACKAGES:
        _model_classes()  # registers every class first
        value = importlib.import_module(f"kzoo.{name}")
    elif importlib.util.find_spec(f"kzoo.{name}") is not None:
        value = importlib.import_module(f"kzoo.{name}")  # kzoo.cli: no Keras
    elif name in _NAMES:
        _model_classes()
        value = getattr(importlib.import_module(_NAMES[name]), name)
    else:
        value = _model_classes().get(name)
        if value is None:
            raise AttributeError(f"module 'kzoo' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    names = set(globals()) | set(_SUBPACKAGES) | set(_NAMES)
    if _imported("kzoo.models"):
        names |= set(_model_classes())
    return sorted(names)


if _imported("keras"):
    _model_classes()
