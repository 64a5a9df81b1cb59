"""A classification head on any backbone: one label per text or text pair."""

import keras
import numpy as np

from kzoo.api_export import kzoo_export
from kzoo.models.classifier_task import ClassifierTask


@kzoo_export("kzoo.models.TextClassifier")
class TextClassifier(ClassifierTask):
    """Backbone → features of the whole sequence → dropout → dense logits.

    The features are the backbone's ``pooled_output`` (BERT: tanh dense of
    ``[CLS]``); a family overrides ``sequence_features`` to read another
    position (GPT-1 reads its extract token). ``compile()`` defaults to Adam
    at 5e-5, sparse categorical cross-entropy on logits, and accuracy.

    With ``num_classes=1`` it is a regressor (Hugging Face's
    ``num_labels=1``; STS-B's similarity scores): one score per text, mean
    squared error on float labels, and Pearson and Spearman correlations
    as its metrics; the exported signature returns ``score``.

    Args:
        backbone: the family backbone.
        num_classes: int. Number of labels.
        preprocessor: a ``TextClassifierPreprocessor`` or None (then ``fit``
            takes the packed tensors).
        dropout: float. Dropout before the output layer.
        activation: None (logits, the default) or "softmax".
        label_names: None, or one name per class (see ``predict_labels``).

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
    >>> pre = kzoo.models.BertClassifierPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8)
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> model = kzoo.models.BertClassifier(
    ...     backbone, num_classes=2, preprocessor=pre, label_names=["neg", "pos"])
    >>> [label in ("neg", "pos") for label in model.predict_labels(["a good film"])]
    [True]
    """

    def serving_input_names(self):
        """``text``, plus ``text_pair`` when the preprocessor packs pairs."""
        if getattr(self.preprocessor, "num_segments", 1) == 2:
            return ("text", "text_pair")
        return ("text",)

    @property
    def is_regressor(self):
        """True with ``num_classes=1``: one score per text."""
        return self.num_classes == 1

    def _default_loss(self):
        if self.is_regressor:
            return keras.losses.MeanSquaredError()
        return super()._default_loss()

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Adam(5e-5); cross-entropy and accuracy, or for a regressor mean
        squared error and the Pearson and Spearman correlations."""
        if metrics == "auto" and self.is_regressor:
            from kzoo.metrics import PearsonCorrelation, SpearmanCorrelation

            metrics = [PearsonCorrelation(name="pearson"),
                       SpearmanCorrelation(name="spearman")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def serving_outputs(self, outputs):
        """``logits``, ``probabilities`` (and ``labels`` with label names);
        a regressor's ``score`` ``[batch]``."""
        if self.is_regressor:
            return {"score": outputs[:, 0]}
        return super().serving_outputs(outputs)

    def onnx_outputs(self, outputs, inputs=None):
        """A regressor's ``score``, else ``logits`` and ``probabilities``."""
        if self.is_regressor:
            return {"score": outputs[:, 0]}
        return super().onnx_outputs(outputs, inputs)

    def class_names(self):
        """The name of each class: ``label_names``, else ``"0"``, ``"1"``, ..."""
        return tuple(self.label_names or (str(i) for i in range(self.num_classes)))

    def serving_endpoints(self, sequence_length=None):
        """``serving_default`` (raw strings, see ``Task``) and, for a
        classifier, ``classify``: TF Serving's Classify API. ``classify``
        takes ``inputs``, serialized ``tf.Example`` protos with a ``text``
        bytes feature (and ``text_pair`` for pairs), and returns ``classes``
        (``[batch, num_classes]`` strings, ``class_names()``) and ``scores``
        (the probabilities, ``[batch, num_classes]``)."""
        endpoints = super().serving_endpoints(sequence_length)
        if self.is_regressor:
            return endpoints
        from kzoo.export.serving_warmup import classify_endpoint

        serve, signature = endpoints["serving_default"]
        endpoints["classify"] = classify_endpoint(
            serve, [spec.name for spec in signature], self.class_names())
        return endpoints

    def serving_method_names(self):
        """``classify`` is a classify signature (none for a regressor)."""
        return {} if self.is_regressor else {"classify": "tensorflow/serving/classify"}

    def serving_warmup_inputs(self):
        """The warmup requests of ``classify``: serialized examples of an
        empty, a one-word and a long text (``serving_default`` gets the
        default ones)."""
        if self.is_regressor:
            return {}
        from kzoo.export.serving_warmup import classify_warmup_requests

        return {"classify": classify_warmup_requests(self.serving_input_names())}

    def predict_labels(self, x, batch_size=32):
        """The predicted label of each text: its name with ``label_names``,
        else its id (a regressor: its score).

        Args:
            x: what ``predict`` takes (strings, or a tuple of two string
                batches for pairs).
            batch_size: int.

        Returns:
            A list, one label per text.
        """
        outputs = np.asarray(self.predict(x, batch_size=batch_size, verbose=0))
        if self.is_regressor:
            return [float(v) for v in outputs[:, 0]]
        return self.names_of(outputs.argmax(axis=-1))
