"""A classification head on any backbone: one label per text or text pair."""

from kzoo.api_export import kzoo_export
from kzoo.models.classifier_task import ClassifierTask


@kzoo_export("kzoo.models.TextClassifier")
class TextClassifier(ClassifierTask):
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

    def serving_input_names(self):
        """``text``, plus ``text_pair`` when the preprocessor packs pairs."""
        if getattr(self.preprocessor, "num_segments", 1) == 2:
            return ("text", "text_pair")
        return ("text",)
