"""A multiple-choice head on any backbone: score N candidates, softmax."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.models.classifier_task import ClassifierTask


class _MergeChoices(keras.layers.Layer):
    """[batch, num_choices, length] → [batch * num_choices, length]."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))

    def compute_output_shape(self, shape):
        return (None, shape[-1])


class _SplitChoices(keras.layers.Layer):
    """[batch * num_choices, 1] scores → [batch, num_choices] (the shape of
    ``like``'s first two axes)."""

    def call(self, scores, like):
        shape = ops.shape(like)
        return ops.reshape(scores, (shape[0], shape[1]))

    def compute_output_spec(self, scores, like):
        return keras.KerasTensor(like.shape[:2], dtype=scores.dtype)


@kzoo_export("kzoo.models.MultipleChoice")
class MultipleChoice(ClassifierTask):
    """Scores each (context, candidate) pair and softmaxes over candidates.

    The inputs are ``[batch, num_choices, length]`` tensors (a
    ``MultipleChoicePreprocessor`` packs them); the model runs the backbone
    on the ``batch * num_choices`` pairs, reads each pair's whole-sequence
    features (``pooled_output``; a family may override
    ``sequence_features``), applies dropout and a dense layer to one score,
    and returns the scores as logits ``[batch, num_choices]``. The number of
    choices can change from call to call. ``compile()`` defaults to Adam at
    5e-5, sparse categorical cross-entropy on the logits (the label is the
    index of the right candidate) and accuracy.

    Args:
        backbone: the family backbone.
        preprocessor: a ``MultipleChoicePreprocessor`` or None.
        dropout: float. Dropout before the scoring layer.
    """

    #: the name of the scoring layer (the path of its weights)
    output_name = "choice_score"

    def __init__(self, backbone, preprocessor=None, dropout=0.1, **kwargs):
        self.merge_choices = _MergeChoices(name="merge_choices")
        self.split_choices = _SplitChoices(name="split_choices")
        # One score per (context, candidate) pair, as a logit.
        super().__init__(backbone, 1, preprocessor=preprocessor, dropout=dropout,
                         **kwargs)

    def _functional_graph(self, backbone):
        inputs = {
            name: keras.Input((None, None), dtype=tensor.dtype, name=name)
            for name, tensor in backbone.input.items()
        }
        pairs = {name: self.merge_choices(tensor) for name, tensor in inputs.items()}
        scores = self._head(self.sequence_features(backbone(pairs), pairs))
        first = next(iter(inputs.values()))
        return inputs, self.split_choices(scores, first)

    def serving_input_names(self):
        """``context``, then ``ending_0`` ... ``ending_{N-1}``."""
        num_choices = getattr(self.preprocessor, "num_choices", None)
        if num_choices is None:
            raise ValueError(
                "The serving signature takes one string input per ending: "
                "build the preprocessor with `num_choices=` set."
            )
        return ("context",) + tuple(f"ending_{i}" for i in range(num_choices))

    def get_config(self):
        config = super().get_config()
        # Fixed here (one score per choice, as a logit): not arguments.
        del config["num_classes"], config["activation"], config["label_names"]
        return config
