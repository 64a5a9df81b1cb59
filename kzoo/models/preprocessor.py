"""Base class of every kzoo task preprocessor."""

import keras

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.multi_segment_packer import MultiSegmentPacker
from kzoo.preprocessing.preprocessing_layer import (
    PreprocessingLayer,
    to_tf,
    use_python,
)
from kzoo.presets import preset_loader, preset_saver


@kzoo_export("kzoo.models.Preprocessor")
class Preprocessor(PreprocessingLayer):
    """Raw text (plus ``y``, ``sample_weight``) → exactly what a task takes.

    A preprocessor holds a tokenizer and the shared packing / masking layers
    and has no weights. It runs inside ``tf.data`` for every backend (``Task``
    maps it over the data given to ``fit``/``evaluate``/``predict``) and
    eagerly on Python lists.

    Subclasses set ``backbone_cls`` and ``tokenizer_cls`` and implement
    ``call(x, y=None, sample_weight=None)``, returning
    ``keras.utils.pack_x_y_sample_weight(x, y, sample_weight)``.
    """

    backbone_cls = None
    tokenizer_cls = None
    input_dtype = "string"
    # Special tokens the packer writes (BERT: [CLS] a [SEP] b [SEP]); None
    # leaves the place out. Family subclasses set them.
    start_token = None
    sep_token = None
    end_token = None

    def __init__(self, tokenizer=None, **kwargs):
        super().__init__(**kwargs)
        self.tokenizer = tokenizer

    def __call__(self, x, y=None, sample_weight=None, **kwargs):
        if not (use_python((x, y, sample_weight)) and hasattr(self, "python_call")):
            # y and sample_weight are numbers: convert them apart from the text.
            y = tf.nest.map_structure(to_tf, y) if y is not None else None
            if sample_weight is not None:
                sample_weight = tf.nest.map_structure(to_tf, sample_weight)
        return super().__call__(x, y, sample_weight, **kwargs)

    def special_token_id(self, token):
        """The id of a special token (None stays None), or a clear error."""
        if token is None:
            return None
        try:
            token_id = self.tokenizer.token_to_id(token)
        except KeyError:
            token_id = None
        if token_id is None:
            raise ValueError(
                f"The tokenizer's vocabulary has no {token!r}, which "
                f"{type(self).__name__} needs: add it to the vocabulary."
            )
        return token_id

    def build_packer(self, sequence_length, truncate="round_robin"):
        """A ``MultiSegmentPacker`` with this preprocessor's special tokens.

        Called once the tokenizer's vocabulary is known (on first use).
        """
        return MultiSegmentPacker(
            sequence_length=sequence_length,
            start_value=self.special_token_id(self.start_token),
            sep_value=self.special_token_id(self.sep_token),
            end_value=self.special_token_id(self.end_token),
            pad_value=self.tokenizer.pad_token_id or 0,
            truncate=truncate,
        )

    def get_config(self):
        config = super().get_config()
        config["tokenizer"] = keras.layers.serialize(self.tokenizer)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("tokenizer"), dict):
            config["tokenizer"] = keras.layers.deserialize(config["tokenizer"])
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """Builds the preprocessor (and its tokenizer) stored in a preset.

        Args:
            preset: a preset name, folder or converter-readable checkpoint.
            **kwargs: constructor arguments to override (``sequence_length``).
        """
        return preset_loader.load_preprocessor(preset, cls=cls, **kwargs)

    def save_to_preset(self, preset_dir):
        """Writes ``tokenizer.json`` (+ assets) and ``preprocessor.json``."""
        preset_saver.save_preset(preset_dir, preprocessor=self)
