"""GPT-1 multiple choice: score each (context, answer) sequence, softmax."""

from kzoo.api_export import kzoo_export
from kzoo.models.gpt.fine_tuning_tokens import FineTuningTokensFromPreset
from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.models.gpt.gpt_classifier import (
    LanguageModelLoss,
    check_language_model_loss_weight,
    extract_state,
)
from kzoo.models.gpt.gpt_multiple_choice_preprocessor import (
    GPTMultipleChoicePreprocessor,
)
from kzoo.models.multiple_choice import MultipleChoice


@kzoo_export("kzoo.models.GPTMultipleChoice")
class GPTMultipleChoice(FineTuningTokensFromPreset, MultipleChoice):
    """GPT-1's multiple choice (RACE, Story Cloze): each answer is packed with
    the context as its own sequence, scored from its ``<|extract|>`` state by
    a linear layer, and the scores are softmaxed over the answers.

    ``language_model_loss_weight`` (λ, 0.5 in the GPT paper) adds λ x the
    language-model loss to the choice loss, as ``GPTClassifier`` does: the
    next-token cross-entropy averaged over the real tokens of every
    (context, answer) sequence of the batch.

    transformers' ``GPT2DoubleHeadsModel`` and ``OpenAIGPTDoubleHeadsModel``
    score choices with the same head (their ``mc_logits``, with
    ``mc_token_ids`` at each extract token): ``from_preset`` on such a folder
    loads it, and ``kzoo.export.hugging_face`` writes one.

    Args:
        backbone: a ``GPTBackbone`` whose vocabulary has the three
            fine-tuning tokens.
        preprocessor: a ``GPTMultipleChoicePreprocessor`` or None.
        dropout: float. Dropout before the scoring layer.
        language_model_loss_weight: float >= 0. λ of the auxiliary loss
            (0, the default, trains on the choice loss alone).

    Reference:
        Radford et al., 2018, "Improving Language Understanding by Generative
        Pre-Training", section 3.3.
    """

    backbone_cls = GPTBackbone
    preprocessor_cls = GPTMultipleChoicePreprocessor

    def __init__(self, backbone, preprocessor=None, dropout=0.1,
                 language_model_loss_weight=0.0, **kwargs):
        check_language_model_loss_weight(language_model_loss_weight)
        self.language_model_loss_weight = language_model_loss_weight
        self.language_model_loss = (
            LanguageModelLoss(backbone.token_embedding, language_model_loss_weight,
                              name="language_model_loss")
            if language_model_loss_weight else None)
        super().__init__(backbone, preprocessor=preprocessor, dropout=dropout,
                         **kwargs)

    def sequence_features(self, backbone_outputs, inputs):
        sequence_output = backbone_outputs["sequence_output"]
        features = extract_state(sequence_output, inputs["padding_mask"])
        if self.language_model_loss is not None:
            features = self.language_model_loss(
                features, sequence_output, inputs["token_ids"], inputs["padding_mask"])
        return features

    def get_config(self):
        config = super().get_config()
        config.update(language_model_loss_weight=self.language_model_loss_weight)
        return config
