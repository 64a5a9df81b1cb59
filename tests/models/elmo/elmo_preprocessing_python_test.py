"""ELMo's preprocessing on the Python engine: `ElmoLanguageModelPreprocessor`
and `ElmoEmbedder` give exactly the TensorFlow engine's arrays, and the
embedder and the language model's `fit` run where TensorFlow cannot be
imported."""

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_embedder import ElmoEmbedder
from kzoo.models.elmo.elmo_language_model_preprocessor import (
    ElmoLanguageModelPreprocessor,
)
from kzoo.preprocessing.engine import engine_scope
from kzoo.testing import assert_allclose
from kzoo.testing.without_tensorflow import check_without_tensorflow
from kzoo.tokenizers import WordTokenizer

VOCABULARY = ["<UNK>", "<S>", "</S>", "the", "river", "bank", "Bank", "é", "日本"]
WORDS = st.sampled_from(VOCABULARY[3:] + ["<S>", "</S>", "<UNK>", "x", "BANK",
                                          "é" * 9, "\U0001F642", "bank\u00a0river"])
SEPARATORS = st.sampled_from([" ", "  ", "\t", "\n", "\u3000", "\x0b"])
SENTENCE = st.lists(st.tuples(WORDS, SEPARATORS), max_size=8).map(
    lambda pairs: "".join(w + s for w, s in pairs))
BATCH = st.one_of(st.lists(SENTENCE, max_size=5),
                  st.lists(st.lists(WORDS, max_size=7), max_size=4))
OPTIONS = st.fixed_dictionaries({
    "sequence_length": st.one_of(st.none(), st.integers(2, 9)),
    "max_word_length": st.sampled_from([3, 8, 50]),
    "lowercase": st.booleans(),
})


def _value(x):
    if isinstance(x, (tuple, list)):
        return [_value(v) for v in x]
    if isinstance(x, dict):
        return {k: _value(v) for k, v in x.items()}
    x = np.asarray(keras.ops.convert_to_numpy(x))
    return (x.dtype.name, x.shape, x.tolist())


@settings(max_examples=80)
@given(BATCH, OPTIONS)
def test_language_model_preprocessor(batch, options):
    results = {}
    for name in ("tensorflow", "python"):
        with engine_scope(name):
            tokenizer = WordTokenizer(vocabulary=VOCABULARY, oov_token="<UNK>",
                                      lowercase=options["lowercase"])
            preprocessor = ElmoLanguageModelPreprocessor(
                tokenizer, sequence_length=options["sequence_length"],
                max_word_length=options["max_word_length"])
            results[name] = _value(preprocessor(batch))
    assert results["python"] == results["tensorflow"]


def test_the_documented_example_on_the_python_engine():
    tokenizer = WordTokenizer(
        vocabulary=["<UNK>", "<S>", "</S>", "the", "bank"], oov_token="<UNK>")
    with engine_scope("python"):
        x, y, w = ElmoLanguageModelPreprocessor(tokenizer, max_word_length=8)(
            ["the bank", "a"])
    assert np.asarray(y["forward"]).tolist() == [[3, 4, 2, 0], [0, 2, 0, 0]]
    assert np.asarray(y["backward"]).tolist() == [[0, 1, 3, 4], [0, 1, 0, 0]]
    assert np.asarray(w["backward"]).tolist() == [[0, 1, 1, 1], [0, 1, 1, 0]]
    assert np.asarray(w["backward"]).dtype == np.float32
    assert np.asarray(x["padding_mask"]).dtype == np.int32


TINY = dict(num_layers=1, hidden_dim=8, projection_dim=4, filters=((1, 4), (2, 4)),
            character_dim=4, max_word_length=10)


def test_embedder_gives_the_same_vectors_on_both_engines():
    embedder = ElmoEmbedder(ElmoBackbone(**TINY))
    sentences = [["the", "river", "bank"], [], ["é" * 12, "<S>"]]
    results = {}
    for name in ("tensorflow", "python"):
        with engine_scope(name):
            results[name] = embedder.embed_batch(sentences)
    for python, tensorflow in zip(results["python"], results["tensorflow"]):
        assert python.shape == tensorflow.shape
        assert_allclose(python, tensorflow, atol=0, rtol=0)


@pytest.mark.without_tensorflow
@pytest.mark.backends("jax", "torch")
def test_embedder_and_language_model_fit_without_tensorflow():
    output = check_without_tensorflow("""
        import numpy as np
        import kzoo

        tiny = dict(num_layers=1, hidden_dim=8, projection_dim=4,
                    filters=((1, 4), (2, 4)), character_dim=4, max_word_length=10)
        embedder = kzoo.models.ElmoEmbedder(kzoo.models.ElmoBackbone(**tiny))
        print(embedder.embed_sentence(["the", "river", "bank"]).shape)
        print([v.shape for v in embedder.embed_sentences(
            [["a"], ["the", "bank"]], mixed=True)])

        sentences = ["the river bank", "a money bank", "the bank"]
        vocabulary, counts = kzoo.tokenizers.compute_word_vocabulary(
            sentences, special_tokens=("<UNK>", "<S>", "</S>"), oov_token="<UNK>")
        tokenizer = kzoo.tokenizers.WordTokenizer(vocabulary=vocabulary,
                                                  oov_token="<UNK>")
        model = kzoo.models.ElmoLanguageModel(
            kzoo.models.ElmoBackbone(**tiny),
            preprocessor=kzoo.models.ElmoLanguageModelPreprocessor(
                tokenizer, max_word_length=10))
        history = model.fit(sentences, batch_size=3, epochs=1, verbose=0)
        logs = history.history
        print(sorted(logs))
        print(all(np.isfinite(v[0]) and v[0] > 1 for k, v in logs.items()
                  if k.endswith("perplexity")))
    """)
    lines = output.splitlines()
    assert lines[0] == "(2, 3, 8)"
    assert lines[1] == "[(1, 8), (2, 8)]"
    assert lines[2] == ("['backward_loss', 'backward_perplexity', 'forward_loss', "
                        "'forward_perplexity', 'loss']")
    assert lines[3] == "True"
