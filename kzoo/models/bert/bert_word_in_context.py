"""BERT: a word's vector per layer, its word pieces mean-pooled."""

import keras
import numpy as np

from kzoo.analysis.targets import overlapping
from kzoo.analysis.word_in_context import WordInContext
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.presets import preset_loader


def _byte_offset(sentence, char_offset):
    return len(sentence[:char_offset].encode("utf-8"))


class BertWordInContext(WordInContext):
    """The ``WordInContext`` of a BERT model.

    Each sentence is tokenized with the tokenizer's byte offsets
    (``tokenize_with_offsets``), packed as ``[CLS] pieces [SEP]`` and run
    through ``backbone.hidden_states_model()``; the target's vector at a
    layer is the mean of the word pieces whose offsets overlap its span
    (``"unaffable"`` → ``un ##aff ##able``: three pieces pooled). Layers:
    the embeddings, then each encoder block. The tokenizer runs on the
    current preprocessing engine (see ``kzoo.preprocessing.engine``): both
    give the same pieces and offsets, and the Python one needs no
    TensorFlow.

    Args:
        backbone: a ``BertBackbone``, or a task that holds one (its
            ``preprocessor.tokenizer`` is used when ``tokenizer`` is None).
        tokenizer: a ``BertTokenizer`` (``WordPieceTokenizer``).

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "bank", "##s"]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=8, num_layers=2, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8)
    >>> wic = BertWordInContext(backbone, kzoo.models.BertTokenizer(vocab))
    >>> wic.layer_names
    ('embeddings', 'layer 1', 'layer 2')
    >>> wic.word_vectors("The banks", "banks").shape
    (3, 4)
    """

    def __init__(self, backbone, tokenizer=None, batch_size=32):
        super().__init__(batch_size=batch_size)
        backbone, tokenizer = self.backbone_and_tokenizer(backbone, tokenizer, "BertTokenizer")
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.hidden_states = backbone.hidden_states_model()
        self.layer_names = ("embeddings",) + tuple(
            f"layer {i + 1}" for i in range(backbone.num_layers))

    def _pack(self, sentences, spans):
        """Token ids and padding mask ``[batch, length]``, and each target's
        piece positions."""
        pieces = self.tokenizer.tokenize_with_offsets(sentences)
        rows, positions = [], []
        limit = self.backbone.max_sequence_length
        for i, (sentence, (start, end)) in enumerate(zip(sentences, spans)):
            ids = [int(t) for t in pieces["token_ids"][i]]
            offsets = list(zip(pieces["start_offsets"][i], pieces["end_offsets"][i]))
            hits = overlapping(offsets, _byte_offset(sentence, start),
                               _byte_offset(sentence, end))
            if not hits:
                raise ValueError(f"No word piece of {sentence!r} covers characters "
                                 f"{start}-{end}: the span must hold a word.")
            if len(ids) + 2 > limit:
                raise ValueError(f"{sentence!r:.80} has {len(ids)} word pieces; the "
                                 f"model takes {limit - 2} (max_sequence_length "
                                 f"{limit} with [CLS] and [SEP]): shorten it.")
            rows.append([self.tokenizer.cls_token_id] + ids + [self.tokenizer.sep_token_id])
            positions.append([h + 1 for h in hits])
        length = min(limit, -(-max(len(r) for r in rows) // 8) * 8)  # fewer shapes
        token_ids = np.full((len(rows), length), self.tokenizer.pad_token_id or 0, "int32")
        padding_mask = np.zeros((len(rows), length), "int32")
        for i, row in enumerate(rows):
            token_ids[i, :len(row)] = row
            padding_mask[i, :len(row)] = 1
        return token_ids, padding_mask, positions

    def _embed(self, sentences, spans):
        token_ids, padding_mask, positions = self._pack(sentences, spans)
        outputs = self.hidden_states.predict_on_batch({
            "token_ids": token_ids,
            "segment_ids": np.zeros_like(token_ids),
            "padding_mask": padding_mask,
        })
        layers = np.stack([keras.ops.convert_to_numpy(h)
                           for h in outputs["hidden_states"]], axis=1)
        return np.stack([layers[i][:, p].mean(axis=1) for i, p in enumerate(positions)])


def word_in_context(model, tokenizer=None, batch_size=32):
    """BERT's family adapter for ``kzoo.analysis``: a ``BertWordInContext``
    for a backbone or task, or for a preset (name or path; its
    tokenizer with it)."""
    if isinstance(model, str):
        source = preset_loader.get_source(model)
        tokenizer = tokenizer or BertTokenizer.from_preset(source)
        model = preset_loader.load_backbone(source)
    return BertWordInContext(model, tokenizer, batch_size=batch_size)
