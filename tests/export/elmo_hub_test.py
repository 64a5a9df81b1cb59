"""TF-Hub ELMo signatures (``kzoo.export.saved_model`` of an ElmoEmbedding or
ElmoBackbone): exported on any backend, served from another process."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from kzoo.export import saved_model, saved_models
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_embedder import ElmoEmbedder
from kzoo.models.elmo.elmo_embedding import ElmoEmbedding
from kzoo.preprocessing import CharacterIds
from kzoo.testing import to_numpy

TINY = dict(num_layers=2, hidden_dim=8, projection_dim=4, filters=((1, 4), (2, 4)),
            character_dim=3, max_word_length=12, dropout=0.0)
SENTENCES = ["the river bank", "a bank loan was given", ""]
OUTPUTS = ["default", "elmo", "lstm_outputs1", "lstm_outputs2", "word_emb"]

SERVE = r"""
import json, sys
import tensorflow as tf
loaded = tf.saved_model.load(sys.argv[1])
out = {"signatures": sorted(loaded.signatures)}
default = loaded.signatures["default"]
tokens = loaded.signatures["tokens"]
out["default_inputs"] = sorted(default.structured_input_signature[1])
out["tokens_inputs"] = sorted(tokens.structured_input_signature[1])
out["default"] = {k: v.numpy().tolist() for k, v in
                  default(default=tf.constant(json.loads(sys.argv[2]))).items()}
empty = default(default=tf.constant(["", ""]))
out["all_empty"] = {k: [list(v.shape), float(abs(v.numpy()).sum())] for k, v in empty.items()}
t = tf.constant([["a", "bank", "", ""], ["bank", "", "", ""]])
out["tokens"] = {k: v.numpy().tolist() for k, v in
                 tokens(tokens=t, sequence_len=tf.constant([2, 1])).items()}
try:
    tokens(tokens=t, sequence_len=tf.constant([5, 1]))
    out["too_long"] = "no error"
except tf.errors.InvalidArgumentError as exc:
    out["too_long"] = exc.message
print("JSON" + json.dumps(out))
"""


def serve(path, in_process):
    args = [path, json.dumps(SENTENCES)]
    if in_process:  # written by another process already (jax, torch)
        code = compile(SERVE, "serve", "exec")
        import contextlib
        import io
        buffer = io.StringIO()
        argv = sys.argv
        sys.argv = ["serve"] + args
        try:
            with contextlib.redirect_stdout(buffer):
                exec(code, {"__name__": "__main__"})
        finally:
            sys.argv = argv
        text = buffer.getvalue()
    else:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        result = subprocess.run([sys.executable, "-c", SERVE] + args, env=env,
                                capture_output=True, text=True, timeout=1800)
        assert result.returncode == 0, result.stderr[-2000:]
        text = result.stdout
    return json.loads(text.split("JSON", 1)[1])


def _mixed_embedding():
    backbone = ElmoBackbone(**TINY)
    return ElmoEmbedding(backbone, initial_weights=[0.3, -0.2, 0.5], initial_gamma=1.5)


def _cached_two_mix_embedding():
    backbone = ElmoBackbone(**TINY)
    vocabulary = ["@@PADDING@@", "the", "river", "bank", "a", "loan"]
    embedding = ElmoEmbedding(backbone, num_output_representations=2, dropout=0.5,
                              do_layer_norm=True, vocab_to_cache=vocabulary)
    embedding.build((None, None))
    embedding.scalar_mixes[1].scalar_weights.assign(np.array([1.0, -1.0, 0.0], "float32"))
    embedding.scalar_mixes[1].gamma.assign(2.0)
    return embedding


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``{name: (embedding, SavedModel path)}``: both embeddings exported in
    one ``saved_models`` call (one TensorFlow subprocess on JAX and torch)."""
    embeddings = {"mixed": _mixed_embedding(), "cached": _cached_two_mix_embedding(),
                  "embedder": ElmoEmbedder(ElmoBackbone(**TINY),
                                           mix_weights=[0.3, -0.2, 0.5], mix_gamma=1.5)}
    folder = tmp_path_factory.mktemp("elmo_hub")
    paths = saved_models({str(folder / name): e for name, e in embeddings.items()})
    return {name: (e, path) for (name, e), path in zip(embeddings.items(), paths)}


