"""GPT: decoder backbone, tokenizer, causal LM, GPT-1-style fine-tuning, converter."""

from kzoo.models.family import Family, Pretraining, lazy, register_family
from kzoo.models.gpt import gpt_continued_pretraining, gpt_pretraining, gpt_shards
from kzoo.models.gpt.fine_tuning_tokens import add_fine_tuning_tokens
from kzoo.models.gpt.gpt1_tokenizer import GPT1Tokenizer
from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.models.gpt.gpt_causal_lm import GPTCausalLM
from kzoo.models.gpt.gpt_causal_lm_preprocessor import GPTCausalLMPreprocessor
from kzoo.models.gpt.gpt_classifier import GPTClassifier
from kzoo.models.gpt.gpt_classifier_preprocessor import GPTClassifierPreprocessor
from kzoo.models.gpt.gpt_converter import HuggingFaceGPT2Source, HuggingFaceOpenAIGPTSource
from kzoo.models.gpt.gpt_keras_hub import KerasHubGPT2Source
from kzoo.models.gpt.gpt_multiple_choice import GPTMultipleChoice
from kzoo.models.gpt.gpt_multiple_choice_preprocessor import GPTMultipleChoicePreprocessor
from kzoo.models.gpt.gpt_tokenizer import GPTTokenizer
from kzoo.presets.preset_source import register_converter

__all__ = ["GPT1Tokenizer", "GPTBackbone", "GPTCausalLM", "GPTCausalLMPreprocessor",
           "GPTClassifier", "GPTClassifierPreprocessor", "GPTMultipleChoice",
           "GPTMultipleChoicePreprocessor", "GPTTokenizer", "add_fine_tuning_tokens"]

# Foreign checkpoint formats that from_preset reads.
register_converter(HuggingFaceGPT2Source)
register_converter(HuggingFaceOpenAIGPTSource)
register_converter(KerasHubGPT2Source)

register_family(Family(
    name="gpt",
    title="GPT",
    published="2018-06",
    backbones=(GPTBackbone,),
    converters=(HuggingFaceGPT2Source, HuggingFaceOpenAIGPTSource, KerasHubGPT2Source),
    tasks=(GPTCausalLM, GPTClassifier, GPTMultipleChoice),
    classes=(GPTTokenizer, GPT1Tokenizer),
    pretraining=Pretraining(
        build=gpt_pretraining.pretrain,
        continue_from=gpt_continued_pretraining.continue_from,
        defaults=gpt_pretraining.DEFAULTS,
        add_arguments=gpt_pretraining.add_arguments,
        evaluate=gpt_pretraining.evaluate,
        held_out=gpt_pretraining.held_out,
        budget_options=gpt_pretraining.budget_options,
        prepare=gpt_shards.PREPARATION,
        from_shards=gpt_shards.from_shards,
        task=GPTCausalLM,
        example="kzoo pretrain gpt --corpus books.txt --output runs/gpt --epochs 3"),
    word_in_context=lazy("kzoo.models.gpt.gpt_word_in_context:word_in_context"),
    hugging_face=lazy("kzoo.models.gpt.gpt_hf_writer:save_hugging_face"),
    keras_hub=lazy("kzoo.models.gpt.gpt_keras_hub:save_keras_hub"),
))
