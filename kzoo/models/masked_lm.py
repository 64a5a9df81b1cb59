"""A masked language model head on any encoder backbone."""

import keras

from kzoo.api_export import kzoo_export
from kzoo.layers.masked_lm_head import MaskedLMHead
from kzoo.models.task import Task, tokenizer_vocabulary_mask


@kzoo_export("kzoo.models.MaskedLM")
class MaskedLM(Task):
    """Backbone → ``MaskedLMHead`` at ``mask_positions`` → vocabulary logits.

    The model takes the backbone's inputs plus ``mask_positions`` (int
    ``[batch, num_masks]``) and returns ``[batch, num_masks,
    vocabulary_size]`` logits: the head transforms the backbone's
    ``sequence_output`` at those positions and scores them against the
    backbone's token embedding matrix (tied weights) plus an output bias.
    With a ``MaskedLMPreprocessor``, ``fit`` takes raw strings: the
    preprocessor masks them and gives the original tokens as targets and the
    ``mask_weights`` as sample weights.

    ``compile()`` defaults to Adam at 5e-5, sparse categorical cross-entropy
    on logits averaged over the real predictions (the weighted sum divided by
    the sum of the mask weights, as BERT's pretraining loss) and the weighted
    ``accuracy`` of those predictions.

    When the backbone has more token ids than the preprocessor's tokenizer
    has tokens, the extra ids' logits are set to -1e9 (never predicted;
    ``kzoo.layers.VocabularyMask``, with a warning at construction); fewer
    ids than tokens is an error.

    The backbone must have a ``token_embedding`` (a ``keras.layers.Embedding``)
    and a ``sequence_output``; the head uses the backbone's ``activation`` and
    ``layer_norm_epsilon`` when it has them.

    ``from_preset`` gives the task a chance to load a pretrained head from
    the preset's source (``load_pretrained_head``): a family subclass reads
    its converter's head tensors there.

    Args:
        backbone: the family backbone.
        preprocessor: a ``MaskedLMPreprocessor`` or None (then ``fit`` takes
            the packed and masked tensors).
        **kwargs: ``keras.Model`` arguments (``name``, ...).
    """

    def __init__(self, backbone, preprocessor=None, **kwargs):
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.masked_lm_head = self.make_masked_lm_head(backbone)
        self.vocabulary_mask = tokenizer_vocabulary_mask(
            backbone, preprocessor, type(self).__name__)
        inputs = dict(backbone.input)
        inputs["mask_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="mask_positions"
        )
        backbone_outputs = backbone({k: inputs[k] for k in backbone.input})
        outputs = self.masked_lm_head(
            backbone_outputs["sequence_output"], inputs["mask_positions"]
        )
        if self.vocabulary_mask is not None:
            outputs = self.vocabulary_mask(outputs)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.compile()

    @staticmethod
    def make_masked_lm_head(backbone, name="masked_lm_head"):
        """The ``MaskedLMHead`` that fits ``backbone`` (tied embeddings)."""
        if not hasattr(backbone, "token_embedding"):
            raise ValueError(
                f"A masked LM ties its output to the backbone's token embedding; "
                f"{type(backbone).__name__} has no `token_embedding`."
            )
        return MaskedLMHead(
            token_embedding=backbone.token_embedding,
            intermediate_activation=getattr(backbone, "activation", "gelu"),
            layer_norm_epsilon=getattr(backbone, "layer_norm_epsilon", 1e-12),
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy,
            name=name,
        )

    def compile(self, optimizer="auto", loss="auto", metrics="auto",
                weighted_metrics="auto", **kwargs):
        """Adam(5e-5), masked cross-entropy on logits, weighted accuracy."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(5e-5)
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="mean_with_sample_weight"
            )
        if metrics == "auto":
            metrics = None
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)

    def serving_input_names(self):
        return ("text",)

    def serving_outputs(self, outputs):
        return {"logits": outputs}

    def load_pretrained_head(self, source):
        """Loads head weights that ``source`` (a ``PresetSource``) holds.

        ``from_preset`` calls it after building the task from a preset
        without a saved kzoo head. The generic task knows no foreign format
        and keeps its fresh head; family subclasses override it.

        Returns:
            True when weights were loaded.
        """
        return False

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Builds the task from a preset (see ``Task.from_preset``); with
        ``load_weights``, a pretrained head in a converted checkpoint (e.g.
        ``cls.predictions`` of a Hugging Face BERT) is loaded too."""
        from kzoo.presets import preset_loader

        task = super().from_preset(preset, load_weights=load_weights, **kwargs)
        if load_weights:
            task.load_pretrained_head(preset_loader.get_source(preset))
        return task
