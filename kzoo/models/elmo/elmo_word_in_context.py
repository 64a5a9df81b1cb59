"""ELMo: a word's vector per biLM layer, from its tokens' vectors."""

import numpy as np

from kzoo.analysis.targets import overlapping, split_tokens
from kzoo.analysis.word_in_context import WordInContext
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_embedder import ElmoEmbedder


class ElmoWordInContext(WordInContext):
    """The ``WordInContext`` of an ELMo model.

    Sentences are split into word and punctuation tokens
    (``kzoo.analysis.targets.split_tokens``) and embedded with
    ``ElmoEmbedder``; the target's vectors are the mean of the tokens its
    character span overlaps (one token for a plain word). Layers: the
    context-free token layer, then each LSTM layer (forward | backward).

    Args:
        model: an ``ElmoEmbedder``, an ``ElmoBackbone``, or a task holding
            one as ``.backbone`` (``ElmoLanguageModel``).

    Example:
    >>> backbone = kzoo.models.ElmoBackbone(
    ...     num_layers=2, hidden_dim=8, projection_dim=4,
    ...     filters=((1, 4), (2, 4)), character_dim=4)
    >>> wic = ElmoWordInContext(backbone)
    >>> wic.layer_names
    ('token layer', 'LSTM 1', 'LSTM 2')
    >>> wic.word_vectors("The river bank.", "bank").shape
    (3, 8)
    """

    def __init__(self, model, batch_size=32):
        super().__init__(batch_size=batch_size)
        if not isinstance(model, ElmoEmbedder):
            model = ElmoEmbedder(getattr(model, "backbone", model))
        self.embedder = model
        num_layers = model.backbone.num_layers
        self.layer_names = ("token layer",) + tuple(
            f"LSTM {i + 1}" for i in range(num_layers))

    def _embed(self, sentences, spans):
        tokens = [split_tokens(s) for s in sentences]
        layers = self.embedder.embed_batch([[t[0] for t in row] for row in tokens])
        out = []
        for sentence, row, values, (start, end) in zip(sentences, tokens, layers, spans):
            positions = overlapping([t[1:] for t in row], start, end)
            if not positions:
                raise ValueError(f"No token of {sentence!r} covers characters "
                                 f"{start}-{end}: the span must hold a word.")
            out.append(values[:, positions].mean(axis=1))
        return np.stack(out)


def word_in_context(model, tokenizer=None, batch_size=32):
    """ELMo's family adapter for ``kzoo.analysis``: an
    ``ElmoWordInContext`` for an embedder, backbone or task, or for a
    preset (name or path). ELMo reads characters: ``tokenizer`` is unused."""
    if isinstance(model, str):
        model = ElmoBackbone.from_preset(model)
    return ElmoWordInContext(model, batch_size=batch_size)
