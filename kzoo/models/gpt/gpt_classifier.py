"""GPT fine-tuning: a linear head on the last real token's state (GPT-1's
extract token, or the text's last token as transformers' GPT-2 classifier)."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.layers.tied_embedding_logits import token_embedding_table
from kzoo.models.gpt.fine_tuning_tokens import FineTuningTokensFromPreset
from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.models.gpt.gpt_classifier_preprocessor import GPTClassifierPreprocessor
from kzoo.models.text_classifier import TextClassifier
from kzoo.ops.positions import last_real_position


def extract_state(sequence_output, padding_mask):
    """The hidden state of each row's last real token (``<|extract|>`` when
    right-padded): ``[batch, hidden]``."""
    return last_real_position(sequence_output, padding_mask)


class _AddOrders(keras.layers.Layer):
    """``[2 * batch, hidden]`` (both orders stacked) → the sum ``[batch, hidden]``."""

    def call(self, x):
        half = ops.shape(x)[0] // 2
        return x[:half] + x[half:]

    def compute_output_shape(self, shape):
        return (None,) + tuple(shape[1:])


def check_language_model_loss_weight(weight):
    """Raises a ``ValueError`` unless ``weight`` (GPT-1's λ) is a number >= 0."""
    if (isinstance(weight, bool) or not isinstance(weight, (int, float))
            or not weight >= 0):
        raise ValueError("`language_model_loss_weight` must be a number >= 0 "
                         f"(GPT-1 uses 0.5), got {weight!r}.")


class LanguageModelLoss(keras.layers.Layer):
    """Adds ``weight`` x the next-token cross-entropy of the input sequence
    (over real tokens, tied output embedding) to the model's losses, and
    passes ``features`` through unchanged: GPT-1's auxiliary objective."""

    def __init__(self, token_embedding, loss_weight, **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        self.loss_weight = loss_weight

    def call(self, features, sequence_output, token_ids, padding_mask):
        embeddings = token_embedding_table(self.token_embedding, sequence_output.dtype)
        logits = ops.matmul(sequence_output[:, :-1], ops.transpose(embeddings))
        targets = token_ids[:, 1:]
        weights = ops.cast(padding_mask[:, 1:], "float32")
        losses = keras.losses.sparse_categorical_crossentropy(
            targets, ops.cast(logits, "float32"), from_logits=True)
        loss = ops.sum(losses * weights) / ops.maximum(ops.sum(weights), 1.0)
        self.add_loss(self.loss_weight * loss)
        return features

    def compute_output_shape(self, features_shape, *args):
        return features_shape


@kzoo_export("kzoo.models.GPTClassifier")
class GPTClassifier(FineTuningTokensFromPreset, TextClassifier):
    """GPT-1 fine-tuning: classification, entailment and similarity.

    The backbone reads the packed sequence (see
    ``GPTClassifierPreprocessor``); the classifier takes the hidden state of
    the ``<|extract|>`` token (the last real token of each row), applies
    dropout and a linear layer. With ``symmetric=True`` (similarity) the
    preprocessor stacks both orders of each pair and the two extract states
    are added before the linear layer. ``language_model_loss_weight`` (λ,
    0.5 in the GPT paper) adds λ x the language-model loss on the same
    inputs to the classification loss.

    transformers' ``GPT2ForSequenceClassification`` (and
    ``OpenAIGPTForSequenceClassification``) is this model with
    ``use_bias=False`` and a preprocessor with ``fine_tuning_tokens=False``:
    the text's own tokens, the state of the last one, a linear layer
    without bias. ``from_preset`` on such a Hugging Face folder builds it
    so, and ``kzoo.export.hugging_face`` writes it back.

    Args:
        backbone: a ``GPTBackbone`` whose vocabulary has the three
            fine-tuning tokens.
        num_classes: int.
        preprocessor: a ``GPTClassifierPreprocessor`` or None.
        dropout: float. Dropout before the linear layer (GPT: 0.1).
        activation: None (logits) or "softmax".
        language_model_loss_weight: float >= 0. λ of the auxiliary loss.
        symmetric: bool. Similarity: add the states of both orders.
        use_bias: bool. Whether the linear layer has a bias (transformers'
            GPT classifiers: none).

    Reference:
        Radford et al., 2018, "Improving Language Understanding by Generative
        Pre-Training", section 3.3.
    """

    backbone_cls = GPTBackbone
    preprocessor_cls = GPTClassifierPreprocessor

    def __init__(self, backbone, num_classes, preprocessor=None, dropout=0.1,
                 activation=None, language_model_loss_weight=0.0, symmetric=False,
                 use_bias=True, **kwargs):
        check_language_model_loss_weight(language_model_loss_weight)
        if preprocessor is not None and getattr(preprocessor, "symmetric",
                                                symmetric) != symmetric:
            raise ValueError(
                f"`symmetric={symmetric}` but the preprocessor has "
                f"symmetric={preprocessor.symmetric}: the model adds both orders "
                "only when the preprocessor packs them.")
        self.language_model_loss_weight = language_model_loss_weight
        self.symmetric = symmetric
        self.use_bias = bool(use_bias)
        self.add_orders = _AddOrders(name="add_orders") if symmetric else None
        self.language_model_loss = (
            LanguageModelLoss(backbone.token_embedding, language_model_loss_weight,
                              name="language_model_loss")
            if language_model_loss_weight else None)
        super().__init__(backbone, num_classes, preprocessor=preprocessor,
                         dropout=dropout, activation=activation, **kwargs)

    def sequence_features(self, backbone_outputs, inputs):
        sequence_output = backbone_outputs["sequence_output"]
        features = extract_state(sequence_output, inputs["padding_mask"])
        if self.language_model_loss is not None:
            features = self.language_model_loss(
                features, sequence_output, inputs["token_ids"], inputs["padding_mask"])
        if self.add_orders is not None:
            features = self.add_orders(features)
        return features

    def get_config(self):
        config = super().get_config()
        config.update(language_model_loss_weight=self.language_model_loss_weight,
                      symmetric=self.symmetric, use_bias=self.use_bias)
        return config
