"""Model classes: the base classes, tasks shared by all families, one folder per family.

Every sub-package here is a model family: importing ``kzoo.models`` imports
each one (its ``__init__.py`` registers its classes, converters and
``Family`` record) and lists the names in its ``__all__`` here
(``kzoo.models.BertClassifier``). A new family is a new folder.
"""

import importlib as _importlib
import pkgutil as _pkgutil

# Base classes and family-agnostic tasks.
from kzoo.models.backbone import Backbone  # noqa: F401
from kzoo.models.causal_lm import CausalLM  # noqa: F401
from kzoo.models.causal_lm_preprocessor import CausalLMPreprocessor  # noqa: F401
from kzoo.models.family import Family, Pretraining, register_family  # noqa: F401
from kzoo.models.masked_lm import MaskedLM  # noqa: F401
from kzoo.models.masked_lm_preprocessor import MaskedLMPreprocessor  # noqa: F401
from kzoo.models.multiple_choice import MultipleChoice  # noqa: F401
from kzoo.models.multiple_choice_preprocessor import MultipleChoicePreprocessor  # noqa: F401
from kzoo.models.preprocessor import Preprocessor  # noqa: F401
from kzoo.models.question_answerer import QuestionAnswerer  # noqa: F401
from kzoo.models.question_answerer_preprocessor import (  # noqa: F401
    QuestionAnswererPreprocessor,
)
from kzoo.models.task import Task  # noqa: F401
from kzoo.models.text_classifier import TextClassifier  # noqa: F401
from kzoo.models.text_classifier_preprocessor import TextClassifierPreprocessor  # noqa: F401
from kzoo.models.text_embedder import TextEmbedder  # noqa: F401
from kzoo.models.token_classifier import TokenClassifier  # noqa: F401
from kzoo.models.token_classifier_preprocessor import TokenClassifierPreprocessor  # noqa: F401


def _import_families():
    for info in sorted(_pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.ispkg:
            family = _importlib.import_module(f"{__name__}.{info.name}")
            for name in getattr(family, "__all__", ()):
                globals()[name] = getattr(family, name)


_import_families()
