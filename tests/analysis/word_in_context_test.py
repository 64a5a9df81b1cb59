"""Word-in-context vectors: static, ELMo and the generic queries."""

import numpy as np
import pytest

from kzoo.analysis import word_in_context
from kzoo.models.elmo.elmo_word_in_context import ElmoWordInContext
from kzoo.analysis.static_word_in_context import StaticWordInContext
from kzoo.analysis.word_in_context import WordInContext, cosine
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_embedder import ElmoEmbedder
from kzoo.models.word2vec.word_vectors import WordVectors


class NextWordVectors(WordInContext):
    """A toy contextual model: the target's vector is the static vector of
    the word after it (so context decides), on one layer."""

    layer_names = ("next word",)

    def __init__(self, table):
        super().__init__(batch_size=2)
        self.table = table

    def _embed(self, sentences, spans):
        out = []
        for sentence, (_, end) in zip(sentences, spans):
            following = sentence[end:].split()
            out.append([self.table[following[0] if following else "."]])
        return np.array(out, np.float32)


TABLE = {"theatre": np.array([1.0, 0.0]), "opera": np.array([0.9, 0.1]),
         "football": np.array([0.0, 1.0]), "chess": np.array([0.1, 0.9]),
         ".": np.array([1.0, 1.0])}


def test_cosine_by_hand():
    assert cosine([3.0, 4.0], [4.0, 3.0]) == pytest.approx(24 / 25)
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0


def test_nearest_sentences_rank_every_occurrence_and_skip_others():
    model = NextWordVectors(TABLE)
    candidates = ["a play football match", "the play opera night", "no such word",
                  "a play chess club, then a play theatre show", "display opera"]
    found = model.nearest_sentences("play", "the play theatre tonight", candidates, topn=3)
    assert [(f[1], f[2]) for f in found] == [
        (candidates[3], (26, 30)), (candidates[1], (4, 8)), (candidates[3], (2, 6))]
    assert found[0][0] == pytest.approx(1.0)
    assert found[1][0] == pytest.approx(cosine(TABLE["theatre"], TABLE["opera"]))
    with pytest.raises(ValueError, match="None of the 2 candidate sentences contains "
                                         "the word 'play'"):
        model.nearest_sentences("play", "the play theatre", ["no", "display"])
    with pytest.raises(ValueError, match="`candidates` is empty"):
        model.nearest_sentences("play", "the play theatre", [])


def test_vectors_at_keeps_order_across_batches_and_rejects_empty():
    model = NextWordVectors(TABLE)
    sentences = ["a play chess game", "play opera", "x play football now", "play theatre"]
    spans = [(2, 6), (0, 4), (2, 6), (0, 4)]
    vectors = model.vectors_at(sentences, spans, verbose=True)
    expected = [TABLE[w] for w in ("chess", "opera", "football", "theatre")]
    np.testing.assert_array_equal(vectors[:, 0], np.array(expected, np.float32))
    with pytest.raises(ValueError, match="No sentences were given"):
        model.vectors_at([], [])


def test_static_vectors_ignore_context():
    wv = WordVectors(np.array([[1.0, 0.0], [0.6, 0.8]]), ["bank", "Play"])
    static = word_in_context(wv)
    assert isinstance(static, StaticWordInContext) and static.layer_names == ("static vector",)
    np.testing.assert_array_equal(static.word_vectors("A river BANK.", "bank"), [[1.0, 0.0]])
    assert static.similarity("bank", "a river bank", "the bank lends").tolist() == [1.0]
    assert static.similarity("Play", "Play it", "a Play")[0] == pytest.approx(1.0)
    vectors = static.vectors_at(["a loan", "the bank"], [(2, 6), (4, 8)])
    assert np.isnan(vectors[0]).all() and not np.isnan(vectors[1]).any()
    with pytest.raises(KeyError, match="'loan' is not in the vocabulary"):
        static.similarity("loan", "a loan", "the loan")


@pytest.fixture(scope="module")
def elmo():
    backbone = ElmoBackbone(num_layers=2, hidden_dim=8, projection_dim=4,
                            filters=((1, 4), (2, 4)), character_dim=4)
    return ElmoEmbedder(backbone)


def test_elmo_vectors_are_the_target_tokens(elmo):
    wic = word_in_context(elmo)
    assert isinstance(wic, ElmoWordInContext)
    assert wic.layer_names == ("token layer", "LSTM 1", "LSTM 2")
    sentence = "They sat on the river-bank, by the bank."
    tokens = ["They", "sat", "on", "the", "river-bank", ",", "by", "the", "bank", "."]
    reference = elmo.embed_sentence(tokens)  # [3 layers, 10 tokens, 8]
    np.testing.assert_allclose(wic.word_vectors(sentence, "bank"), reference[:, 8],
                               atol=1e-6)
    # A span over two tokens ("the river-bank") is their mean.
    start = sentence.index("the river")
    pooled = wic.vectors_at([sentence], [(start, start + len("the river-bank"))])[0]
    np.testing.assert_allclose(pooled, reference[:, 3:5].mean(axis=1), atol=1e-6)
    # The token layer is context-free; the LSTM layers are not.
    sims = wic.similarity("bank", "the bank of the river", "a bank loan today")
    assert sims[0] == pytest.approx(1.0, abs=1e-6) and sims[2] < 1 - 1e-4


def test_elmo_from_a_task(elmo):
    class Task:  # ElmoLanguageModel's shape: the backbone as .backbone
        backbone = elmo.backbone

    wic = ElmoWordInContext(Task())  # (a bare ElmoBackbone: the class docstring)
    np.testing.assert_allclose(wic.word_vectors("a bank", "bank"),
                               elmo.embed_sentence(["a", "bank"])[:, 1], atol=1e-6)


def test_unsupported_model():
    with pytest.raises(TypeError, match="No word-in-context vectors for a str"):
        word_in_context("bert")


def test_glove_by_either_name():
    from kzoo.analysis.models import load_word_in_context

    for name in ("glove_6b_50d", "glove_6b_50d_en"):
        model = load_word_in_context(name)
        assert isinstance(model, StaticWordInContext)
        assert len(model.wv) == 400000
