"""BERT pretraining: masked language model + next sentence prediction."""

import keras

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_pretrainer_preprocessor import BertPretrainerPreprocessor
from kzoo.models.masked_lm import MaskedLM
from kzoo.models.task import Task, _is_raw_text, tokenizer_vocabulary_mask
from kzoo.losses import SparseLogitsCrossEntropy
from kzoo.preprocessing.batches import RawBatches


def _is_documents_dataset(x):
    spec = getattr(x, "element_spec", None)
    return (
        spec is not None
        and not isinstance(spec, (tuple, dict))
        and _is_raw_text(spec)
    )


@kzoo_export("kzoo.models.BertPretrainer")
class BertPretrainer(Task):
    """BERT with both pretraining heads, trainable from raw documents.

    The model takes the backbone's inputs plus ``mask_positions`` and returns
    a dict: ``mlm_logits`` (``[batch, num_masks, vocabulary_size]``, the
    shared ``MaskedLMHead`` on ``sequence_output``, tied to the token
    embeddings) and ``nsp_logits`` (``[batch, 2]``, a dense layer on
    ``pooled_output``, Hugging Face's ``cls.seq_relationship``; class 0 is
    "the second sentence follows the first", 1 "random"). Token ids the
    tokenizer lacks are masked out of ``mlm_logits`` as in
    ``kzoo.models.MaskedLM``.

    ``compile()`` defaults to Adam at 1e-4 and the paper's loss: the masked
    LM cross-entropy averaged over the real predictions plus the
    next-sentence cross-entropy; Keras reports them per output
    (``mlm_logits_loss``, ``nsp_logits_loss``) with the accuracies
    ``mlm_logits_accuracy`` (over the real masked tokens) and
    ``nsp_logits_accuracy``.

    ``fit``, ``evaluate`` and ``predict`` take raw documents (a list of
    documents, each a list of sentences, or a ragged string tensor), which go
    through ``preprocessor.dataset_from_documents`` (``batch_size`` pairs per
    batch), or a ``tf.data.Dataset`` of documents, or the dataset that
    ``dataset_from_documents`` returns. ``validation_data`` may be a list of
    documents too.

    ``BertPretrainer.from_preset(folder)`` on a Hugging Face
    ``BertForPreTraining`` folder loads both heads (``cls.predictions`` and
    ``cls.seq_relationship``); heads a checkpoint lacks stay randomly
    initialized, with a warning.

    Args:
        backbone: a ``BertBackbone``.
        preprocessor: a ``BertPretrainerPreprocessor`` or None.
        **kwargs: ``keras.Model`` arguments (``name``, ...).

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> pre = kzoo.models.BertPretrainerPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8,
    ...     seed=1)
    >>> model = kzoo.models.BertPretrainer(backbone, preprocessor=pre)
    >>> x, y, w = pre([["a b", "c a", "b"], ["c c", "a"]])
    >>> out = model(x)
    >>> tuple(out["mlm_logits"].shape), tuple(out["nsp_logits"].shape)
    ((3, 2, 8), (3, 2))

    Reference:
        Devlin et al., 2019, "BERT: Pre-training of Deep Bidirectional
        Transformers for Language Understanding" (arXiv:1810.04805), 3.1.
    """

    backbone_cls = BertBackbone
    preprocessor_cls = BertPretrainerPreprocessor

    def __init__(self, backbone, preprocessor=None, **kwargs):
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.masked_lm_head = MaskedLM.make_masked_lm_head(backbone)
        self.vocabulary_mask = tokenizer_vocabulary_mask(
            backbone, preprocessor, type(self).__name__)
        self.next_sentence_head = keras.layers.Dense(
            2,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy,
            name="next_sentence_head",
        )
        inputs = dict(backbone.input)
        inputs["mask_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="mask_positions"
        )
        backbone_outputs = backbone({k: inputs[k] for k in backbone.input})
        mlm_logits = self.masked_lm_head(
            backbone_outputs["sequence_output"], inputs["mask_positions"]
        )
        if self.vocabulary_mask is not None:
            mlm_logits = self.vocabulary_mask(mlm_logits)
        outputs = {
            "mlm_logits": mlm_logits,
            "nsp_logits": self.next_sentence_head(backbone_outputs["pooled_output"]),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.compile()

    def compile(self, optimizer="auto", loss="auto", metrics="auto",
                weighted_metrics="auto", **kwargs):
        """Adam(1e-4); masked LM + next sentence cross-entropies; accuracies."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(1e-4)
        if loss == "auto":
            loss = {
                "mlm_logits": SparseLogitsCrossEntropy(
                    reduction="mean_with_sample_weight"),
                "nsp_logits": keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True),
            }
        if metrics == "auto":
            metrics = None
        if weighted_metrics == "auto":
            weighted_metrics = {
                "mlm_logits": [
                    keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                "nsp_logits": [
                    keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
            }
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)

    # --- raw documents ---
    def _preprocess_dataset(self, x, y=None, sample_weight=None, batch_size=None,
                            shuffle=False, passes=None):
        is_dataset = hasattr(x, "element_spec")
        if (isinstance(x, (tuple, RawBatches))
                or (is_dataset and not _is_documents_dataset(x))):
            # Sentence pairs with their labels: the generic path.
            return super()._preprocess_dataset(x, y, sample_weight, batch_size,
                                               shuffle, passes)
        if y is not None or sample_weight is not None:
            raise ValueError(
                "BertPretrainer makes its targets from the documents: pass "
                "documents only (no `y`, no `sample_weight`)."
            )
        batches = self.preprocessor.dataset_from_documents(
            x, batch_size=batch_size or 32, shuffle=shuffle
        )
        if isinstance(batches, RawBatches):  # pairs, to pack and mask
            return super()._preprocess_dataset(batches, passes=passes)
        return batches

    def fit(self, x=None, y=None, batch_size=None, sample_weight=None,
            validation_data=None, shuffle=True, **kwargs):
        if (validation_data is not None and self.preprocessor is not None
                and not isinstance(validation_data, (tuple, RawBatches))
                and (_is_documents_dataset(validation_data)
                     or not hasattr(validation_data, "element_spec"))):
            validation_data = self.preprocessor.dataset_from_documents(
                validation_data, batch_size=batch_size or 32, shuffle=False
            )
        return super().fit(x=x, y=y, batch_size=batch_size,
                           sample_weight=sample_weight, shuffle=shuffle,
                           validation_data=validation_data, **kwargs)

    # --- serving ---
    def serving_input_names(self):
        return ("text", "text_pair")
