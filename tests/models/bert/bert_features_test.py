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
