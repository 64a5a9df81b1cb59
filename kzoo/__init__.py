"""kzoo: word2vec, ELMo, GPT and BERT for Keras 3 on TensorFlow, JAX and PyTorch.

``import kzoo`` imports every public module, so every class is registered for
Keras serialization.
"""

__version__ = "0.1.0"

from kzoo import presets  # noqa: E402,F401
from kzoo.models.backbone import Backbone  # noqa: E402,F401
from kzoo.models.preprocessor import Preprocessor  # noqa: E402,F401
from kzoo.models.task import Task  # noqa: E402,F401
from kzoo.presets import list_presets  # noqa: E402,F401
from kzoo.presets.errors import OfflineError, PresetError  # noqa: E402,F401
from kzoo import preprocessing, tokenizers  # noqa: E402,F401
from kzoo.tokenizers.tokenizer import Tokenizer  # noqa: E402,F401
