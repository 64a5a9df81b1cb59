"""Frozen BERT features (the paper's feature-based approach, section 5.3)."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export

COMBINATIONS = ("embeddings", "second_to_last", "last_hidden", "sum_last_four",
                "concat_last_four", "sum_all")


@kzoo_export("kzoo.models.BertFeatures")
class BertFeatures(keras.layers.Layer):
    """Contextual token features from a frozen BERT, for a separate model.

    The BERT paper (section 5.3, table 7) compares fine-tuning with feeding
    fixed BERT activations to a task model (a BiLSTM for CoNLL NER). This
    layer gives those activations: it freezes ``backbone``
    (``trainable=False``), runs it in inference mode (no dropout, whatever
    the surrounding model's ``training`` flag), and combines its hidden
    states, ``h_0`` the embedding output and ``h_1 ... h_L`` the ``L``
    encoder blocks' outputs (``backbone.hidden_states_model()``):

    * ``"embeddings"``: ``h_0``, ``[batch, length, hidden_dim]``;
    * ``"second_to_last"``: ``h_{L-1}``;
    * ``"last_hidden"``: ``h_L``;
    * ``"sum_last_four"``: ``h_{L-3} + h_{L-2} + h_{L-1} + h_L``;
    * ``"concat_last_four"``: ``[h_{L-3}, h_{L-2}, h_{L-1}, h_L]``
      concatenated on the last axis, in layer order:
      ``[batch, length, 4 * hidden_dim]``;
    * ``"sum_all"``: ``h_1 + ... + h_L``, every encoder block (the paper's
      "sum all 12 layers"; the embeddings are not included).

    The ``*_last_four`` combinations need ``num_layers >= 4``, and
    ``"second_to_last"`` ``num_layers >= 2``. Only the layers after the
    features train; the backbone's weights never change.

    Args:
        backbone: a ``BertBackbone``; frozen by this layer.
        combination: str. One of the combinations above. Defaults to
            ``"concat_last_four"``, the paper's best feature-based choice.
        **kwargs: layer arguments (``name``).

    Call arguments:
        inputs: the backbone's input dict (``token_ids``, ``segment_ids``,
            ``padding_mask``).

    Returns:
        float ``[batch, length, hidden_dim]``, or ``[batch, length,
        4 * hidden_dim]`` for ``"concat_last_four"``.

    Example:
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=10, num_layers=4, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> features = kzoo.models.BertFeatures(backbone, "concat_last_four")
    >>> out = features({"token_ids": np.array([[2, 5, 3]]),
    ...                 "segment_ids": np.array([[0, 0, 0]]),
    ...                 "padding_mask": np.array([[1, 1, 1]])})
    >>> tuple(out.shape), backbone.trainable
    ((1, 3, 16), False)

    Reference:
        Devlin et al., 2019, "BERT: Pre-training of Deep Bidirectional
        Transformers for Language Understanding", section 5.3.
    """

    def __init__(self, backbone, combination="concat_last_four", **kwargs):
        super().__init__(**kwargs)
        if combination not in COMBINATIONS:
            raise ValueError(
                f"`combination` must be one of {COMBINATIONS}, got {combination!r}."
            )
        num_layers = getattr(backbone, "num_layers", None)
        needed = {"second_to_last": 2, "sum_last_four": 4,
                  "concat_last_four": 4}.get(combination, 1)
        if not isinstance(num_layers, int) or num_layers < needed:
            raise ValueError(
                f'`combination="{combination}"` needs a backbone with at least '
                f"{needed} layers, got num_layers={num_layers!r}: pick "
                '"last_hidden" or "sum_all" for a shallower backbone.'
            )
        backbone.trainable = False
        self.backbone = backbone
        self.combination = combination
        # A second view of the same weights: kept out of Keras' tracking, so
        # that they are saved once (under `backbone`).
        object.__setattr__(self, "_hidden_states", backbone.hidden_states_model())

    def call(self, inputs):
        states = self._hidden_states(inputs, training=False)["hidden_states"]
        if self.combination == "embeddings":
            return states[0]
        if self.combination == "last_hidden":
            return states[-1]
        if self.combination == "second_to_last":
            return states[-2]
        if self.combination == "concat_last_four":
            return ops.concatenate(states[-4:], axis=-1)
        total = states[-4] if self.combination == "sum_last_four" else states[1]
        for state in states[-3:] if self.combination == "sum_last_four" else states[2:]:
            total = total + state
        return total

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape["token_ids"])
        width = self.backbone.hidden_dim
        if self.combination == "concat_last_four":
            width *= 4
        return shape + (width,)

    def get_config(self):
        config = super().get_config()
        config.update(backbone=keras.layers.serialize(self.backbone),
                      combination=self.combination)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("backbone"), dict):
            config["backbone"] = keras.layers.deserialize(config["backbone"])
        return cls(**config)
