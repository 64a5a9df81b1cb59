"""BERT with its masked language model head."""

import warnings

import keras
import numpy as np

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_converter import HuggingFaceBertSource
from kzoo.models.bert.bert_masked_lm_preprocessor import BertMaskedLMPreprocessor
from kzoo.models.masked_lm import MaskedLM
from kzoo.presets.errors import PresetError

_MLM_PREFIX = "cls.predictions."


def hugging_face_masked_lm_head_plan(head, token_embedding, tensors, where):
    """Matches Hugging Face ``cls.predictions.*`` tensors to a ``MaskedLMHead``.

    Args:
        head: a built ``MaskedLMHead`` tied to ``token_embedding``.
        token_embedding: the backbone's (already loaded) token embedding.
        tensors: ``HuggingFaceBertSource.load_head_tensors()``.
        where: the checkpoint, for messages.

    Returns:
        ``[(variable, value)]`` to assign, or None when the checkpoint has no
        masked LM head. Raises PresetError, assigning nothing, when a tensor
        is missing or has the wrong shape, or when the checkpoint's decoder
        is not tied to its word embeddings.
    """
    if not any(name.startswith(_MLM_PREFIX) for name in tensors):
        return None
    entries = [
        ("transform.dense.weight", head.transform_dense.kernel, True),
        ("transform.dense.bias", head.transform_dense.bias, False),
        ("transform.LayerNorm.weight", head.transform_layer_norm.gamma, False),
        ("transform.LayerNorm.bias", head.transform_layer_norm.beta, False),
        ("bias", head.output_bias, False),
    ]
    plan, problems = [], []
    for name, variable, transpose in entries:
        name = _MLM_PREFIX + name
        if name not in tensors:
            problems.append(f"{name} is missing")
            continue
        value = np.asarray(tensors[name], dtype="float32")
        value = value.T if transpose else value
        if tuple(value.shape) != tuple(variable.shape):
            problems.append(
                f"{name} has shape {tuple(np.shape(tensors[name]))}, the head "
                f"expects {tuple(variable.shape)[::-1] if transpose else tuple(variable.shape)}"
            )
            continue
        plan.append((variable, value))
    decoder = tensors.get(_MLM_PREFIX + "decoder.weight")
    if decoder is not None and not problems:
        embeddings = keras.ops.convert_to_numpy(token_embedding.embeddings)
        decoder = np.asarray(decoder, dtype="float32")
        if decoder.shape != embeddings.shape or not np.allclose(
            decoder, embeddings, atol=1e-6
        ):
            problems.append(
                "cls.predictions.decoder.weight is not tied to (equal to) the "
                "word embeddings, and kzoo's head always ties them"
            )
    if problems:
        raise PresetError(
            f"The masked LM head in {where} does not fit: "
            + "; ".join(problems) + ". Nothing of the head was loaded."
        )
    return plan


@kzoo_export("kzoo.models.BertMaskedLM")
class BertMaskedLM(MaskedLM):
    """BERT's masked language model: predict the masked tokens of a text.

    ``BertMaskedLM.from_preset(folder)`` on a Hugging Face
    ``BertForPreTraining`` or ``BertForMaskedLM`` folder loads the backbone
    and the pretrained ``cls.predictions`` head (transform dense, layer norm
    and output bias; the output projection is the word embedding matrix,
    tied). A checkpoint without that head (a plain ``BertModel``, e.g.
    ``"minilm_l6_en_uncased"``) gets a freshly initialized head, with a
    warning. ``fit`` on raw strings continues masked-LM pretraining.

    Args: see ``kzoo.models.MaskedLM``.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
    >>> pre = kzoo.models.BertMaskedLMPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8, seed=1)
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> model = kzoo.models.BertMaskedLM(backbone, preprocessor=pre)
    >>> x, y, w = pre(["a good film", "good"])
    >>> tuple(model(x).shape)
    (2, 2, 8)
    """

    backbone_cls = BertBackbone
    preprocessor_cls = BertMaskedLMPreprocessor

    def load_pretrained_head(self, source):
        """Loads ``cls.predictions.*`` of a Hugging Face BERT checkpoint."""
        if not isinstance(source, HuggingFaceBertSource):
            return False
        plan = hugging_face_masked_lm_head_plan(
            self.masked_lm_head, self.backbone.token_embedding,
            source.load_head_tensors(), source.path,
        )
        if plan is None:
            warnings.warn(
                f"{source.path} holds no masked LM head (cls.predictions.*, "
                "as BertForMaskedLM / BertForPreTraining save): the head is "
                "randomly initialized and needs training.",
                stacklevel=3,
            )
            return False
        for variable, value in plan:
            variable.assign(value)
        return True
