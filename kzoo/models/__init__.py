"""Model classes: the base classes, tasks shared by all families, one folder per family."""

# Base classes and family-agnostic tasks.
from kzoo.models.backbone import Backbone  # noqa: F401
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

# BERT.
from kzoo.models.bert.bert_backbone import BertBackbone  # noqa: F401
from kzoo.models.bert.bert_classifier import BertClassifier  # noqa: F401
from kzoo.models.bert.bert_classifier_preprocessor import BertClassifierPreprocessor  # noqa: F401
from kzoo.models.bert.bert_features import BertFeatures  # noqa: F401
from kzoo.models.bert.bert_masked_lm import BertMaskedLM  # noqa: F401
from kzoo.models.bert.bert_masked_lm_preprocessor import BertMaskedLMPreprocessor  # noqa: F401
from kzoo.models.bert.bert_multiple_choice import BertMultipleChoice  # noqa: F401
from kzoo.models.bert.bert_multiple_choice_preprocessor import (  # noqa: F401
    BertMultipleChoicePreprocessor,
)
from kzoo.models.bert.bert_pretrainer import BertPretrainer  # noqa: F401
from kzoo.models.bert.bert_pretrainer_preprocessor import BertPretrainerPreprocessor  # noqa: F401
from kzoo.models.bert.bert_question_answerer import BertQuestionAnswerer  # noqa: F401
from kzoo.models.bert.bert_question_answerer_preprocessor import (  # noqa: F401
    BertQuestionAnswererPreprocessor,
)
from kzoo.models.bert.bert_token_classifier import BertTokenClassifier  # noqa: F401
from kzoo.models.bert.bert_token_classifier_preprocessor import (  # noqa: F401
    BertTokenClassifierPreprocessor,
)
from kzoo.models.bert.bert_text_embedder import BertTextEmbedder  # noqa: F401
from kzoo.models.bert.bert_tokenizer import BertTokenizer  # noqa: F401

# word2vec.
from kzoo.models.word2vec.negative_sampling_loss import NegativeSamplingLoss  # noqa: F401
from kzoo.models.word2vec.word2vec_backbone import Word2VecBackbone  # noqa: F401
from kzoo.models.word2vec.word2vec_cbow import Word2VecCBOW  # noqa: F401
from kzoo.models.word2vec.word2vec_learning_rate import Word2VecLearningRate  # noqa: F401
from kzoo.models.word2vec.word2vec_preprocessor import Word2VecPreprocessor  # noqa: F401
from kzoo.models.word2vec.word2vec_skip_gram import Word2VecSkipGram  # noqa: F401
from kzoo.models.word2vec.word2vec_task import Word2VecTask  # noqa: F401
from kzoo.models.word2vec.word_vectors import WordVectors  # noqa: F401

# GPT.
from kzoo.models.causal_lm import CausalLM  # noqa: F401,E402
from kzoo.models.causal_lm_preprocessor import CausalLMPreprocessor  # noqa: F401,E402
from kzoo.models.gpt.gpt1_tokenizer import GPT1Tokenizer  # noqa: F401,E402
from kzoo.models.gpt.gpt_backbone import GPTBackbone  # noqa: F401,E402
from kzoo.models.gpt.gpt_causal_lm import GPTCausalLM  # noqa: F401,E402
from kzoo.models.gpt.gpt_causal_lm_preprocessor import GPTCausalLMPreprocessor  # noqa: F401,E402,E501
from kzoo.models.gpt.gpt_classifier import GPTClassifier  # noqa: F401,E402
from kzoo.models.gpt.gpt_classifier_preprocessor import GPTClassifierPreprocessor  # noqa: F401,E402,E501
from kzoo.models.gpt.gpt_multiple_choice import GPTMultipleChoice  # noqa: F401,E402
from kzoo.models.gpt.gpt_multiple_choice_preprocessor import (  # noqa: F401,E402
    GPTMultipleChoicePreprocessor,
)
from kzoo.models.gpt.gpt_tokenizer import GPTTokenizer  # noqa: F401,E402

# ELMo.
from kzoo.models.elmo.elmo_backbone import ElmoBackbone  # noqa: F401,E402
from kzoo.models.elmo.elmo_embedder import ElmoEmbedder  # noqa: F401,E402
from kzoo.models.elmo.elmo_embedding import ElmoEmbedding  # noqa: F401,E402
from kzoo.models.elmo.elmo_language_model import ElmoLanguageModel  # noqa: F401,E402
from kzoo.models.elmo.elmo_language_model_preprocessor import (  # noqa: F401,E402
    ElmoLanguageModelPreprocessor,
)
