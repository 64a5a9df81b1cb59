"""BertBackbone: shapes, config, hidden states, errors, training, precision.

Numerical agreement with Hugging Face's BertModel is tested with converted
checkpoints in bert_converter_test.py.
"""

import keras
import numpy as np
import pytest

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.testing import (assert_allclose, run_backbone_test, run_saving_test,
                          to_numpy)

INIT_KWARGS = {
    "vocabulary_size": 20,
    "num_layers": 2,
    "num_heads": 2,
    "hidden_dim": 8,
    "intermediate_dim": 16,
    "max_sequence_length": 10,
}
INPUT_DATA = {
    "token_ids": np.array([[2, 5, 7, 3, 0, 0], [2, 9, 3, 11, 12, 3]], "int32"),
    "segment_ids": np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]], "int32"),
    "padding_mask": np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], "int32"),
}


def test_backbone_basics():
    run_backbone_test(
        BertBackbone, INIT_KWARGS, INPUT_DATA,
        expected_output_shape={"sequence_output": (2, 6, 8), "pooled_output": (2, 8)},
    )


def test_keras_file_round_trip(tmp_path):
    backbone = BertBackbone(**INIT_KWARGS)
    restored = run_saving_test(backbone, INPUT_DATA, tmp_path)
    assert restored.get_config() == backbone.get_config()


def test_layers_are_named_by_their_attribute():
    backbone = BertBackbone(**INIT_KWARGS)
    for name in ("token_embedding", "position_embedding", "segment_embedding",
                 "embeddings_layer_norm", "transformer_layer_0",
                 "transformer_layer_1", "pooled_dense"):
        assert backbone.get_layer(name) is not None
    assert backbone.token_embedding is backbone.get_layer("token_embedding")
    assert [layer.name for layer in backbone.transformer_layers] == [
        "transformer_layer_0", "transformer_layer_1"]
    config = backbone.get_config()
    assert config["activation"] == "gelu" and config["layer_norm_epsilon"] == 1e-12


def test_bool_padding_mask_and_padding_independence():
    backbone = BertBackbone(**{**INIT_KWARGS, "dropout": 0.0})
    ints = to_numpy(backbone(INPUT_DATA)["sequence_output"])
    as_bool = dict(INPUT_DATA, padding_mask=INPUT_DATA["padding_mask"].astype(bool))
    assert_allclose(backbone(as_bool)["sequence_output"], ints, atol=1e-6)
    # Other ids behind the padding leave the real tokens' outputs unchanged.
    changed = dict(INPUT_DATA, token_ids=INPUT_DATA["token_ids"].copy())
    changed["token_ids"][0, 4:] = 13
    assert_allclose(to_numpy(backbone(changed)["sequence_output"])[0, :4],
                    ints[0, :4], atol=1e-5)


def test_hidden_states_model_shares_weights():
    backbone = BertBackbone(**INIT_KWARGS)
    # Used inside another model first (as a task does): still available.
    inputs = {k: keras.Input((None,), dtype="int32", name=k) for k in INPUT_DATA}
    keras.Model(inputs, backbone(inputs)["pooled_output"])
    features = backbone.hidden_states_model()
    out = features(INPUT_DATA)
    expected = backbone(INPUT_DATA)
    assert len(out["hidden_states"]) == INIT_KWARGS["num_layers"] + 1
    assert [tuple(h.shape) for h in out["hidden_states"]] == [(2, 6, 8)] * 3
    assert_allclose(out["hidden_states"][-1], expected["sequence_output"])
    assert_allclose(out["pooled_output"], expected["pooled_output"])
    # The first one is the normalised embedding sum (dropout is off).
    ln = backbone.embeddings_layer_norm
    emb = backbone.embeddings_add([
        backbone.token_embedding(INPUT_DATA["token_ids"]),
        backbone.position_embedding(backbone.token_embedding(INPUT_DATA["token_ids"])),
        backbone.segment_embedding(INPUT_DATA["segment_ids"]),
    ])
    assert_allclose(out["hidden_states"][0], ln(emb), atol=1e-6)
    # Same weights, not copies.
    backbone.pooled_dense.bias.assign(np.ones(8, "float32"))
    assert_allclose(features(INPUT_DATA)["pooled_output"],
                    backbone(INPUT_DATA)["pooled_output"])


def test_empty_batch_gives_empty_outputs():
    backbone = BertBackbone(**INIT_KWARGS)
    empty = np.zeros((0, 6), "int32")
    out = backbone({"token_ids": empty, "segment_ids": empty, "padding_mask": empty})
    assert tuple(out["sequence_output"].shape) == (0, 6, 8)
    assert tuple(out["pooled_output"].shape) == (0, 8)


def test_too_long_sequence_names_both_lengths():
    backbone = BertBackbone(**{**INIT_KWARGS, "max_sequence_length": 4})
    with pytest.raises(ValueError, match="length 6.*sequence_length=4"):
        backbone(INPUT_DATA)


@pytest.mark.parametrize("kwargs, match", [
    ({"hidden_dim": 9}, "`hidden_dim`=9 must be divisible by `num_heads`=2"),
    ({"num_layers": 0}, "`num_layers` must be a positive int"),
    ({"vocabulary_size": 3.0}, "`vocabulary_size` must be a positive int"),
    ({"activation": "nope"}, "`activation` must be"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BertBackbone(**{**INIT_KWARGS, **kwargs})


def test_fit_with_a_dense_head():
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(**{**INIT_KWARGS, "num_layers": 1})
    logits = keras.layers.Dense(2)(backbone(backbone.input)["pooled_output"])
    model = keras.Model(backbone.input, logits)
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x = {
        "token_ids": rng.integers(4, 20, size=(16, 6)).astype("int32"),
        "segment_ids": np.zeros((16, 6), "int32"),
        "padding_mask": np.ones((16, 6), "int32"),
    }
    y = (x["token_ids"][:, 1] > 11).astype("int32")
    history = model.fit(x, y, batch_size=8, epochs=6, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


@pytest.mark.parametrize("dtype, variable_dtype", [
    ("bfloat16", "bfloat16"), ("mixed_bfloat16", "float32")])
def test_low_precision(dtype, variable_dtype):
    backbone = BertBackbone(**{**INIT_KWARGS, "num_layers": 1}, dtype=dtype)
    out = backbone(INPUT_DATA)
    assert keras.backend.standardize_dtype(out["sequence_output"].dtype) == "bfloat16"
    assert backbone.token_embedding.embeddings.dtype == variable_dtype
    assert np.isfinite(to_numpy(out["pooled_output"]).astype("float32")).all()
    restored = BertBackbone.from_config(backbone.get_config())
    assert restored.dtype_policy.name == dtype
