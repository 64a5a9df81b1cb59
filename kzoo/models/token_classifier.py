"""A per-token classification head on any backbone: one label per word."""

import keras
import numpy as np

from kzoo.api_export import kzoo_export
from kzoo.models.classifier_task import ClassifierTask


def word_predictions(logits, word_ids, num_words):
    """Per-token logits → one predicted label per word (first-piece rule).

    Args:
        logits: float array ``[batch, length, num_classes]``.
        word_ids: int array ``[batch, length]``: the word each position came
            from, -1 for special tokens and padding (the preprocessor's
            ``word_ids``).
        num_words: list of int, the number of words of each sentence.

    Returns:
        A list (one per sentence) of lists of int: the arg-max label at the
        first piece of each word, or -1 for a word with no position (cut by
        truncation, or a word that tokenizes to nothing).

    Example:
    >>> logits = np.array([[[0, 0], [1, 0], [0, 9], [0, 1], [0, 0]]], "float32")
    >>> word_ids = np.array([[-1, 0, 0, 1, -1]])
    >>> word_predictions(logits, word_ids, [3])
    [[0, 1, -1]]
    """
    logits = np.asarray(logits)
    word_ids = np.asarray(word_ids)
    labels = logits.argmax(-1) if logits.size else np.zeros(word_ids.shape, int)
    results = []
    for row, count in enumerate(num_words):
        predicted = [-1] * int(count)
        for position in range(word_ids.shape[1] - 1, -1, -1):  # first piece wins
            word = int(word_ids[row, position])
            if 0 <= word < count:
                predicted[word] = int(labels[row, position])
        results.append(predicted)
    return results


@kzoo_export("kzoo.models.TokenClassifier")
class TokenClassifier(ClassifierTask):
    """Backbone → every position's hidden state → dropout → dense logits.

    Token classification (named-entity recognition, part-of-speech tagging)
    as in the BERT paper (section 4.3): one label per word, read from the
    word's first piece. The model gives logits ``[batch, length,
    num_classes]`` for every position; ``predict_words`` maps them back to
    the words. ``compile()`` defaults to Adam at 5e-5, sparse categorical
    cross-entropy on logits averaged over the labelled pieces
    (``reduction="mean_with_sample_weight"``, the weights from the
    preprocessor) and a weighted accuracy over the same pieces.

    Args:
        backbone: the family backbone.
        num_classes: int. Number of labels.
        preprocessor: a ``TokenClassifierPreprocessor`` or None (then ``fit``
            takes the packed tensors).
        dropout: float. Dropout before the output layer.
        activation: None (logits, the default) or "softmax".
        label_names: None, or one tag name per class (``"B-PER"`` ...):
            ``predict_word_labels`` and the exported ``labels`` give names.
    """

    def sequence_features(self, backbone_outputs, inputs):
        """Every position's hidden state, ``[batch, length, hidden]``."""
        return backbone_outputs["sequence_output"]

    def _default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(
            from_logits=self._outputs_logits(),
            reduction="mean_with_sample_weight",
        )

    def compile(self, optimizer="auto", loss="auto", metrics=None,
                weighted_metrics="auto", **kwargs):
        """Adam(5e-5), cross-entropy over the labelled pieces, weighted accuracy."""
        if weighted_metrics == "auto":
            weighted_metrics = [
                keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)

    def predict_words(self, words, batch_size=32):
        """Predicted label ids, one per word.

        Args:
            words: a list of sentences, each a list of words (or a string,
                split on whitespace).
            batch_size: int. Sentences per forward pass.

        Returns:
            A list (one per sentence) of lists of int: the arg-max label at
            each word's first piece. Words cut by truncation (and words that
            tokenize to nothing) get -1: they were not seen by the model.
        """
        if self.preprocessor is None:
            raise ValueError(
                "`predict_words` needs the task's preprocessor: build the "
                "task with `preprocessor=`."
            )
        if isinstance(words, str) or not isinstance(words, (list, tuple)):
            raise TypeError(
                "`words` must be a list of sentences (each a list of words "
                f"or a string), got {type(words).__name__}."
            )
        results = []
        for start in range(0, len(words), batch_size):
            batch = list(words[start:start + batch_size])
            num_words = [len(s) for s in self.preprocessor.split_words(batch)]
            x = self.preprocessor(batch)
            word_ids = keras.ops.convert_to_numpy(self.preprocessor.word_ids(batch))
            logits = keras.ops.convert_to_numpy(self.predict_on_batch(x))
            results.extend(word_predictions(logits, word_ids, num_words))
        return results

    def predict_word_labels(self, words, batch_size=32):
        """``predict_words`` with the label names (``label_names``; a word
        the model did not see gets None). Without names, the ids."""
        return self.names_of(self.predict_words(words, batch_size=batch_size))

    def onnx_outputs(self, outputs, inputs=None):
        """Per-position ``logits``, ``probabilities`` and ``predictions``;
        ``serving_outputs`` adds ``labels`` with label names."""
        named = super().onnx_outputs(outputs, inputs)
        named["predictions"] = keras.ops.argmax(named["probabilities"], axis=-1)
        return named
