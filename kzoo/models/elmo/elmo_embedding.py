"""ElmoEmbedding: a frozen biLM and a trainable ScalarMix, as a Keras layer."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.layers.scalar_mix import ScalarMix
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.preprocessing.character_ids import (
    BEGIN_OF_SENTENCE,
    BEGIN_OF_WORD,
    END_OF_SENTENCE,
    END_OF_WORD,
    PADDING,
    CharacterIds,
    unpad_tokens,
)


def _boundary_ids(character, max_word_length):
    # CharacterIds' encoding of <S> / </S> (shifted by one).
    ids = [PADDING + 1] * max_word_length
    ids[0], ids[1], ids[2] = BEGIN_OF_WORD + 1, character + 1, END_OF_WORD + 1
    return ids


def add_sentence_boundaries(character_ids):
    """Puts ``<S>`` before and ``</S>`` after each row's real tokens.

    Args:
        character_ids: int ``[batch, tokens, max_word_length]`` ids as
            ``CharacterIds()`` gives them (no boundaries; all-zero rows are
            padding).

    Returns:
        ``(ids, padding_mask, token_mask)``: ``[batch, tokens + 2,
        max_word_length]`` ids for ``ElmoBackbone``, its bool padding mask,
        and the bool ``[batch, tokens]`` mask of the input's real tokens.
    """
    character_ids = ops.cast(character_ids, "int32")
    width = ops.shape(character_ids)[-1]
    # ops.equal etc., not ==: a symbolic KerasTensor's == is Python's.
    token_mask = ops.any(ops.greater(character_ids, 0), axis=-1)
    lengths = ops.sum(ops.cast(token_mask, "int32"), axis=1)[:, None, None]
    pad = ops.zeros_like(character_ids[:, :1])
    ids = ops.concatenate([pad, character_ids, pad], axis=1)
    # Positions without the (possibly unknown) length: works symbolically too.
    position = ops.cumsum(ops.ones_like(ids[:1, :, :1]), axis=1) - 1
    bos = ops.convert_to_tensor(_boundary_ids(BEGIN_OF_SENTENCE, width), "int32")
    eos = ops.convert_to_tensor(_boundary_ids(END_OF_SENTENCE, width), "int32")
    ids = ops.where(ops.equal(position, 0), bos[None, None, :], ids)
    ids = ops.where(ops.equal(position, lengths + 1), eos[None, None, :], ids)
    padding_mask = ops.less(position[..., 0], lengths[..., 0] + 2)
    return ids, padding_mask, token_mask


@kzoo_export("kzoo.models.ElmoEmbedding")
class ElmoEmbedding(keras.layers.Layer):
    """ELMo vectors for the tokens of a batch: a Keras layer to build on.

    The feature-based use of the paper (and AllenNLP's ``Elmo`` module): a
    pretrained ``ElmoBackbone``, frozen, runs on each sentence (with ``<S>``
    and ``</S>`` added here, dropped from the outputs); its
    ``num_layers + 1`` layers (the token layer duplicated to the LSTM width
    ``2 * projection_dim``, then each LSTM layer) are mixed by a trainable
    ``ScalarMix`` (the task-specific softmax weights ``s`` and scale
    ``gamma``). The output keeps a mask of the real tokens, so masked Keras
    layers after it (LSTM, pooling) skip the padding.

    Args:
        backbone: an ``ElmoBackbone`` (or its serialized config). Frozen
            here: ``backbone.trainable`` is set to False.
        layer_norm: bool. Normalise each layer before mixing (see
            ``ScalarMix``). Defaults to False.
        initial_weights: optional ``num_layers + 1`` floats, the mix's
            weights before the softmax (defaults to an equal mix).
        initial_gamma: float. Defaults to 1.0.
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).

    Call arguments:
        character_ids: int ``[batch, tokens, max_word_length]`` from
            ``kzoo.preprocessing.CharacterIds()`` (no sentence boundaries;
            padding rows all zero).

    Returns:
        ``[batch, tokens, 2 * projection_dim]`` floats, zero on padding,
        with a ``[batch, tokens]`` mask.

    Example:
    >>> backbone = kzoo.models.ElmoBackbone(
    ...     num_layers=1, hidden_dim=8, projection_dim=4,
    ...     filters=((1, 4), (2, 4)), character_dim=4)
    >>> embedding = kzoo.models.ElmoEmbedding(backbone)
    >>> chars = kzoo.preprocessing.CharacterIds()(["a river bank", "a bank"])
    >>> tuple(embedding(chars["character_ids"]).shape)
    (2, 3, 8)
    >>> [w.name for w in embedding.trainable_weights]  # the biLM is frozen
    ['scalar_weights', 'gamma']
    """

    def __init__(self, backbone, layer_norm=False, initial_weights=None,
                 initial_gamma=1.0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(backbone, dict):
            backbone = keras.layers.deserialize(backbone)
        self.backbone = backbone
        self.backbone.trainable = False
        self.scalar_mix = ScalarMix(
            backbone.num_layers + 1, layer_norm=layer_norm,
            initial_weights=initial_weights, initial_gamma=initial_gamma,
            dtype=self.dtype_policy, name="scalar_mix",
        )
        self.supports_masking = True

    def build(self, character_ids_shape):
        dim = 2 * self.backbone.projection_dim
        self.scalar_mix.build([(None, None, dim)] * self.scalar_mix.num_layers)
        self.built = True

    def layer_outputs(self, character_ids):
        """The biLM's layers for the input's tokens, before mixing.

        Returns:
            ``(layers, token_mask)``: a list of ``num_layers + 1`` float
            tensors ``[batch, tokens, 2 * projection_dim]`` (the token layer
            duplicated, then each LSTM layer; zero on padding) and the bool
            ``[batch, tokens]`` mask.
        """
        ids, padding_mask, token_mask = add_sentence_boundaries(character_ids)
        outputs = self.backbone(
            {"character_ids": ids, "padding_mask": ops.cast(padding_mask, "int32")},
            training=False,
        )
        keep = ops.expand_dims(ops.cast(token_mask, outputs["token_output"].dtype), -1)
        token = outputs["token_output"]
        layers = [ops.concatenate([token, token], axis=-1)] + [
            outputs[f"lstm_output_{i + 1}"] for i in range(self.backbone.num_layers)
        ]
        return [layer[:, 1:-1] * keep for layer in layers], token_mask

    def call(self, character_ids):
        layers, token_mask = self.layer_outputs(character_ids)
        return self.scalar_mix(layers, mask=token_mask)

    def compute_mask(self, character_ids, mask=None):
        return ops.any(ops.greater(character_ids, 0), axis=-1)

    def compute_output_shape(self, character_ids_shape):
        return tuple(character_ids_shape[:2]) + (2 * self.backbone.projection_dim,)

    # --- serving ---
    def serving_endpoints(self, sequence_length=None):
        """TF-Hub ELMo's signatures (https://tfhub.dev/google/elmo/3), which
        ``kzoo.export.saved_model`` writes, exactly these two:

        * ``default``: one input, ``default`` (``tf.string [batch]``,
          sentences split on whitespace inside the graph; ``hub.Module``
          named a signature's single input ``default``);
        * ``tokens``: ``tokens`` (``tf.string [batch, max_len]``, padded
          with "") and ``sequence_len`` (``tf.int32 [batch]``; a length
          larger than ``max_len`` is an error).

        Both return ``word_emb`` (``[batch, max_len, projection_dim]``, the
        token layer), ``lstm_outputs1``, ``lstm_outputs2`` (``[batch,
        max_len, 2 * projection_dim]``, one per LSTM layer), ``elmo`` (this
        layer's scalar mix) and ``default`` (``[batch, 2 *
        projection_dim]``, the mean of ``elmo`` over the real tokens; zeros
        for an empty sentence). ``max_len`` is the longest sentence
        (``default``) or the width of ``tokens``. Padding positions are
        zeros; ``<S>`` and ``</S>`` are added and dropped inside.
        ``sequence_length`` does not apply (ELMo takes any length). Load
        the SavedModel with ``tf.saved_model.load(path).signatures[
        "default"](default=...)``.
        """
        width = self.backbone.max_word_length
        if not self.built:  # the variables must exist before tracing
            self.build((None, None, width))
        characters = CharacterIds(max_word_length=width)

        def default(sentences):
            return self._hub_outputs(characters(sentences)["character_ids"])

        def tokens(tokens, sequence_len):
            ids = characters(unpad_tokens(tokens, sequence_len, name="sequence_len"))
            ids = ids["character_ids"]
            # Back to the width of the tokens matrix (padding rows are zeros).
            pad = ops.shape(tokens)[1] - ops.shape(ids)[1]
            return self._hub_outputs(ops.pad(ids, [[0, 0], [0, pad], [0, 0]]))

        return {
            "default": (default, [
                keras.InputSpec(shape=(None,), dtype="string", name="default")]),
            "tokens": (tokens, [
                keras.InputSpec(shape=(None, None), dtype="string", name="tokens"),
                keras.InputSpec(shape=(None,), dtype="int32", name="sequence_len")]),
        }

    def _hub_outputs(self, character_ids):
        """TF-Hub ELMo's outputs for character ids (see ``serving_endpoints``)."""
        layers, mask = self.layer_outputs(character_ids)
        elmo = self.scalar_mix(layers, mask=mask)
        outputs = {"word_emb": layers[0][..., :self.backbone.projection_dim]}
        for i, layer in enumerate(layers[1:]):
            outputs[f"lstm_outputs{i + 1}"] = layer
        outputs["elmo"] = elmo
        weight = ops.expand_dims(ops.cast(mask, elmo.dtype), -1)
        outputs["default"] = ops.divide_no_nan(
            ops.sum(elmo * weight, axis=1), ops.sum(weight, axis=1))
        return outputs

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """An ElmoEmbedding on ``ElmoBackbone.from_preset(preset)``.

        Args:
            preset: a registered name, a kzoo preset folder or an AllenNLP
                ELMo folder (``options.json`` + weights hdf5).
            load_weights: load the pretrained biLM weights.
            **kwargs: ``ElmoEmbedding`` arguments.
        """
        return cls(ElmoBackbone.from_preset(preset, load_weights=load_weights), **kwargs)

    def get_config(self):
        config = super().get_config()
        mix = self.scalar_mix
        config.update({
            "backbone": keras.layers.serialize(self.backbone),
            "layer_norm": mix.layer_norm,
            "initial_weights": mix.initial_weights,
            "initial_gamma": mix.initial_gamma,
        })
        return config
