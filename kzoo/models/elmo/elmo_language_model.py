"""ElmoLanguageModel: ELMo's bidirectional language model pretraining task."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.losses.sampled_softmax import log_uniform_candidates, sampled_softmax_logits
from kzoo.metrics.perplexity import Perplexity
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_language_model_preprocessor import (
    ElmoLanguageModelPreprocessor,
)
from kzoo.models.task import Task
from kzoo.losses import SparseLogitsCrossEntropy
from kzoo.layers.dropout import Dropout


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
    bilm-tf; with ``num_sampled``, bilm-tf's Adagrad, see below), a
    cross-entropy per direction averaged over the real predictions, and a
    ``kzoo.metrics.Perplexity`` per direction (``forward_perplexity``,
    ``backward_perplexity`` in the logs).

    For large vocabularies pass ``num_sampled`` (bilm-tf used 8192 of
    793k words): training then scores each position against its true word
    and ``num_sampled`` words drawn per batch from a log-uniform
    distribution over the ids (``kzoo.losses.sampled_softmax_logits``; word
    ids must run from frequent to rare, as ``compute_word_vocabulary``
    makes them), and the training ``*_perplexity`` is the exponential of
    that sampled loss (other compiled metrics also see the sampled logits,
    target 0), an estimate. The default optimizer is then bilm-tf's,
    Adagrad (0.2, initial accumulator 1.0, clip norm 10): a softmax row
    gets a gradient only in the batches that draw or target its word, and
    Adam's momentum keeps moving rare rows long after (a higher held-out
    perplexity than Adagrad's for the same steps). ``evaluate`` and ``predict`` always use
    the full softmax, so held-out perplexities are exact.

    Args:
        backbone: an ``ElmoBackbone``.
        vocabulary_size: int or None. Words the softmax scores; defaults to
            the preprocessor's tokenizer's vocabulary size.
        preprocessor: an ``ElmoLanguageModelPreprocessor`` or None (then
            ``fit`` takes the input dict, targets and weights directly).
        num_sampled: int or None. Sampled softmax with this many negatives
            per batch when training; None trains with the full softmax.
        seed: int or None. Seeds the negative sampling.
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

    def __init__(self, backbone, vocabulary_size=None, preprocessor=None,
                 num_sampled=None, seed=None, **kwargs):
        if vocabulary_size is None:
            if preprocessor is None:
                raise ValueError(
                    "ElmoLanguageModel needs `vocabulary_size` or a preprocessor "
                    "whose tokenizer gives it."
                )
            vocabulary_size = preprocessor.tokenizer.vocabulary_size()
        if num_sampled is not None and not (
                isinstance(num_sampled, int) and 0 < num_sampled < vocabulary_size):
            raise ValueError(
                "`num_sampled` must be None (full softmax) or an int between 1 "
                f"and vocabulary_size - 1 = {vocabulary_size - 1}, got "
                f"{num_sampled!r}."
            )
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout = Dropout(
            backbone.dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.softmax_dense = keras.layers.Dense(
            vocabulary_size, dtype=backbone.dtype_policy, name="softmax_dense"
        )
        inputs = dict(backbone.input)
        outputs = {direction: self.softmax_dense(hidden)
                   for direction, hidden in self._hidden_states(inputs).items()}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.vocabulary_size = vocabulary_size
        self.num_sampled = num_sampled
        self.seed = seed
        if num_sampled is not None:
            self.sampler_seed = keras.random.SeedGenerator(seed, name="sampler_seed")
        self.compile()

    def compile(self, optimizer="auto", loss="auto", metrics="auto",
                weighted_metrics="auto", **kwargs):
        """Adam(1e-3, clipnorm 10) (Adagrad(0.2) when sampled), cross-entropy
        and perplexity per direction."""
        if optimizer == "auto" and getattr(self, "num_sampled", None):
            optimizer = keras.optimizers.Adagrad(
                0.2, initial_accumulator_value=1.0, clipnorm=10.0)
        elif optimizer == "auto":
            optimizer = keras.optimizers.Adam(1e-3, clipnorm=10.0)
        if loss == "auto":
            loss = {
                direction: SparseLogitsCrossEntropy(
                    reduction="mean_with_sample_weight")
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

    def call(self, inputs, training=None, mask=None, **kwargs):
        if not (training and self.num_sampled):
            return super().call(inputs, training=training, mask=mask, **kwargs)
        # Sampled softmax training: the hidden states only; compute_loss
        # scores them against the targets and the sampled words.
        return {f"{direction}_hidden": hidden for direction, hidden
                in self._hidden_states(inputs, training=training).items()}

    def _hidden_states(self, inputs, training=None):
        """The top layer's forward and backward halves, after dropout."""
        top = self.backbone(inputs, training=training)
        top = top[f"lstm_output_{self.backbone.num_layers}"]
        width = self.backbone.projection_dim
        return {
            "forward": self.output_dropout(top[..., :width], training=training),
            "backward": self.output_dropout(top[..., width:], training=training),
        }

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                     training=True):
        if isinstance(y_pred, dict) and "forward_hidden" in y_pred:
            if self.softmax_dense.quantization_mode is not None:
                # Its `kernel` is then the raw int8 values, not the weights.
                raise ValueError(
                    "The sampled softmax trains the float softmax weights, and "
                    f"this model's softmax_dense is quantized "
                    f"({self.softmax_dense.quantization_mode!r}): fit before "
                    "`quantize`, or evaluate / predict the quantized model.")
            sampled = log_uniform_candidates(
                self.num_sampled, self.vocabulary_size, seed=self.sampler_seed)
            kernel, bias = self.softmax_dense.kernel, self.softmax_dense.bias
            # The true word is column 0 of each position's sampled logits.
            y_pred = {
                direction: sampled_softmax_logits(
                    y_pred[f"{direction}_hidden"], y[direction], kernel, bias, sampled)
                for direction in ("forward", "backward")
            }
            y = {direction: ops.zeros_like(y[direction]) for direction in y_pred}
            # The metrics see these logits too (compute_metrics only gets the
            # hidden states): the training perplexity is the sampled one.
            if self._compile_metrics is not None:
                self._compile_metrics.update_state(y, y_pred, sample_weight)
        return super().compute_loss(x, y, y_pred, sample_weight, training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        if isinstance(y_pred, dict) and "forward_hidden" in y_pred:
            return self.get_metrics_result()  # updated in compute_loss
        return super().compute_metrics(x, y, y_pred, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary_size": self.vocabulary_size,
                       "num_sampled": self.num_sampled, "seed": self.seed})
        return config
