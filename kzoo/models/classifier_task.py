"""The base of the tasks whose head is dropout and one dense layer."""

import keras
import numpy as np

from kzoo.layers.dropout import Dropout
from kzoo.models.task import Task, label_lookup


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
        label_names: None, or one name (str) per class: ``predict_labels``
            and the exported ``labels`` output give names; kept in the
            config (and so in presets and ``.keras`` files).
        **kwargs: ``keras.Model`` arguments (``name``, ...).
    """

    #: the name of the head's dense layer (the path of its weights)
    output_name = "logits"
    #: whether the head's dense layer has a bias; a subclass that takes
    #: ``use_bias`` sets it before calling ``__init__``
    use_bias = True

    def __init__(self, backbone, num_classes, preprocessor=None, dropout=0.1,
                 activation=None, label_names=None, **kwargs):
        if (not isinstance(num_classes, int) or isinstance(num_classes, bool)
                or num_classes < 1):
            raise ValueError(
                f"`num_classes` must be a positive int, got {num_classes!r}."
            )
        label_names = check_label_names(label_names, num_classes)
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout = Dropout(dropout, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            activation=activation,
            use_bias=self.use_bias,
            dtype=backbone.dtype_policy,
            name=self.output_name,
        )
        inputs, outputs = self._functional_graph(backbone)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.activation = keras.activations.get(activation)
        self.label_names = label_names
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

    def onnx_outputs(self, outputs, inputs=None):
        """``logits`` and ``probabilities`` (only ``probabilities`` with an
        activation): the numeric serving outputs."""
        if self._outputs_logits():
            return {"logits": outputs,
                    "probabilities": keras.ops.softmax(outputs, axis=-1)}
        return {"probabilities": outputs}

    def serving_outputs(self, outputs):
        """``logits`` and ``probabilities`` (only ``probabilities`` with an
        activation), and the predicted ``labels`` (strings) when the task
        has ``label_names``."""
        named = self.onnx_outputs(outputs)
        if self.label_names:
            named["labels"] = label_lookup(
                self.label_names, keras.ops.argmax(named["probabilities"], axis=-1))
        return named

    def names_of(self, ids):
        """Label ids (nested lists or an int array) → the label names
        (``None`` for an id of -1: no prediction); the ids as ints when the
        task has no ``label_names``."""
        ids = np.asarray(ids) if not isinstance(ids, list) else ids
        if isinstance(ids, np.ndarray) and ids.ndim == 0:
            ids = int(ids)
        if isinstance(ids, (int, np.integer)):
            if not self.label_names:
                return int(ids)
            return None if ids < 0 else self.label_names[int(ids)]
        return [self.names_of(i) for i in ids]

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            dropout=self.dropout,
            activation=None if self._outputs_logits()
            else keras.activations.serialize(self.activation),
            label_names=list(self.label_names) if self.label_names else None,
        )
        return config


def check_label_names(label_names, num_classes):
    """``label_names`` as a tuple of ``num_classes`` distinct non-empty
    strings, or None; a ``ValueError`` says what is wrong.

    Example:
    >>> check_label_names(["neg", "pos"], 2)
    ('neg', 'pos')
    """
    if label_names is None:
        return None
    if isinstance(label_names, str):
        raise TypeError("`label_names` must be a list of str (one per class), "
                        f"got the string {label_names!r}.")
    names = tuple(label_names)
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise ValueError(f"`label_names` must be non-empty strings, got {bad[:3]!r}.")
    if len(names) != num_classes:
        raise ValueError(f"`label_names` has {len(names)} names for "
                         f"num_classes={num_classes}: give one name per class.")
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"`label_names` repeats {repeated}: each class needs its "
                         "own name.")
    return names
