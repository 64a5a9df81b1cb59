"""BERT: encoder backbone, WordPiece tokenizer, tasks, Hugging Face converter."""

from kzoo.models.bert import bert_continued_pretraining, bert_pretraining, bert_shards
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_classifier import BertClassifier
from kzoo.models.bert.bert_classifier_preprocessor import BertClassifierPreprocessor
from kzoo.models.bert.bert_converter import HuggingFaceBertSource
from kzoo.models.bert.bert_features import BertFeatures
from kzoo.models.bert.bert_keras_hub import KerasHubBertSource
from kzoo.models.bert.bert_masked_lm import BertMaskedLM
from kzoo.models.bert.bert_masked_lm_preprocessor import BertMaskedLMPreprocessor
from kzoo.models.bert.bert_multiple_choice import BertMultipleChoice
from kzoo.models.bert.bert_multiple_choice_preprocessor import (
    BertMultipleChoicePreprocessor,
)
from kzoo.models.bert.bert_pretrainer import BertPretrainer
from kzoo.models.bert.bert_pretrainer_preprocessor import BertPretrainerPreprocessor
from kzoo.models.bert.bert_question_answerer import BertQuestionAnswerer
from kzoo.models.bert.bert_question_answerer_preprocessor import (
    BertQuestionAnswererPreprocessor,
)
from kzoo.models.bert.bert_text_embedder import BertTextEmbedder
from kzoo.models.bert.bert_token_classifier import BertTokenClassifier
from kzoo.models.bert.bert_token_classifier_preprocessor import (
    BertTokenClassifierPreprocessor,
)
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.family import Family, Pretraining, lazy, register_family
from kzoo.presets.preset_source import register_converter

__all__ = ["BertBackbone", "BertClassifier", "BertClassifierPreprocessor",
           "BertFeatures", "BertMaskedLM", "BertMaskedLMPreprocessor",
           "BertMultipleChoice", "BertMultipleChoicePreprocessor", "BertPretrainer",
           "BertPretrainerPreprocessor", "BertQuestionAnswerer",
           "BertQuestionAnswererPreprocessor", "BertTextEmbedder",
           "BertTokenClassifier", "BertTokenClassifierPreprocessor", "BertTokenizer"]

# Foreign checkpoint formats that from_preset reads.
register_converter(HuggingFaceBertSource)
register_converter(KerasHubBertSource)

register_family(Family(
    name="bert",
    title="BERT",
    published="2018-10",
    backbones=(BertBackbone,),
    converters=(HuggingFaceBertSource, KerasHubBertSource),
    tasks=(BertClassifier, BertTextEmbedder, BertMaskedLM, BertPretrainer,
           BertTokenClassifier, BertQuestionAnswerer, BertMultipleChoice),
    classes=(BertFeatures, BertTokenizer),
    pretraining=Pretraining(
        build=bert_pretraining.pretrain,
        continue_from=bert_continued_pretraining.continue_from,
        defaults=bert_pretraining.DEFAULTS,
        add_arguments=bert_pretraining.add_arguments,
        held_out=bert_pretraining.held_out,
        budget_options=bert_pretraining.budget_options,
        prepare=bert_shards.PREPARATION,
        from_shards=bert_shards.from_shards,
        task=BertPretrainer,
        example="kzoo pretrain bert --corpus wiki.txt --output runs/bert --num-layers 2"),
    word_in_context=lazy("kzoo.models.bert.bert_word_in_context:word_in_context"),
    hugging_face=lazy("kzoo.models.bert.bert_hf_writer:save_hugging_face"),
    keras_hub=lazy("kzoo.models.bert.bert_keras_hub:save_keras_hub"),
))
