"""A classification head on any backbone: one label per text or text pair."""

import keras

from kzoo.api_export import kzoo_export
from kzoo.models.task import Task
from kzoo.layers.dropout import Dropout


@kzoo_export("kzoo.models.TextClassifier")
class TextClassifier(Task):
    """Backbone → features of the whole sequence → dropout → dense logits.

    The features are the backbone's ``pooled_output`` (BERT: tanh dense of
    ``[CLS]``); a family overrides ``sequence_features`` to read another
    position (GPT-1 reads its extract token). ``compile()`` defaults to Adam
    at 5e-5, sparse categorical cross-entropy on logits, and accuracy.

    Args:
        backbone: the family backbone.
        num_classes: int. Number of labels.
        preprocessor: a ``TextClassifierPreprocessor`` or None (then ``fit``
            takes the packed tensors).
        dropout: float. Dropout before the output layer.
        activation: None (logits, the default) or "softmax".
    """

    def __init__(self, backbone, num_classes, preprocessor=None, dropout=0.1,
                 activation=None, **kwargs):
        if not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(
                f"`num_classes` must be a positive int, got {num_classes!r}."
            )
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout = Dropout(dropout, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            activation=activation,
            dtype=backbone.dtype_policy,
            name="logits",
        )
        inputs = backbone.input
        features = self.sequence_features(backbone(inputs), inputs)
        outputs = self.output_dense(self.output_dropout(features))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.activation = keras.activations.get(activation)
        self.compile()

    def sequence_features(self, backbone_outputs, inputs):
        """The ``[batch, hidden]`` features the head classifies."""
        return backbone_outputs["pooled_output"]

    def serving_input_names(self):
        """``text``, plus ``text_pair`` when the preprocessor packs pairs."""
        if getattr(self.preprocessor, "num_segments", 1) == 2:
            return ("text", "text_pair")
        return ("text",)

    def serving_outputs(self, outputs):
        if self.activation in (None, keras.activations.linear):
            return {"logits": outputs,
                    "probabilities": keras.ops.softmax(outputs, axis=-1)}
        return {"probabilities": outputs}

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Adam(5e-5), cross-entropy on logits (or probabilities), accuracy."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(5e-5)
        if loss == "auto":
            from_logits = self.activation in (None, keras.activations.linear)
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=from_logits)
        if metrics == "auto":
            metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            dropout=self.dropout,
            activation=keras.activations.serialize(self.activation)
            if self.activation not in (None, keras.activations.linear) else None,
        )
        return config
