"""ElmoEmbedder: token lists in, numpy ELMo vectors out (AllenNLP's API)."""

import itertools

import keras
import numpy as np

from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_embedding import ElmoEmbedding
from kzoo.preprocessing.character_ids import CharacterIds


class ElmoEmbedder:
    """Computes ELMo vectors for tokenized sentences, as numpy arrays.

    The interface of AllenNLP's ``ElmoEmbedder``: ``embed_sentence(tokens)``
    gives a ``(num_layers + 1, len(tokens), 2 * projection_dim)`` array,
    layer 0 being the context-free token layer duplicated to the LSTM width
    (as AllenNLP did), then each LSTM layer (forward | backward). Unlike
    AllenNLP's, the vectors do not depend on what was embedded before (no
    LSTM state is carried between batches; see ``ElmoBackbone``).

    ``mixed=True`` gives the ``ScalarMix`` of the layers instead, a
    ``(len(tokens), 2 * projection_dim)`` array, with ``mix_weights`` (before
    the softmax; equal by default) and ``mix_gamma``.

    Args:
        backbone: an ``ElmoBackbone``.
        batch_size: int. Sentences per batch in ``embed_sentences``.
        mix_weights: optional ``num_layers + 1`` floats for ``mixed=True``.
        mix_gamma: float. Scale for ``mixed=True``. Defaults to 1.0.

    Example:
    >>> backbone = kzoo.models.ElmoBackbone(
    ...     num_layers=2, hidden_dim=8, projection_dim=4,
    ...     filters=((1, 4), (2, 4)), character_dim=4)
    >>> embedder = kzoo.models.ElmoEmbedder(backbone)
    >>> embedder.embed_sentence(["the", "river", "bank"]).shape
    (3, 3, 8)
    >>> embedder.embed_sentence(["bank"], mixed=True).shape
    (1, 8)
    >>> [v.shape for v in embedder.embed_batch([["a", "b"], []])]
    [(3, 2, 8), (3, 0, 8)]
    """

    def __init__(self, backbone, batch_size=64, mix_weights=None, mix_gamma=1.0):
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"`batch_size` must be a positive int, got {batch_size!r}.")
        self.backbone = backbone
        self.batch_size = batch_size
        self.embedding = ElmoEmbedding(
            backbone, initial_weights=mix_weights, initial_gamma=mix_gamma
        )
        self.characters = CharacterIds(max_word_length=backbone.max_word_length)
        ids = keras.Input((None, backbone.max_word_length), dtype="int32")
        layers, mask = self.embedding.layer_outputs(ids)
        mixed = self.embedding.scalar_mix(layers, mask=mask)
        self._model = keras.Model(
            ids, {"layers": keras.ops.stack(layers, axis=1), "mixed": mixed}
        )

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """An embedder on ``ElmoBackbone.from_preset(preset)`` (a registered
        name, a kzoo preset folder or an AllenNLP ELMo folder)."""
        return cls(ElmoBackbone.from_preset(preset), **kwargs)

    def serving_model(self):
        """What ``kzoo.export.saved_model`` writes for this embedder: its
        ``ElmoEmbedding`` (the mix of ``mixed=True``), which serves TF-Hub
        ELMo's signatures."""
        return self.embedding

    def embed_batch(self, batch, mixed=False):
        """ELMo vectors of a list of tokenized sentences.

        Args:
            batch: a list of sentences, each a list of str tokens.
            mixed: return the scalar mix instead of every layer.

        Returns:
            A list of numpy arrays, one per sentence: ``(num_layers + 1,
            len(tokens), dim)``, or ``(len(tokens), dim)`` when mixed.
        """
        batch = list(batch)
        for tokens in batch:
            if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
                raise TypeError(
                    "Each sentence must be a list of str tokens (split the "
                    f"text first), got {tokens!r:.80}."
                )
        if not batch:
            return []
        ids = np.asarray(keras.ops.convert_to_numpy(self.characters(batch)["character_ids"]))
        # Pad to a multiple of 8 tokens: fewer shapes to compile.
        length = ids.shape[1]
        padded = max(8, -(-length // 8) * 8)
        ids = np.pad(ids, ((0, 0), (0, padded - length), (0, 0)))
        outputs = self._model.predict_on_batch(ids)
        key = "mixed" if mixed else "layers"
        values = np.asarray(keras.ops.convert_to_numpy(outputs[key]))
        batch = [list(tokens) for tokens in batch]
        result = []
        for row, tokens in zip(values, batch):
            n = len(tokens)
            result.append(row[:n] if mixed else row[:, :n])
        return result

    def embed_sentence(self, tokens, mixed=False):
        """ELMo vectors of one tokenized sentence (see ``embed_batch``)."""
        return self.embed_batch([tokens], mixed=mixed)[0]

    def embed_sentences(self, sentences, batch_size=None, mixed=False):
        """ELMo vectors of many sentences, ``batch_size`` at a time.

        Yields one array per sentence, in order (see ``embed_batch``).
        """
        batch_size = batch_size or self.batch_size
        iterator = iter(sentences)
        while True:
            batch = list(itertools.islice(iterator, batch_size))
            if not batch:
                return
            yield from self.embed_batch(batch, mixed=mixed)


def sentence_vectors(preset, texts, batch_size=32, sequence_length=None):
    """``kzoo embed``'s ELMo vectors: per text (split on whitespace), the
    mean over words of the mean of its layers. ``sequence_length`` is
    unused (ELMo takes any length).

    Returns:
        float array ``[len(texts), 2 * projection_dim]``.
    """
    embedder = ElmoEmbedder.from_preset(preset)
    tokens = [text.split() for text in texts]
    return np.stack([vectors.mean(axis=(0, 1)) for vectors in
                     embedder.embed_sentences(tokens, batch_size=batch_size)])
