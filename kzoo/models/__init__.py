"""Model classes: the base classes, shared tasks and one folder per family."""

from kzoo.models.backbone import Backbone  # noqa: F401
from kzoo.models.bert.bert_backbone import BertBackbone  # noqa: F401
from kzoo.models.bert.bert_classifier import BertClassifier  # noqa: F401
from kzoo.models.bert.bert_classifier_preprocessor import (  # noqa: F401
    BertClassifierPreprocessor,
)
from kzoo.models.bert.bert_tokenizer import BertTokenizer  # noqa: F401
from kzoo.models.preprocessor import Preprocessor  # noqa: F401
from kzoo.models.task import Task  # noqa: F401
from kzoo.models.text_classifier import TextClassifier  # noqa: F401
from kzoo.models.text_classifier_preprocessor import (  # noqa: F401
    TextClassifierPreprocessor,
)
