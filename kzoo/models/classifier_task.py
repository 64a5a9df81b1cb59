"""The base of the tasks whose head is dropout and one dense layer."""

import keras

from kzoo.layers.dropout import Dropout
from kzoo.models.task import Task


class ClassifierTask(Task):
    """Backbone → features → dropout → dense scores: the base of
    ``TextClassifier``, ``TokenClassifier`` and ``MultipleChoice``.

    The head is ``output_dropout`` and ``output_dense`` (``num_classes``
    units, a truncated-normal kernel of stddev 0.02, ``activation``, named
    ``output_name``), applied to the features ``sequence_features`` reads
    from the backbone's outputs (by default its ``pooled_output``). The
    base gives the defaults the tasks share: ``compile()`` with Adam at
    5e-5, sparse categorical cross-entropy (on logits, or on probabilities
    with an activation) and accuracy; the serving outputs ``logits`` and
    ``probabilities``; the config. A subclass overrides what differs:
    ``sequence_features``, ``_functional_graph`` (the model around the
    head), ``_default_loss``.

    Args:
        backbone: the family backbone.
        num_classes: int. Number of labels (units of the dense layer).
        preprocessor: the task's preprocessor, or None (then ``fit`` takes
            the packed tensors).
        dropout: float. Dropout before the dense layer.
        activation: None (logits, the default) or "softmax".
        **kwargs: ``keras.Model`` arguments (``name``, ...).
    """

    #: the name of the head's dense layer (the path of its weights)
    output_name = "logits"

    def __init__(self, backbone, num_classes, preprocessor=None, dropout=0.1,
                 activation=None, **kwargs):
        if (not isinstance(num_classes, int) or isinstance(num_classes, bool)
                or num_classes < 1):
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
            name=self.output_name,
        )
        inputs, outputs = self._functional_graph(backbone)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.activation = keras.activations.get(activation)
        self.compile()

    def _functional_graph(self, backbone):
        """``(inputs, outputs)`` of the model: the backbone's inputs, and the
        head on their features."""
        inputs = backbone.input
        return inputs, self._head(self.sequence_features(backbone(inputs), inputs))

    def _head(self, features):
        return self.output_dense(self.output_dropout(features))

    def sequence_features(self, backbone_outputs, inputs):
        """The features the head classifies (``[batch, hidden]``)."""
        return backbone_outputs["pooled_output"]

    def _outputs_logits(self):
        return self.activation in (None, keras.activations.linear)

    def _default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(
            from_logits=self._outputs_logits())

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Adam(5e-5), cross-entropy on logits (or probabilities), accuracy."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(5e-5)
        if loss == "auto":
            loss = self._default_loss()
        if metrics == "auto":
            metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def serving_outputs(self, outputs):
        if self._outputs_logits():
            return {"logits": outputs,
                    "probabilities": keras.ops.softmax(outputs, axis=-1)}
        return {"probabilities": outputs}

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            dropout=self.dropout,
            activation=None if self._outputs_logits()
            else keras.activations.serialize(self.activation),
        )
        return config
