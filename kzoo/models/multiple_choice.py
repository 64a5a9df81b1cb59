"""A multiple-choice head on any backbone: score N candidates, softmax."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.models.task import Task
from kzoo.layers.dropout import Dropout


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
class MultipleChoice(Task):
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

    def __init__(self, backbone, preprocessor=None, dropout=0.1, **kwargs):
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.merge_choices = _MergeChoices(name="merge_choices")
        self.output_dropout = Dropout(dropout, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            1,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy,
            name="choice_score",
        )
        self.split_choices = _SplitChoices(name="split_choices")
        inputs = {
            name: keras.Input((None, None), dtype=tensor.dtype, name=name)
            for name, tensor in backbone.input.items()
        }
        pairs = {name: self.merge_choices(tensor) for name, tensor in inputs.items()}
        features = self.sequence_features(backbone(pairs), pairs)
        scores = self.output_dense(self.output_dropout(features))
        first = next(iter(inputs.values()))
        outputs = self.split_choices(scores, first)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.dropout = dropout
        self.compile()

    def sequence_features(self, backbone_outputs, inputs):
        """The ``[pairs, hidden]`` features each pair is scored from."""
        return backbone_outputs["pooled_output"]

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Adam(5e-5), cross-entropy over the choices, accuracy."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(5e-5)
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if metrics == "auto":
            metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def serving_input_names(self):
        """``context``, then ``ending_0`` ... ``ending_{N-1}``."""
        num_choices = getattr(self.preprocessor, "num_choices", None)
        if num_choices is None:
            raise ValueError(
                "The serving signature takes one string input per ending: "
                "build the preprocessor with `num_choices=` set."
            )
        return ("context",) + tuple(f"ending_{i}" for i in range(num_choices))

    def serving_outputs(self, outputs):
        return {"logits": outputs, "probabilities": ops.softmax(outputs, axis=-1)}

    def get_config(self):
        config = super().get_config()
        config.update(dropout=self.dropout)
        return config
