"""GPT-1 multiple choice: score each (context, answer) sequence, softmax."""

from kzoo.api_export import kzoo_export
from kzoo.models.gpt.fine_tuning_tokens import FineTuningTokensFromPreset
from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.models.gpt.gpt_classifier import extract_state
from kzoo.models.gpt.gpt_multiple_choice_preprocessor import (
    GPTMultipleChoicePreprocessor,
)
from kzoo.models.multiple_choice import MultipleChoice


@kzoo_export("kzoo.models.GPTMultipleChoice")
class GPTMultipleChoice(FineTuningTokensFromPreset, MultipleChoice):
    """GPT-1's multiple choice (RACE, Story Cloze): each answer is packed with
    the context as its own sequence, scored from its ``<|extract|>`` state by
    a linear layer, and the scores are softmaxed over the answers.

    Args: see ``kzoo.models.MultipleChoice``.
    """

    backbone_cls = GPTBackbone
    preprocessor_cls = GPTMultipleChoicePreprocessor

    def sequence_features(self, backbone_outputs, inputs):
        return extract_state(backbone_outputs["sequence_output"], inputs["padding_mask"])
