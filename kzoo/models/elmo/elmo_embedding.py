"""ElmoEmbedding: AllenNLP's ``Elmo`` module (a biLM and its scalar mixes) as a
Keras layer."""

import keras
import numpy as np
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.layers.dropout import Dropout
from kzoo.layers.scalar_mix import ScalarMix
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.preprocessing.character_ids import (
    BEGIN_OF_SENTENCE,
    BEGIN_OF_WORD,
    BOS_TOKEN,
    END_OF_SENTENCE,
    END_OF_WORD,
    EOS_TOKEN,
    PADDING,
    CharacterIds,
    unpad_tokens,
)

#: words per batch when ``vocab_to_cache`` is turned into token vectors
_CACHE_BATCH = 1024


def _boundary_ids(character, max_word_length):
    # CharacterIds' encoding of <S> / </S> (shifted by one).
    ids = [PADDING + 1] * max_word_length
    ids[0], ids[1], ids[2] = BEGIN_OF_WORD + 1, character + 1, END_OF_WORD + 1
    return ids


def _add_boundaries(values, token_mask, begin, end):
    """``values`` ``[batch, tokens, d]`` with ``begin`` put first and ``end``
    after each row's last real token: ``(values [batch, tokens + 2, d],
    padding_mask)``."""
    lengths = ops.sum(ops.cast(token_mask, "int32"), axis=1)[:, None, None]
    pad = ops.zeros_like(values[:, :1])
    values = ops.concatenate([pad, values, pad], axis=1)
    # Positions without the (possibly unknown) length: works symbolically too.
    position = ops.cumsum(ops.ones_like(ops.cast(values[:1, :, :1], "int32")), axis=1) - 1
    begin = ops.cast(begin, values.dtype)[None, None, :]
    end = ops.cast(end, values.dtype)[None, None, :]
    # ops.equal etc., not ==: a symbolic KerasTensor's == is Python's.
    values = ops.where(ops.equal(position, 0), begin, values)
    values = ops.where(ops.equal(position, lengths + 1), end, values)
    padding_mask = ops.less(position[..., 0], lengths[..., 0] + 2)
    return values, padding_mask


