"""A SavedModel with the signatures of TF-Hub's ELMo module.

``elmo_hub_module(model, path)`` writes a SavedModel with exactly two
signatures, those of https://tfhub.dev/google/elmo/3:

* ``default``: one input, ``default`` (``tf.string [batch]``, sentences split
  on whitespace inside the graph; ``hub.Module`` named a signature's single
  input ``default``);
* ``tokens``: ``tokens`` (``tf.string [batch, max_len]``, padded with "") and
  ``sequence_len`` (``tf.int32 [batch]``; a length larger than ``max_len``
  is an error).

Both return ``word_emb`` (``[batch, max_len, projection_dim]``, the token
layer), ``lstm_outputs1``, ``lstm_outputs2`` (``[batch, max_len,
2 * projection_dim]``), ``elmo`` (their scalar mix, TF-Hub's learned weighted
sum) and ``default`` (``[batch, 2 * projection_dim]``, the mean of ``elmo``
over the real tokens; zeros for an empty sentence). ``max_len`` is the
longest sentence (``default``) or the width of ``tokens``. Padding positions
are zeros. No ``<S>``/``</S>`` positions: they are added and dropped inside.

Any backend: on TensorFlow the model is exported in-process; from JAX or
torch it is saved as a ``.keras`` file and a TensorFlow-backed copy is
exported in a subprocess (the same numbers). Load it with
``tf.saved_model.load(path).signatures["default"](default=...)``.
"""

import os
import subprocess
import sys
import tempfile

import keras

from kzoo.export.saved_model import versioned_path, write_saved_model
from kzoo.preprocessing.engine import require_tensorflow


def elmo_hub_module(model, path, version=None):
    """Writes ``model`` as a TF-Hub-ELMo-compatible SavedModel at ``path``.

    Args:
        model: an ``ElmoEmbedding`` (its ``ScalarMix`` gives ``elmo``) or an
            ``ElmoBackbone`` (then ``elmo`` is an equal mix, ``gamma`` 1).
        path: the SavedModel folder (replaced atomically).
        version: int or None. Writes TF Serving's ``<path>/<version>/``.

    Returns:
        The folder written.
    """
    require_tensorflow("Exporting a SavedModel")
    from kzoo.models.elmo.elmo_backbone import ElmoBackbone
    from kzoo.models.elmo.elmo_embedding import ElmoEmbedding

    if isinstance(model, ElmoBackbone):
        model = ElmoEmbedding(model)
    if not isinstance(model, ElmoEmbedding):
        raise TypeError(
            f"`model` must be an ElmoEmbedding or ElmoBackbone, got {type(model).__name__}."
        )
    return write_saved_model(
        versioned_path(path, version),
        lambda tmp: _export_in_process(model, tmp),
        lambda tmp: _export_through_tensorflow(model, tmp),
    )


def _outputs(embedding, character_ids):
    import tensorflow as tf

    layers, mask = embedding.layer_outputs(character_ids)
    elmo = embedding.scalar_mix(layers, mask=mask)
    projection_dim = embedding.backbone.projection_dim
    outputs = {"word_emb": layers[0][..., :projection_dim]}
    for i, layer in enumerate(layers[1:]):
        outputs[f"lstm_outputs{i + 1}"] = layer
    outputs["elmo"] = elmo
    weight = tf.cast(mask, elmo.dtype)[..., None]
    outputs["default"] = tf.math.divide_no_nan(
        tf.reduce_sum(elmo * weight, axis=1), tf.reduce_sum(weight, axis=1)
    )
    return {k: tf.convert_to_tensor(v) for k, v in outputs.items()}


def _export_in_process(embedding, path):
    import tensorflow as tf

    from kzoo.preprocessing.character_ids import CharacterIds

    width = embedding.backbone.max_word_length
    if not embedding.built:  # variables must exist before tracing
        embedding.build((None, None, width))
    characters = CharacterIds(max_word_length=width)

    def from_tokens(tokens):  # ragged [batch, None] strings
        return characters(tokens)["character_ids"]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="default")])
    def default(sentences):
        return _outputs(embedding, from_tokens(tf.strings.split(sentences)))

    @tf.function(input_signature=[
        tf.TensorSpec([None, None], tf.string, name="tokens"),
        tf.TensorSpec([None], tf.int32, name="sequence_len"),
    ])
    def tokens(tokens, sequence_len):
        width = tf.shape(tokens)[1]
        checks = [
            tf.debugging.assert_less_equal(
                sequence_len, width,
                message="sequence_len is larger than the width of the tokens matrix"),
            tf.debugging.assert_non_negative(
                sequence_len, message="sequence_len must be >= 0"),
        ]
        with tf.control_dependencies(checks):
            ragged = tf.RaggedTensor.from_tensor(tokens, lengths=sequence_len)
        ids = from_tokens(ragged)
        ids = tf.pad(ids, [[0, 0], [0, width - tf.shape(ids)[1]], [0, 0]])
        return _outputs(embedding, ids)

    module = tf.Module()
    # The Keras variables' TF variables, so that the SavedModel holds them.
    module.elmo_variables = [v.value for v in embedding.variables]
    module.default = default
    module.tokens = tokens
    tf.saved_model.save(
        module, path,
        signatures={"default": default.get_concrete_function(),
                    "tokens": tokens.get_concrete_function()},
    )


def _export_through_tensorflow(embedding, path):
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.path.join(tmp, "elmo_embedding.keras")
        inputs = keras.Input((None, embedding.backbone.max_word_length), dtype="int32")
        keras.Model(inputs, embedding(inputs)).save(saved)
        env = dict(os.environ, KERAS_BACKEND="tensorflow")
        result = subprocess.run(
            [sys.executable, "-m", "kzoo.export.elmo_hub", saved, path],
            env=env, capture_output=True, text=True,
        )
        if result.returncode != 0:
            raise RuntimeError(
                "Exporting through a TensorFlow-backed copy failed:\n"
                + result.stderr[-3000:]
            )


def main(argv):
    """``python -m kzoo.export.elmo_hub MODEL.keras PATH`` (TF backend)."""
    import kzoo.models  # noqa: F401  (registers the classes)
    from kzoo.models.elmo.elmo_embedding import ElmoEmbedding

    model = keras.models.load_model(argv[0])
    embedding = [layer for layer in model.layers if isinstance(layer, ElmoEmbedding)][0]
    _export_in_process(embedding, argv[1])


if __name__ == "__main__":
    main(sys.argv[1:])
