"""kzoo: word2vec, ELMo, GPT and BERT for Keras 3 on TensorFlow, JAX and PyTorch.

``import kzoo`` imports every public module, so every class is registered for
Keras serialization. Model classes are also available at the top level
(``kzoo.BertClassifier``).
"""

from kzoo.version import __version__  # noqa: F401
from kzoo.cli.environment import command_line_setup  # noqa: E402

command_line_setup()  # the `kzoo` command's --backend, before Keras is imported

from kzoo import (  # noqa: E402,F401
    analysis,
    callbacks,
    datasets,
    distribution,
    export,
    layers,
    losses,
    models,
    preprocessing,
    presets,
    samplers,
    tokenizers,
    training,
)

# Every model class at the top level too: kzoo.BertClassifier, kzoo.BertBackbone, ...
globals().update({k: v for k, v in vars(models).items() if isinstance(v, type)})
from kzoo.presets import list_presets  # noqa: E402,F401
from kzoo.presets.errors import OfflineError, PresetError  # noqa: E402,F401
from kzoo.tokenizers import Tokenizer  # noqa: E402,F401