def add_sentence_boundaries(character_ids):
    """Puts ``<S>`` before and ``</S>`` after each row's real tokens.

    AllenNLP's ``add_sentence_boundary_token_ids``, on ``CharacterIds``' ids.

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
    token_mask = ops.any(ops.greater(character_ids, 0), axis=-1)
    ids, padding_mask = _add_boundaries(
        character_ids, token_mask,
        ops.convert_to_tensor(_boundary_ids(BEGIN_OF_SENTENCE, width), "int32"),
        ops.convert_to_tensor(_boundary_ids(END_OF_SENTENCE, width), "int32"))
    return ids, padding_mask, token_mask


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"ElmoEmbedding: `{name}` must be True or False, got {value!r}.")


@kzoo_export("kzoo.models.ElmoEmbedding")
class ElmoEmbedding(keras.layers.Layer):
    """ELMo vectors for the tokens of a batch: AllenNLP's ``Elmo`` as a
    Keras layer.

    The feature-based use of the paper: a pretrained ``ElmoBackbone`` runs
    on each sentence (with ``<S>`` and ``</S>`` added here); its
    ``num_layers + 1`` layers (the token layer duplicated to the LSTM width
    ``2 * projection_dim``, then each LSTM layer) are mixed by
    ``num_output_representations`` trainable ``ScalarMix`` layers (each
    with its own softmax weights ``s`` and scale ``gamma``, one per place
    the task model uses ELMo, e.g. the input and the output of its RNN);
    each mix then loses the boundary positions and goes through dropout.
    The outputs keep a mask of the real tokens, so masked Keras layers
    after it (LSTM, pooling) skip the padding. The biLM always runs in
    inference mode (its own dropout off), also while it is fine-tuned, as
    in AllenNLP.

    The options are those of AllenNLP's ``Elmo``, under the same names:

    Args:
        backbone: an ``ElmoBackbone`` (or its serialized config).
        num_output_representations: int. How many mixes (outputs).
            Defaults to 1.
        dropout: float in [0, 1). Dropout on each output, in training only
            (AllenNLP's default and the paper's setups use 0.5). Defaults
            to 0.0.
        requires_grad: bool. Fine-tune the biLM: its weights (and the
            cached token vectors) are trainable. Defaults to False (frozen;
            ``backbone.trainable`` is set to this value).
        do_layer_norm: bool. Normalise each layer before mixing, over the
            real positions and the boundaries (see ``ScalarMix``).
            Defaults to False.
        keep_sentence_boundaries: bool. Keep the ``<S>`` and ``</S>``
            positions in the outputs (``tokens + 2`` long; the mask marks
            them as real). Defaults to False.
        scalar_mix_parameters: optional ``num_layers + 1`` floats: fixed mix
            weights before the softmax, with ``gamma`` fixed at
            ``initial_gamma``; the mixes are then not trainable.
        vocab_to_cache: optional list of words. Their token vectors
            (character CNN, highway layers and projection) are computed once
            and stored in a table; the layer then takes word ids into this
            list instead of character ids, with id 0 as padding (as for
            AllenNLP, put the padding token first). ``<S>`` and ``</S>``
            are cached too.
        initial_weights: optional ``num_layers + 1`` floats, the trainable
            mixes' starting weights before the softmax (defaults to an equal
            mix).
        initial_gamma: float. Defaults to 1.0.
        layer_norm: the former name of ``do_layer_norm`` (read from older
            configs).
        **kwargs: ``keras.layers.Layer`` arguments (``name``, ``dtype``).

    Call arguments:
        inputs: int ``[batch, tokens, max_word_length]`` from
            ``kzoo.preprocessing.CharacterIds()`` (no sentence boundaries;
            padding rows all zero), or with ``vocab_to_cache`` int
            ``[batch, tokens]`` ids into ``vocab_to_cache`` (0 on padding).
        training: applies ``dropout`` when True.

    Returns:
        ``[batch, tokens, 2 * projection_dim]`` floats, zero on padding
        (as in AllenNLP, not so where ``do_layer_norm`` and
        ``keep_sentence_boundaries`` are both set), with a ``[batch,
        tokens]`` mask (``tokens + 2`` with the boundaries); a list of
        ``num_output_representations`` such tensors when it is above 1.

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
    >>> two = kzoo.models.ElmoEmbedding(backbone, num_output_representations=2)
    >>> [tuple(x.shape) for x in two(chars["character_ids"])]
    [(2, 3, 8), (2, 3, 8)]

    Reference:
        AllenNLP's ``allennlp.modules.elmo.Elmo``.
    """

    def __init__(self, backbone, num_output_representations=1, dropout=0.0,
                 requires_grad=False, do_layer_norm=False,
                 keep_sentence_boundaries=False, scalar_mix_parameters=None,
                 vocab_to_cache=None, initial_weights=None, initial_gamma=1.0,
                 layer_norm=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(backbone, dict):
            backbone = keras.layers.deserialize(backbone)
        if (not isinstance(num_output_representations, int)
                or isinstance(num_output_representations, bool)
                or num_output_representations < 1):
            raise ValueError(
                "ElmoEmbedding: `num_output_representations` must be an int >= 1 "
                f"(one per place the task uses ELMo), got {num_output_representations!r}."
            )
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not (
                0.0 <= dropout < 1.0):
            raise ValueError(f"ElmoEmbedding: `dropout` must be a float in [0, 1), "
                             f"got {dropout!r}.")
        if layer_norm is not None:
            if do_layer_norm and not layer_norm:
                raise ValueError("ElmoEmbedding: `layer_norm` is the former name of "
                                 "`do_layer_norm`; give only `do_layer_norm`.")
            do_layer_norm = layer_norm
        for name, value in (("requires_grad", requires_grad),
                            ("do_layer_norm", do_layer_norm),
                            ("keep_sentence_boundaries", keep_sentence_boundaries)):
            _check_bool(name, value)
        num_layers = backbone.num_layers + 1
        if scalar_mix_parameters is not None:
            if initial_weights is not None:
                raise ValueError(
                    "ElmoEmbedding: give either `scalar_mix_parameters` (fixed mix "
                    "weights) or `initial_weights` (trainable ones), not both.")
            scalar_mix_parameters = [float(w) for w in scalar_mix_parameters]
            if len(scalar_mix_parameters) != num_layers:
                raise ValueError(
                    f"ElmoEmbedding: `scalar_mix_parameters` has "
                    f"{len(scalar_mix_parameters)} values but the biLM has {num_layers} "
                    f"layers to mix (the token layer and {backbone.num_layers} LSTM "
                    "layers): give one weight per layer.")
        if vocab_to_cache is not None:
            if isinstance(vocab_to_cache, str) or not all(
                    isinstance(w, str) for w in vocab_to_cache):
                raise TypeError("ElmoEmbedding: `vocab_to_cache` must be a list of str "
                                f"words, got {vocab_to_cache!r:.80}.")
            vocab_to_cache = list(vocab_to_cache)
            if len(vocab_to_cache) < 2:
                raise ValueError(
                    "ElmoEmbedding: `vocab_to_cache` needs the padding token (id 0) "
                    f"and at least one word, got {vocab_to_cache!r}.")
        self.backbone = backbone
        self.backbone.trainable = requires_grad
        self.scalar_mixes = [
            ScalarMix(
                num_layers, layer_norm=do_layer_norm,
                initial_weights=(scalar_mix_parameters if scalar_mix_parameters is not None
                                 else initial_weights),
                initial_gamma=initial_gamma, trainable=scalar_mix_parameters is None,
                dtype=self.dtype_policy, name="scalar_mix" if k == 0 else f"scalar_mix_{k}",
            )
            for k in range(num_output_representations)
        ]
        self.scalar_mix = self.scalar_mixes[0]
        self.representation_dropout = Dropout(
            dropout, dtype=self.dtype_policy, name="representation_dropout")
        self.supports_masking = True

        # === Config ===
        self.num_output_representations = num_output_representations
        self.dropout = float(dropout)
        self.requires_grad = requires_grad
        self.do_layer_norm = do_layer_norm
        self.keep_sentence_boundaries = keep_sentence_boundaries
        self.scalar_mix_parameters = scalar_mix_parameters
        self.vocab_to_cache = vocab_to_cache
        self.initial_weights = initial_weights
        self.initial_gamma = float(initial_gamma)

    def build(self, inputs_shape):
        dim = 2 * self.backbone.projection_dim
        for mix in self.scalar_mixes:
            if not mix.built:  # ElmoEmbedder's model calls its mix alone
                mix.build([(None, None, dim)] * mix.num_layers)
        if self.vocab_to_cache is not None:
            table = self._token_table()
            self.cached_embeddings = self.add_weight(
                name="cached_embeddings", shape=table.shape, initializer="zeros",
                trainable=self.requires_grad)
            self.cached_embeddings.assign(table)
        self.built = True

    def _token_table(self):
        """``<S>``, ``</S>``, then each word of ``vocab_to_cache``: the biLM's
        token vectors as a numpy ``[len(vocab_to_cache) + 2, projection_dim]``."""
        words = [BOS_TOKEN, EOS_TOKEN] + self.vocab_to_cache
        characters = CharacterIds(max_word_length=self.backbone.max_word_length)
        rows = []
        for start in range(0, len(words), _CACHE_BATCH):
            ids = characters([[w] for w in words[start:start + _CACHE_BATCH]])
            ids = np.asarray(ops.convert_to_numpy(ids["character_ids"]))
            rows.append(ops.convert_to_numpy(self.backbone.token_embeddings(ids))[:, 0])
        return np.concatenate(rows, 0)

    def _bilm_layers(self, inputs):
        """The biLM's layers with the boundaries: ``(layers, padding_mask,
        token_mask)``; ``layers`` are ``num_layers + 1`` float ``[batch,
        tokens + 2, 2 * projection_dim]`` (zero on padding)."""
        if self.vocab_to_cache is None:
            return self._character_layers(inputs)
        word_ids = ops.cast(inputs, "int32")
        token_mask = ops.greater(word_ids, 0)
        table = ops.convert_to_tensor(self.cached_embeddings)
        tokens = ops.take(table, word_ids + 2, axis=0)
        tokens, padding_mask = _add_boundaries(tokens, token_mask, table[0], table[1])
        outputs, _ = self.backbone.contextual_layers(
            ops.cast(tokens, self.compute_dtype), padding_mask, training=False)
        return self._layer_list(outputs), padding_mask, token_mask

    def _character_layers(self, character_ids):
        ids, padding_mask, token_mask = add_sentence_boundaries(character_ids)
        outputs = self.backbone(
            {"character_ids": ids, "padding_mask": ops.cast(padding_mask, "int32")},
            training=False,
        )
        return self._layer_list(outputs), padding_mask, token_mask

    def _layer_list(self, outputs):
        token = outputs["token_output"]
        return [ops.concatenate([token, token], axis=-1)] + [
            outputs[f"lstm_output_{i + 1}"] for i in range(self.backbone.num_layers)
        ]

    @staticmethod
    def _strip(x, token_mask):
        # AllenNLP's remove_sentence_boundaries: zeros past each row's end.
        return x[:, 1:-1] * ops.expand_dims(ops.cast(token_mask, x.dtype), -1)

    def layer_outputs(self, inputs):
        """The biLM's layers for the input's tokens, before mixing.

        Returns:
            ``(layers, token_mask)``: a list of ``num_layers + 1`` float
            tensors ``[batch, tokens, 2 * projection_dim]`` (the token layer
            duplicated, then each LSTM layer; zero on padding) and the bool
            ``[batch, tokens]`` mask.
        """
        layers, _, token_mask = self._bilm_layers(inputs)
        return [self._strip(layer, token_mask) for layer in layers], token_mask

    def _representations(self, layers, padding_mask, token_mask, keep_boundaries,
                         training=None):
        outputs = []
        for mix in self.scalar_mixes:
            x = mix(layers, mask=padding_mask)
            if not keep_boundaries:
                x = self._strip(x, token_mask)
            outputs.append(self.representation_dropout(x, training=training))
        return outputs

    def call(self, inputs, training=None):
        layers, padding_mask, token_mask = self._bilm_layers(inputs)
        outputs = self._representations(
            layers, padding_mask, token_mask, self.keep_sentence_boundaries, training)
        return outputs[0] if self.num_output_representations == 1 else outputs

    def compute_mask(self, inputs, mask=None):
        if self.vocab_to_cache is None:
            token_mask = ops.any(ops.greater(inputs, 0), axis=-1)
        else:
            token_mask = ops.greater(inputs, 0)
        if self.keep_sentence_boundaries:
            lengths = ops.sum(ops.cast(token_mask, "int32"), axis=1)
            ones = ops.pad(ops.ones_like(ops.cast(token_mask, "int32")), [[0, 0], [0, 2]],
                           constant_values=1)
            position = ops.cumsum(ops.convert_to_tensor(ones), axis=1) - 1
            token_mask = ops.less(position, lengths[:, None] + 2)
        if self.num_output_representations == 1:
            return token_mask
        return [token_mask] * self.num_output_representations

    def compute_output_shape(self, inputs_shape):
        tokens = inputs_shape[1]
        if self.keep_sentence_boundaries and tokens is not None:
            tokens += 2
        shape = (inputs_shape[0], tokens, 2 * self.backbone.projection_dim)
        if self.num_output_representations == 1:
            return shape
        return [shape] * self.num_output_representations

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
        layer's first scalar mix; with ``num_output_representations`` above
        1 the others as ``elmo_1``, ``elmo_2``, ...) and ``default``
        (``[batch, 2 * projection_dim]``, the mean of ``elmo`` over the
        real tokens; zeros for an empty sentence). ``max_len`` is the
        longest sentence (``default``) or the width of ``tokens``. Padding
        positions are zeros; ``<S>`` and ``</S>`` are added and dropped
        inside (whatever ``keep_sentence_boundaries`` says: TF-Hub's
        outputs are per token). No dropout. With ``vocab_to_cache`` the
        strings go through the character path (the same vectors, and words
        outside the cached list work).
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

    #: the free axis of ``onnx_inputs()`` besides the batch: the tokens
    onnx_sequence_axis = 1

    def onnx_inputs(self):
        """The ONNX graph's input (``kzoo.export.onnx``): ``character_ids``,
        ``[batch, tokens, max_word_length]`` as ``CharacterIds()`` gives them
        (no sentence boundaries; all-zero rows are padding)."""
        width = self.backbone.max_word_length
        if not self.built:  # the variables must exist before tracing
            self.build((None, None, width))
        return {"character_ids": keras.Input((None, width), dtype="int32",
                                             name="character_ids")}

    def onnx_call(self, inputs):
        """The ONNX graph: ``character_ids`` → the outputs of TF-Hub ELMo's
        signatures (``word_emb``, ``lstm_outputs1`` ..., ``elmo``,
        ``default``; see ``serving_endpoints``) for at least one token."""
        return self._hub_layers(inputs["character_ids"])

    def _hub_outputs(self, character_ids):
        """TF-Hub ELMo's outputs for character ids (see ``serving_endpoints``)."""
        # Strings are served through the character path, also with a cached
        # vocabulary (the same vectors, for any word).
        # A batch of empty sentences has no token at all and an LSTM cannot
        # run over no step: it runs over one padding token, cut off after.
        num_tokens = ops.shape(character_ids)[1]
        character_ids = ops.pad(
            character_ids, [[0, 0], [0, ops.maximum(1 - num_tokens, 0)], [0, 0]])
        outputs = self._hub_layers(character_ids)
        return {name: value if name == "default" else value[:, :num_tokens]
                for name, value in outputs.items()}

    def _hub_layers(self, character_ids):
        layers, padding_mask, token_mask = self._character_layers(character_ids)
        mixes = self._representations(layers, padding_mask, token_mask, False, False)
        outputs = {"word_emb": self._strip(layers[0], token_mask)[
            ..., :self.backbone.projection_dim]}
        for i, layer in enumerate(layers[1:]):
            outputs[f"lstm_outputs{i + 1}"] = self._strip(layer, token_mask)
        elmo = mixes[0]
        outputs["elmo"] = elmo
        for k, mix in enumerate(mixes[1:]):
            outputs[f"elmo_{k + 1}"] = mix
        weight = ops.expand_dims(ops.cast(token_mask, elmo.dtype), -1)
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
        config.update({
            "backbone": keras.layers.serialize(self.backbone),
            "num_output_representations": self.num_output_representations,
            "dropout": self.dropout,
            "requires_grad": self.requires_grad,
            "do_layer_norm": self.do_layer_norm,
            "keep_sentence_boundaries": self.keep_sentence_boundaries,
            "scalar_mix_parameters": self.scalar_mix_parameters,
            "vocab_to_cache": self.vocab_to_cache,
            "initial_weights": self.initial_weights,
            "initial_gamma": self.initial_gamma,
        })
        return config