def test_signatures_and_values_match_the_keras_model(exported):
    embedding, path = exported["mixed"]
    backbone = embedding.backbone
    served = serve(path, in_process=keras.config.backend() != "tensorflow")
    assert served["signatures"] == ["default", "tokens"]
    assert served["default_inputs"] == ["default"]
    assert served["tokens_inputs"] == ["sequence_len", "tokens"]
    assert sorted(served["default"]) == sorted(served["tokens"]) == OUTPUTS

    embedder = ElmoEmbedder(backbone, mix_weights=[0.3, -0.2, 0.5], mix_gamma=1.5)
    out = {k: np.array(v) for k, v in served["default"].items()}
    assert out["elmo"].shape == (3, 5, 8) and out["word_emb"].shape == (3, 5, 4)
    for b, sentence in enumerate(SENTENCES):
        words = sentence.split()
        n = len(words)
        layers = embedder.embed_sentence(words)
        mixed = embedder.embed_sentence(words, mixed=True)
        np.testing.assert_allclose(out["word_emb"][b, :n], layers[0][:, :4], atol=1e-5)
        np.testing.assert_allclose(out["lstm_outputs1"][b, :n], layers[1], atol=1e-5)
        np.testing.assert_allclose(out["lstm_outputs2"][b, :n], layers[2], atol=1e-5)
        np.testing.assert_allclose(out["elmo"][b, :n], mixed, atol=1e-5)
        assert np.all(out["elmo"][b, n:] == 0)
        expected = mixed.mean(0) if n else np.zeros(8)
        np.testing.assert_allclose(out["default"][b], expected, atol=1e-5)

    # A batch of empty sentences: no token, the default vector zeros.
    assert served["all_empty"] == {
        "default": [[2, 8], 0.0], "elmo": [[2, 0, 8], 0.0], "word_emb": [[2, 0, 4], 0.0],
        "lstm_outputs1": [[2, 0, 8], 0.0], "lstm_outputs2": [[2, 0, 8], 0.0]}

    tokens = {k: np.array(v) for k, v in served["tokens"].items()}
    assert tokens["elmo"].shape == (2, 4, 8)  # the width of the tokens matrix
    np.testing.assert_allclose(tokens["elmo"][0, :2],
                               embedder.embed_sentence(["a", "bank"], mixed=True), atol=1e-5)
    np.testing.assert_allclose(tokens["lstm_outputs2"][1, :1],
                               embedder.embed_sentence(["bank"])[2], atol=1e-5)
    assert np.all(tokens["elmo"][1, 1:] == 0)
    assert "sequence_len is larger than the width" in served["too_long"]


def test_a_backbone_serves_as_an_embedding_with_an_equal_mix():
    backbone = ElmoBackbone(**TINY)
    embedding = backbone.serving_model()
    assert isinstance(embedding, ElmoEmbedding) and embedding.backbone is backbone
    assert embedding.scalar_mix.initial_weights == [0.0, 0.0, 0.0]  # an equal mix
    assert embedding.scalar_mix.initial_gamma == 1.0
    assert backbone.trainable  # exporting it does not freeze it


def test_an_embedder_serves_its_mixed_vectors(exported):
    """``saved_model(ElmoEmbedder)`` writes its ``ElmoEmbedding``: ``elmo``
    is ``embed_sentence(mixed=True)``."""
    embedder, path = exported["embedder"]
    assert embedder.serving_model() is embedder.embedding
    served = serve(path, in_process=keras.config.backend() != "tensorflow")
    assert served["signatures"] == ["default", "tokens"]
    elmo = np.array(served["default"]["elmo"])
    for b, sentence in enumerate(SENTENCES):
        words = sentence.split()
        np.testing.assert_allclose(elmo[b, :len(words)],
                                   embedder.embed_sentence(words, mixed=True), atol=1e-5)


def test_bad_models_are_refused(tmp_path):
    with pytest.raises(TypeError, match="serving_endpoints"):
        saved_model(keras.layers.Dense(2), str(tmp_path / "x"))


def test_every_representation_is_served(exported):
    embedding, path = exported["cached"]
    backbone = embedding.backbone
    served = serve(path, in_process=keras.config.backend() != "tensorflow")
    assert sorted(served["default"]) == sorted(served["tokens"]) == sorted(
        OUTPUTS + ["elmo_1"])

    # Strings are served through the characters (words outside the cache
    # work), without dropout.
    by_characters = ElmoEmbedding(backbone, num_output_representations=2,
                                  do_layer_norm=True)
    by_characters.build((None, None, 12))
    for mix, source in zip(by_characters.scalar_mixes, embedding.scalar_mixes):
        mix.set_weights(source.get_weights())
    characters = CharacterIds(max_word_length=12)
    expected = [to_numpy(x) for x in by_characters(characters(SENTENCES)["character_ids"])]
    np.testing.assert_allclose(np.array(served["default"]["elmo"]), expected[0], atol=1e-5)
    np.testing.assert_allclose(np.array(served["default"]["elmo_1"]), expected[1], atol=1e-5)
    assert not np.allclose(expected[0], expected[1])

    # In Keras the cached words' ids give the character path's vectors.
    words = np.array([[1, 2, 3], [4, 3, 5]], "int32")
    pair = by_characters(characters(["the river bank", "a bank loan"])["character_ids"])
    for got, want in zip(embedding(words), pair):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-5)
