"""ElmoLanguageModel: ELMo's bidirectional language model pretraining task."""

import keras

from kzoo.api_export import kzoo_export
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_language_model_preprocessor import (
    ElmoLanguageModelPreprocessor,
)
from kzoo.models.task import Task


@kzoo_export("kzoo.models.ElmoLanguageModel")
class ElmoLanguageModel(Task):
    """A forward and a backward word-level language model on one biLM.

    The top LSTM layer of the ``ElmoBackbone`` is split into its forward
    half, which at each position predicts the next word, and its backward
    half, which predicts the previous one (the biLM objective of Peters et
    al., eq. 1). Both go through dropout (the backbone's rate) and one
    shared softmax layer over the word vocabulary, as in bilm-tf. With an
    ``ElmoLanguageModelPreprocessor``, ``fit``/``evaluate`` take raw
    sentences (a list of str or a ``tf.data.Dataset`` of strings).

    ``compile()`` defaults to Adam (1e-3, gradients clipped to norm 10 as
    bilm-tf), a cross-entropy per direction averaged over the real
    predictions, and a ``perplexity`` per direction (``forward_perplexity``,
    ``backward_perplexity`` in the logs).

    The softmax is a full one (a ``[projection_dim, vocabulary_size]``
    matrix): fine up to some 50k words; bilm-tf's sampled softmax for
    million-word vocabularies is not implemented here.

    Args:
        backbone: an ``ElmoBackbone``.
        vocabulary_size: int or None. Words the softmax scores; defaults to
            the preprocessor's tokenizer's vocabulary size.
        preprocessor: an ``ElmoLanguageModelPreprocessor`` or None (then
            ``fit`` takes the input dict, targets and weights directly).
        **kwargs: ``keras.Model`` arguments (``name``, ...).

    Returns (called on the backbone's inputs):
        A dict of logits ``forward`` and ``backward``, ``[batch, tokens,
        vocabulary_size]``.

    Example:
    >>> tokenizer = kzoo.tokenizers.WordTokenizer(
    ...     vocabulary=["<UNK>", "<S>", "</S>", "the", "bank"], oov_token="<UNK>")
    >>> model = kzoo.models.ElmoLanguageModel(
    ...     kzoo.models.ElmoBackbone(num_layers=1, hidden_dim=8, projection_dim=4,
    ...                              filters=((1, 4), (2, 4)), character_dim=4),
    ...     preprocessor=kzoo.models.ElmoLanguageModelPreprocessor(tokenizer))
    >>> sorted(model.evaluate(["the bank", "a bank"], verbose=0, return_dict=True))
    ['backward_loss', 'backward_perplexity', 'forward_loss', 'forward_perplexity', 'loss']
    """

    backbone_cls = ElmoBackbone
    preprocessor_cls = ElmoLanguageModelPreprocessor

    def __init__(self, backbone, vocabulary_size=None, preprocessor=None, **kwargs):
        if vocabulary_size is None:
            if preprocessor is None:
                raise ValueError(
                    "ElmoLanguageModel needs `vocabulary_size` or a preprocessor "
                    "whose tokenizer gives it."
                )
            vocabulary_size = preprocessor.tokenizer.vocabulary_size()
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout = keras.layers.Dropout(
            backbone.dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.softmax_dense = keras.layers.Dense(
            vocabulary_size, dtype=backbone.dtype_policy, name="softmax_dense"
        )
        inputs = dict(backbone.input)
        top = backbone(inputs)[f"lstm_output_{backbone.num_layers}"]
        width = backbone.projection_dim
        outputs = {
            "forward": self.softmax_dense(self.output_dropout(top[..., :width])),
            "backward": self.softmax_dense(self.output_dropout(top[..., width:])),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.vocabulary_size = vocabulary_size
        self.compile()

    def compile(self, optimizer="auto", loss="auto", metrics="auto",
                weighted_metrics="auto", **kwargs):
        """Adam(1e-3, clipnorm 10), cross-entropy and perplexity per direction."""
        from keras_hub.metrics import Perplexity

        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(1e-3, clipnorm=10.0)
        if loss == "auto":
            loss = {
                direction: keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True, reduction="mean_with_sample_weight")
                for direction in ("forward", "backward")
            }
        if metrics == "auto":
            metrics = None
        if weighted_metrics == "auto":
            weighted_metrics = {
                direction: [Perplexity(from_logits=True, name="perplexity")]
                for direction in ("forward", "backward")
            }
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)

    def get_config(self):
        config = super().get_config()
        config["vocabulary_size"] = self.vocabulary_size
        return config
