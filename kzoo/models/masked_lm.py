"""A masked language model head on any encoder backbone."""

import keras
import numpy as np

from kzoo.api_export import kzoo_export
from kzoo.layers.masked_lm_head import MaskedLMHead
from kzoo.models.task import Task, tokenizer_vocabulary_mask
from kzoo.losses import SparseLogitsCrossEntropy
from kzoo.ops.positions import token_positions


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

    ``from_preset`` on a converted checkpoint loads its pretrained head
    when it has one (the family converter's ``load_pretrained_head``).

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
            loss = SparseLogitsCrossEntropy(reduction="mean_with_sample_weight")
        if metrics == "auto":
            metrics = None
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)

    def fill_mask(self, x, top_k=5, batch_size=32):
        """The likeliest tokens at each mask token written in the text.

        Hugging Face's fill-mask pipeline, on a batch: special tokens in the
        text are read as such, so ``"paris is the [MASK] of france ."``
        predicts one token.

        Args:
            x: a list of strings (or a tuple of lists: sentence pairs).
            top_k: int. How many tokens per mask, likeliest first.
            batch_size: int. Texts per forward pass.

        Returns:
            One list per text, with one list per mask (in text order) of
            ``top_k`` dicts ``{"token", "token_id", "score"}`` (``score``
            the softmax probability).
        """
        if self.preprocessor is None:
            raise ValueError("fill_mask() needs the task's preprocessor.")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
            raise ValueError(f"`top_k` must be a positive int, got {top_k!r}.")
        segments = x if isinstance(x, tuple) else (x,)
        self._check_raw_text(segments[0])
        vocabulary = self.preprocessor.tokenizer.get_vocabulary()
        results = []
        for start in range(0, len(segments[0]), batch_size):
            batch = tuple(list(s[start:start + batch_size]) for s in segments)
            inputs, weights = self.preprocessor.fill_mask_inputs(
                batch if len(batch) > 1 else batch[0])
            logits = keras.ops.convert_to_numpy(self.predict_on_batch(inputs))
            weights = keras.ops.convert_to_numpy(weights)
            probabilities = _softmax(logits)
            for row, row_weights in zip(probabilities, weights):
                masks = []
                for scores in row[row_weights > 0]:
                    best = np.argsort(-scores, kind="stable")[:top_k]
                    masks.append([{"token": vocabulary[i], "token_id": int(i),
                                   "score": float(scores[i])} for i in best])
                results.append(masks)
        return results

    def serving_endpoints(self, sequence_length=None):
        """``serving_default``: ``text`` (strings with the mask token written
        in them) → ``logits`` ``[batch, width, vocabulary]`` at each mask,
        ``mask_positions`` and ``mask_weights`` ``[batch, width]`` (1.0 at a
        real mask), ``predicted_ids`` and ``predicted_tokens`` (the argmax).
        ``width`` is the preprocessor's ``mask_selection_length``."""
        preprocessor = self.preprocessor
        if preprocessor is None:
            raise ValueError(
                "Export needs the masked LM's preprocessor (it finds the mask "
                "token in the text inside the exported graph): build the task "
                "with `preprocessor=`.")

        def serve(text):
            x, weights = preprocessor.fill_mask_inputs(text)
            logits = self(x, training=False)
            predicted = keras.ops.argmax(logits, axis=-1)
            return {"logits": logits, "mask_positions": x["mask_positions"],
                    "mask_weights": weights, "predicted_ids": predicted,
                    "predicted_tokens": preprocessor.fill_mask_tokens(predicted)}

        signature = [keras.InputSpec(shape=(None,), dtype="string", name="text")]
        return {"serving_default": (serve, signature)}

    def onnx_inputs(self):
        """The backbone's inputs (``token_ids``, ``segment_ids``,
        ``padding_mask`` for BERT): the ids of text with the mask token
        written in it; the graph finds the mask positions itself."""
        return {name: self.input[name] for name in self.backbone.input}

    def onnx_call(self, inputs):
        """The SavedModel's numeric outputs on token ids: ``logits``
        ``[batch, width, vocabulary]`` at each mask token, ``mask_positions``
        and ``mask_weights`` ``[batch, width]`` (1.0 at a real mask) and
        ``predicted_ids`` (the argmax). ``width`` is the preprocessor's
        ``mask_selection_length``; masks past it in a row are not
        predicted (the SavedModel refuses such a text)."""
        if self.preprocessor is None:
            raise ValueError(
                "ONNX export of a masked LM needs its preprocessor (its mask "
                "token and mask_selection_length): build the task with "
                "`preprocessor=`.")
        masker = self.preprocessor.masker  # built once the vocabulary is set
        if masker is None:
            raise ValueError("The preprocessor's tokenizer has no vocabulary yet: "
                             "set it before export.")
        positions, weights = token_positions(
            inputs["token_ids"], masker.mask_token_id, masker.mask_selection_length)
        x = dict(inputs, mask_positions=positions)
        logits = self(x, training=False)
        return {"logits": logits, "mask_positions": positions,
                "mask_weights": weights,
                "predicted_ids": keras.ops.argmax(logits, axis=-1)}


def _softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=-1, keepdims=True)
