"""ElmoEmbedder against bilm-tf's reference vectors; shapes; bad input."""

import h5py
import numpy as np
import pytest

from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_embedder import ElmoEmbedder
from kzoo.testing import assert_allclose


@pytest.fixture(scope="module")
def embedder(allennlp_elmo):
    return ElmoEmbedder.from_preset(str(allennlp_elmo))


def test_layers_match_bilm_tf(embedder, allennlp_elmo, allennlp_reference):
    sentences, top = allennlp_reference
    # Batch 0 of the reference ran from zero states, as the embedder does,
    # and a sentence's vectors do not depend on its batch: its 16-word row.
    words = sentences[1][0].split()
    vectors = embedder.embed_sentence(words)
    assert vectors.shape == (3, len(words), 32)
    assert_allclose(vectors[2], top[1][0], atol=1e-5, rtol=0)
    words = (allennlp_elmo / "vocab_test.txt").read_text().split("\n")[:20]
    with h5py.File(allennlp_elmo / "elmo_token_embeddings.hdf5", "r") as f:
        tokens = f["embedding"][:20]
    layer0 = embedder.embed_sentence(words)[0]  # context-free: any sentence will do
    assert_allclose(layer0, np.concatenate([tokens, tokens], -1), atol=1e-5, rtol=0)


def test_same_vectors_alone_or_in_a_batch_and_mixed(embedder):
    sentences = [["The", "bank", "of", "the", "river"], ["A", "bank", "loan"], []]
    alone = [embedder.embed_sentence(s) for s in sentences]
    batch = list(embedder.embed_sentences(iter(sentences), batch_size=2))
    for a, b in zip(alone, batch):
        assert_allclose(a, b, atol=1e-6)
    assert batch[2].shape == (3, 0, 32)
    mixed = embedder.embed_sentence(sentences[0], mixed=True)
    assert_allclose(mixed, alone[0].mean(axis=0), atol=1e-6)


def test_mix_weights_and_bad_input():
    backbone = ElmoBackbone(num_layers=1, hidden_dim=4, projection_dim=2,
                            filters=((1, 2),), character_dim=2, dropout=0.0)
    embedder = ElmoEmbedder(backbone, mix_weights=[0.0, 50.0], mix_gamma=2.0)
    layers = embedder.embed_sentence(["x", "y"])
    assert_allclose(embedder.embed_sentence(["x", "y"], mixed=True), 2 * layers[1], atol=1e-5)
    assert embedder.embed_batch([]) == []
    with pytest.raises(TypeError, match="list of str tokens"):
        embedder.embed_batch(["not split"])
    with pytest.raises(ValueError, match="`batch_size` must be a positive int"):
        ElmoEmbedder(backbone, batch_size=0)
