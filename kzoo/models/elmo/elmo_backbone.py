"""ELMo's bidirectional language model network (without the softmax)."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.layers.character_cnn import CharacterCNN
from kzoo.layers.highway import Highway
from kzoo.layers.projected_lstm import ProjectedLSTM
from kzoo.models.backbone import Backbone, check_positive_ints
from kzoo.layers.dropout import Dropout

# Registers the reader of AllenNLP ELMo folders (options.json + weights
# hdf5), so that ElmoBackbone.from_preset(<such a folder>) works.

ELMO_FILTERS = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))


@kzoo_export("kzoo.models.ElmoBackbone")
class ElmoBackbone(Backbone):
    """ELMo: a character CNN token layer and a bidirectional LSTMP stack.

    The network of bilm-tf and AllenNLP's ``_ElmoBiLm``, numerically: each
    token's character ids go through a ``CharacterCNN`` (max over positions,
    ``activation``), ``num_highway_layers`` ``Highway`` layers and a linear
    projection to ``projection_dim`` (the token layer, context-free). Then
    ``num_layers`` forward and ``num_layers`` backward ``ProjectedLSTM``
    layers (``hidden_dim`` cells, ``projection_dim`` outputs, clipping) read
    the sentence left to right and right to left, the backward ones each
    sentence reversed within its own length. From the second layer on each
    LSTM layer's input is added to its output (``use_skip_connections``).

    The inputs are what ``kzoo.preprocessing.CharacterIds`` gives with
    ``add_sentence_boundaries=True``: the ELMo models were trained with
    ``<S>`` and ``</S>`` around every sentence, and the outputs keep those
    two positions (``ElmoEmbedder`` and ``ElmoEmbedding`` drop them).

    Deterministic: every call starts the LSTMs from zero states, so a
    sentence gets the same vectors whatever else is in the batch or ran
    before. AllenNLP's ``Elmo``/``_ElmoBiLm`` and bilm-tf do not: their
    LSTMs are stateful and row ``k`` of a batch starts from the state in
    which row ``k`` of the previous batch ended, so their vectors drift with
    the order of the data. ``call_with_states`` reproduces that behaviour
    (AllenNLP's reference activations were made that way).

    Args:
        num_layers: int. LSTM layers per direction. Defaults to 2.
        hidden_dim: int. LSTM memory cells. Defaults to 4096.
        projection_dim: int. Width of the token layer and of each
            direction's LSTM outputs. Defaults to 512.
        filters: the character CNN's ``[width, number]`` pairs. Defaults to
            the released ELMo's (2048 features).
        num_highway_layers: int. Defaults to 2.
        character_dim: int. Character embedding width. Defaults to 16.
        num_characters: int. Character ids (262 for ``CharacterIds``).
        max_word_length: int. Character ids per token. Defaults to 50.
        activation: the character CNN's activation. Defaults to ``"relu"``.
        cell_clip: float or None. Defaults to 3.0.
        projection_clip: float or None. Defaults to 3.0.
        use_skip_connections: bool. Defaults to True.
        dropout: float. Dropout on each LSTM layer's inputs during training
            (bilm-tf trained with 0.1). Defaults to 0.1.
        dtype: dtype policy of the layers.
        **kwargs: ``keras.Model`` arguments (``name``, ``trainable``).

    Call arguments:
        inputs: a dict with ``character_ids`` (int ``[batch, tokens,
            max_word_length]``) and ``padding_mask`` (bool or int ``[batch,
            tokens]``, true on real tokens, a prefix of each row).

    Returns:
        A dict with ``token_output`` (``[batch, tokens, projection_dim]``)
        and ``lstm_output_1`` ... ``lstm_output_{num_layers}`` (``[batch,
        tokens, 2 * projection_dim]``, forward then backward), all zero on
        padding.

    Example:
    >>> backbone = kzoo.models.ElmoBackbone(
    ...     num_layers=2, hidden_dim=8, projection_dim=4,
    ...     filters=((1, 4), (2, 4)), character_dim=4)
    >>> ids = kzoo.preprocessing.CharacterIds(add_sentence_boundaries=True)(
    ...     ["the river bank", "a bank"])
    >>> outputs = backbone(ids)
    >>> sorted((k, tuple(v.shape)) for k, v in outputs.items())
    [('lstm_output_1', (2, 5, 8)), ('lstm_output_2', (2, 5, 8)), ('token_output', (2, 5, 4))]

    Reference:
        - [Peters et al., 2018](https://arxiv.org/abs/1802.05365).
        - [bilm-tf](https://github.com/allenai/bilm-tf).
    """

    def __init__(
        self,
        num_layers=2,
        hidden_dim=4096,
        projection_dim=512,
        filters=ELMO_FILTERS,
        num_highway_layers=2,
        character_dim=16,
        num_characters=262,
        max_word_length=50,
        activation="relu",
        cell_clip=3.0,
        projection_clip=3.0,
        use_skip_connections=True,
        dropout=0.1,
        dtype=None,
        **kwargs,
    ):
        for name, value in (("num_layers", num_layers), ("hidden_dim", hidden_dim),
                            ("projection_dim", projection_dim),
                            ("max_word_length", max_word_length)):
            check_positive_ints("ElmoBackbone", **{name: value})
        if not isinstance(num_highway_layers, int) or num_highway_layers < 0:
            raise ValueError(
                "ElmoBackbone: `num_highway_layers` must be an int >= 0, got "
                f"{num_highway_layers!r}."
            )

        # === Layers ===
        self.character_cnn = CharacterCNN(
            filters=filters, num_characters=num_characters,
            character_dim=character_dim, activation=activation,
            embeddings_initializer=keras.initializers.RandomUniform(-1.0, 1.0),
            dtype=dtype, name="character_cnn",
        )
        self.highway_layers = [
            Highway(activation="relu", dtype=dtype, name=f"highway_{i}")
            for i in range(num_highway_layers)
        ]
        self.token_projection = keras.layers.Dense(
            projection_dim, dtype=dtype, name="token_projection"
        )
        self.lstm_dropout = Dropout(
            dropout, dtype=dtype, name="lstm_dropout"
        )

        def lstm(i, backward):
            return ProjectedLSTM(
                hidden_dim, projection_dim, cell_clip=cell_clip,
                projection_clip=projection_clip, backward=backward,
                return_state=True, dtype=dtype,
                name=f"{'backward' if backward else 'forward'}_lstm_{i}",
            )

        self.forward_lstm_layers = [lstm(i, False) for i in range(num_layers)]
        self.backward_lstm_layers = [lstm(i, True) for i in range(num_layers)]

        # === Config (read by _compute while building the graph) ===
        self.num_layers = num_layers
        self.use_skip_connections = use_skip_connections

        # === Functional Model ===
        character_ids = keras.Input(
            shape=(None, max_word_length), dtype="int32", name="character_ids"
        )
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
        outputs, _ = self._compute(character_ids, padding_mask)
        super().__init__(
            inputs={"character_ids": character_ids, "padding_mask": padding_mask},
            outputs=outputs,
            dtype=dtype,
            **kwargs,
        )

        # === Config ===
        self.num_layers = num_layers
        self.hidden_dim = hidden_dim
        self.projection_dim = projection_dim
        self.filters = self.character_cnn.filters
        self.num_highway_layers = num_highway_layers
        self.character_dim = character_dim
        self.num_characters = num_characters
        self.max_word_length = max_word_length
        self.activation = activation
        self.cell_clip = cell_clip
        self.projection_clip = projection_clip
        self.use_skip_connections = use_skip_connections
        self.dropout = dropout

    @classmethod
    def layout_rules(cls):
        """Splits of the biLM (see ``get_layout_map``).

        The character CNN by filters, the highway layers by columns, the
        token projection by rows; each LSTMP layer's input and recurrent
        kernels by their gate columns and its projection by rows; the
        language model's softmax (``ElmoLanguageModel``) along its input
        width (vocabularies such as 793471 divide by almost nothing). The
        262-row character table, biases and the scalar mix are replicated.
        """
        return {
            r"character_cnn/character_embedding/embeddings": (None, None),
            r"character_cnn/convolution_\d+/kernel": (None, None, "model"),
            r"highway_\d+/(transform|gate)_dense/kernel": (None, "model"),
            r"token_projection/kernel": ("model", None),
            r"(forward|backward)_lstm_\d+/cell/(kernel|recurrent_kernel)": (None, "model"),
            r"(forward|backward)_lstm_\d+/cell/projection_kernel": ("model", None),
            r"softmax_dense/kernel": ("model", None),
        }

    def _compute(self, character_ids, padding_mask, states=None, training=None):
        """The forward pass, from optional initial states; see call_with_states."""
        tokens = self.token_embeddings(character_ids)
        return self.contextual_layers(tokens, padding_mask, states=states, training=training)

    def token_embeddings(self, character_ids):
        """The context-free token layer: character CNN, highway layers and
        projection, for every position (padding positions included).

        Args:
            character_ids: int ``[..., max_word_length]``.

        Returns:
            float ``[..., projection_dim]``.
        """
        x = self.character_cnn(character_ids)
        for layer in self.highway_layers:
            x = layer(x)
        return self.token_projection(x)

    def contextual_layers(self, tokens, padding_mask, states=None, training=None):
        """The LSTM stack on given token vectors (``token_embeddings``'
        output, or vectors cached from it).

        Args:
            tokens: float ``[batch, tokens, projection_dim]``.
            padding_mask: bool or int ``[batch, tokens]``.
            states: optional initial states (see ``call_with_states``).
            training: applies ``dropout`` to the LSTM inputs when True.

        Returns:
            ``(outputs, final_states)``: the backbone's output dict and the
            LSTMs' final states.
        """
        mask = ops.cast(padding_mask, "bool")
        tokens = tokens * ops.expand_dims(ops.cast(mask, tokens.dtype), -1)
        outputs = {"token_output": tokens}
        final_states = []
        forward, backward = tokens, tokens
        for i in range(self.num_layers):
            layers = (self.forward_lstm_layers[i], self.backward_lstm_layers[i])
            results = []
            for j, (layer, inputs) in enumerate(zip(layers, (forward, backward))):
                state = None if states is None else states[2 * i + j]
                out, final = layer(self.lstm_dropout(inputs, training=training),
                                   mask=mask, initial_state=state)
                if i > 0 and self.use_skip_connections:
                    out = out + inputs
                results.append(out)
                final_states.append(final)
            forward, backward = results
            outputs[f"lstm_output_{i + 1}"] = ops.concatenate([forward, backward], -1)
        return outputs, final_states

    def call_with_states(self, inputs, states=None):
        """Runs the network from given LSTM states; returns the final states.

        This is how AllenNLP's and bilm-tf's stateful ELMo ran: pass the
        states this method returned for the previous batch to continue
        each row where the same row of that batch ended (rows without tokens
        keep their state). ``backbone(inputs)`` equals this with zero
        states.

        Args:
            inputs: the backbone's input dict.
            states: None (zeros) or the list returned by a previous call:
                ``[h, c]`` pairs for layer 1 forward, layer 1 backward,
                layer 2 forward, ...

        Returns:
            ``(outputs, states)``: the backbone's output dict and the final
            states, in the same format.
        """
        expected = 2 * self.num_layers
        if states is not None and len(states) != expected:
            raise ValueError(
                f"`states` must hold {expected} [h, c] pairs (forward and "
                f"backward for each of {self.num_layers} layers), got {len(states)}."
            )
        return self._compute(
            ops.convert_to_tensor(inputs["character_ids"], "int32"),
            ops.convert_to_tensor(inputs["padding_mask"]),
            states=states, training=False,
        )

    def serving_model(self):
        """What ``kzoo.export.saved_model`` writes for this backbone: an
        ``ElmoEmbedding`` on it with an equal mix (``gamma`` 1), which
        serves TF-Hub ELMo's signatures."""
        from kzoo.models.elmo.elmo_embedding import ElmoEmbedding

        trainable = self.trainable
        embedding = ElmoEmbedding(self)
        self.trainable = trainable  # the embedding froze it; serving does not train
        return embedding

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_layers": self.num_layers,
            "hidden_dim": self.hidden_dim,
            "projection_dim": self.projection_dim,
            "filters": [list(f) for f in self.filters],
            "num_highway_layers": self.num_highway_layers,
            "character_dim": self.character_dim,
            "num_characters": self.num_characters,
            "max_word_length": self.max_word_length,
            "activation": self.activation,
            "cell_clip": self.cell_clip,
            "projection_clip": self.projection_clip,
            "use_skip_connections": self.use_skip_connections,
            "dropout": self.dropout,
        })
        return config
