"""A context and N answers → N GPT-1 sequences ``<|start|> context <|delim|> answer <|extract|>``."""

import keras

from kzoo.api_export import kzoo_export
from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.models.gpt.gpt_tokenizer import (
    DELIMITER_TOKEN,
    EXTRACT_TOKEN,
    START_TOKEN,
    GPTTokenizer,
)
from kzoo.models.multiple_choice_preprocessor import MultipleChoicePreprocessor


@kzoo_export("kzoo.models.GPTMultipleChoicePreprocessor")
class GPTMultipleChoicePreprocessor(MultipleChoicePreprocessor):
    """GPT-1's multiple-choice transformation (see MultipleChoicePreprocessor):
    each answer becomes its own sequence with the context, ``[batch,
    num_choices, sequence_length]`` ``token_ids`` and ``padding_mask``."""

    backbone_cls = GPTBackbone
    tokenizer_cls = GPTTokenizer
    start_token = START_TOKEN
    sep_token = DELIMITER_TOKEN
    end_token = EXTRACT_TOKEN

    def call(self, x, y=None, sample_weight=None):
        packed, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
            super().call(x, y, sample_weight))
        packed = {k: packed[k] for k in ("token_ids", "padding_mask")}
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)

    def python_call(self, x, y=None, sample_weight=None):
        packed, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
            super().python_call(x, y, sample_weight))
        packed = {k: packed[k] for k in ("token_ids", "padding_mask")}
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)
