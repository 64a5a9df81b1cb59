"""Frozen BERT features (the paper's feature-based approach, section 5.3)."""

import keras
import numpy as np
from keras import ops

from kzoo.api_export import kzoo_export

COMBINATIONS = ("embeddings", "second_to_last", "last_hidden", "sum_last_four",
                "concat_last_four", "sum_all")
POOLINGS = ("first", "mean")


def split_into_words(text):
    """BERT's word split of one raw string (its basic tokenizer's: on
    whitespace, and each punctuation character a word of its own), case
    kept: ``"EU rejects it."`` → ``["EU", "rejects", "it", "."]``."""
    from tokenizers import pre_tokenizers

    return [word for word, _ in
            pre_tokenizers.BertPreTokenizer().pre_tokenize_str(text)]


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

    On raw text: ``BertFeatures.from_preset(preset)`` adds a
    ``BertTokenClassifierPreprocessor``, and ``word_features(texts)`` gives
    one vector per word, as the paper feeds its NER BiLSTM: each word is
    tokenized on its own, and its vector is the combination at its first
    piece (``pooling="first"``, the paper's choice) or the mean over its
    pieces (``pooling="mean"``).

    Args:
        backbone: a ``BertBackbone``; frozen by this layer.
        combination: str. One of the combinations above. Defaults to
            ``"concat_last_four"``, the paper's best feature-based choice.
        preprocessor: a ``BertTokenClassifierPreprocessor`` (words → packed
            pieces), needed by ``word_features``; or None.
        pooling: ``"first"`` (the default) or ``"mean"``: how
            ``word_features`` makes a word's vector from its pieces'.
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

    def __init__(self, backbone, combination="concat_last_four", preprocessor=None,
                 pooling="first", **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"`pooling` must be one of {POOLINGS}, got {pooling!r}.")
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
        self.preprocessor = preprocessor
        self.pooling = pooling
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

    @classmethod
    def from_preset(cls, preset, combination="concat_last_four", pooling="first",
                    sequence_length=128, load_weights=True, **kwargs):
        """Features of a pretrained BERT, with a preprocessor for raw text.

        Args:
            preset: a registered name (``"minilm_l6_en_uncased"``), a kzoo
                preset folder, or a Hugging Face BERT folder.
            combination, pooling: as in the constructor.
            sequence_length: int. Length of the packed pieces of a sentence
                (``[CLS]`` and ``[SEP]`` included).
            load_weights: bool. Load the pretrained weights.
            **kwargs: layer arguments (``name``).

        Example:
        >>> features = kzoo.models.BertFeatures.from_preset(  # doctest: +SKIP
        ...     "minilm_l6_en_uncased", "sum_last_four")
        >>> [v.shape for v in features.word_features(["EU rejects it."])]  # doctest: +SKIP
        [(4, 384)]
        """
        from kzoo.models.bert.bert_backbone import BertBackbone
        from kzoo.models.bert.bert_token_classifier_preprocessor import (
            BertTokenClassifierPreprocessor,
        )

        backbone = BertBackbone.from_preset(preset, load_weights=load_weights)
        preprocessor = BertTokenClassifierPreprocessor.from_preset(
            preset, sequence_length=sequence_length)
        return cls(backbone, combination, preprocessor=preprocessor,
                   pooling=pooling, **kwargs)

    def word_features(self, texts, batch_size=32):
        """One feature vector per word, for raw strings or pre-split words.

        Args:
            texts: a list of raw strings (split into words as BERT's basic
                tokenizer splits them: ``split_into_words``), or a list of
                lists of words (a CoNLL sentence, kept as given).
            batch_size: int. Sentences per backbone call.

        Returns:
            A list with one float32 array ``[num_words, width]`` per text
            (``width`` the combination's). A word that yields no piece (only
            characters the tokenizer deletes) gets zeros.
        """
        if self.preprocessor is None:
            raise ValueError(
                "`word_features` needs a preprocessor: build the layer with "
                "`BertFeatures.from_preset(...)` or pass `preprocessor=` (a "
                "`BertTokenClassifierPreprocessor`).")
        if isinstance(texts, str):
            raise ValueError("`texts` must be a list of strings or of word lists, "
                             "got one string: wrap it in a list.")
        sentences = [split_into_words(t) if isinstance(t, str) else list(t)
                     for t in texts]
        results = []
        for start in range(0, len(sentences), batch_size):
            batch = sentences[start:start + batch_size]
            if not any(batch):  # no word at all: nothing to run
                results += [np.zeros((0, self._width()), "float32")] * len(batch)
                continue
            x = {key: np.asarray(value)
                 for key, value in self.preprocessor(batch).items()}
            word_ids = np.asarray(self.preprocessor.word_ids(batch))
            states = ops.convert_to_numpy(self(x)).astype("float32")
            for offset, (words, ids, state) in enumerate(zip(batch, word_ids,
                                                              states)):
                results.append(self._pool(words, ids, state, start + offset))
        return results

    def _width(self):
        return self.backbone.hidden_dim * (
            4 if self.combination == "concat_last_four" else 1)

    def _any_piece(self, words):
        """Whether any of the words yields a word piece."""
        from kzoo.preprocessing.engine import engine_scope
        from kzoo.preprocessing.preprocessing_layer import numpy_outputs

        with engine_scope("python"), numpy_outputs():
            pieces = self.preprocessor.tokenizer(list(words))
        return any(len(p) for p in pieces)

    def _pool(self, words, word_ids, states, index):
        """``[num_words, width]`` from one sentence's piece states."""
        out = np.zeros((len(words), states.shape[-1]), "float32")
        present = np.unique(word_ids[word_ids >= 0])
        last = present[-1] if len(present) else -1
        if last < len(words) - 1 and self._any_piece(words[last + 1:]):
            raise ValueError(
                f"Sentence {index} has {len(words)} words, but only the first "
                f"{last + 1} fit in sequence_length="
                f"{self.preprocessor.sequence_length}: pass a larger "
                "`sequence_length` to `from_preset`, or split the sentence.")
        for word in present:
            positions = np.flatnonzero(word_ids == word)
            out[word] = (states[positions[0]] if self.pooling == "first"
                         else states[positions].mean(axis=0))
        return out

    def get_config(self):
        config = super().get_config()
        config.update(backbone=keras.layers.serialize(self.backbone),
                      combination=self.combination,
                      preprocessor=(None if self.preprocessor is None
                                    else keras.layers.serialize(self.preprocessor)),
                      pooling=self.pooling)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("backbone", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = keras.layers.deserialize(config[key])
        return cls(**config)
