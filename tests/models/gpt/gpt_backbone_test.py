"""GPTBackbone: shapes, config, presets, cache, and GPT-1 numerics vs transformers."""

import numpy as np
import pytest

from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.testing import assert_allclose, run_backbone_test, to_numpy

INIT_KWARGS = dict(vocabulary_size=20, num_layers=2, num_heads=2, hidden_dim=8,
                   intermediate_dim=16, max_sequence_length=12, dropout=0.0)
INPUT_DATA = {
    "token_ids": np.array([[1, 5, 7, 9, 3], [4, 2, 8, 0, 0]]),
    "padding_mask": np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]),
}


@pytest.mark.parametrize("normalize_first", [True, False])
def test_backbone_basics(normalize_first):
    run_backbone_test(GPTBackbone, dict(INIT_KWARGS, normalize_first=normalize_first),
                      INPUT_DATA,
                      expected_output_shape={"sequence_output": (2, 5, 8)})


def test_arrangements():
    gpt2 = GPTBackbone(**INIT_KWARGS)
    gpt1 = GPTBackbone(**INIT_KWARGS, normalize_first=False)
    assert gpt2.layer_norm is not None and gpt1.layer_norm is None
    assert all(layer.normalize_first for layer in gpt2.transformer_layers)
    assert not any(layer.normalize_first for layer in gpt1.transformer_layers)


def test_preset_round_trip(tmp_path):
    backbone = GPTBackbone(**INIT_KWARGS)
    expected = backbone(INPUT_DATA)["sequence_output"]
    backbone.save_to_preset(tmp_path / "preset")
    restored = GPTBackbone.from_preset(str(tmp_path / "preset"))
    assert_allclose(restored(INPUT_DATA)["sequence_output"], expected, atol=1e-6)


@pytest.mark.parametrize("normalize_first,quantize,in_place",
                         [(True, None, False), (False, None, False),
                          (True, "int8", False), (True, None, True)])
def test_call_with_cache_equals_full_call(normalize_first, quantize, in_place):
    # int8: generation steps run the quantized layers' own computation too
    # (they once ran the float path on the int8 kernels: off by ~3.6).
    backbone = GPTBackbone(**INIT_KWARGS, normalize_first=normalize_first)
    if quantize:
        backbone.quantize(quantize)
    ids = INPUT_DATA["token_ids"][:1]
    full = to_numpy(backbone({"token_ids": ids,
                              "padding_mask": np.ones_like(ids)})["sequence_output"])
    cache = backbone.build_cache(1, 8)
    assert len(cache) == 2 and tuple(cache[0].shape) == (1, 2, 2, 8, 4)
    first, cache = backbone.call_with_cache(ids[:, :3], cache, 0,
                                            cache_in_place=in_place)
    steps = [to_numpy(first)]
    for i in (3, 4):
        before = [to_numpy(c) for c in cache]
        hidden, new_cache = backbone.call_with_cache(
            ids[:, i:i + 1], cache, i, cache_in_place=in_place)
        if not in_place:  # the caller's cache is left as it was
            for old, given in zip(before, cache):
                assert_allclose(to_numpy(given), old, atol=0, rtol=0)
        cache = new_cache
        steps.append(to_numpy(hidden))
    assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-5)


def test_gpt1_post_norm_matches_transformers_openai_gpt():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.OpenAIGPTConfig(vocab_size=20, n_positions=12, n_embd=8,
                                          n_layer=2, n_head=2)
    torch.manual_seed(0)
    reference = transformers.OpenAIGPTModel(config).eval()
    state = {k: v.numpy() for k, v in reference.state_dict().items()}
    backbone = GPTBackbone(**dict(INIT_KWARGS, intermediate_dim=32),
                           normalize_first=False)
    backbone.token_embedding.embeddings.assign(state["tokens_embed.weight"])
    backbone.position_embedding.embeddings.assign(state["positions_embed.weight"])
    for i, block in enumerate(backbone.transformer_layers):
        for name, variable in (
            ("attn.c_attn.weight", block.query_key_value_dense.kernel),
            ("attn.c_attn.bias", block.query_key_value_dense.bias),
            ("attn.c_proj.weight", block.attention_output_dense.kernel),
            ("attn.c_proj.bias", block.attention_output_dense.bias),
            ("ln_1.weight", block.self_attention_layer_norm.gamma),
            ("ln_1.bias", block.self_attention_layer_norm.beta),
            ("mlp.c_fc.weight", block.feedforward_intermediate_dense.kernel),
            ("mlp.c_fc.bias", block.feedforward_intermediate_dense.bias),
            ("mlp.c_proj.weight", block.feedforward_output_dense.kernel),
            ("mlp.c_proj.bias", block.feedforward_output_dense.bias),
            ("ln_2.weight", block.feedforward_layer_norm.gamma),
            ("ln_2.bias", block.feedforward_layer_norm.beta),
        ):
            variable.assign(state[f"h.{i}.{name}"])
    with torch.no_grad():
        expected = reference(
            input_ids=torch.tensor(INPUT_DATA["token_ids"]),
            attention_mask=torch.tensor(INPUT_DATA["padding_mask"]),
        ).last_hidden_state.numpy()
    actual = to_numpy(backbone(INPUT_DATA)["sequence_output"])
    real = INPUT_DATA["padding_mask"].astype(bool)
    np.testing.assert_allclose(actual[real], expected[real], atol=1e-5, rtol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_layers"):
        GPTBackbone(**dict(INIT_KWARGS, num_layers=0))
    with pytest.raises(ValueError, match="divisible"):
        GPTBackbone(**dict(INIT_KWARGS, num_heads=3))
    backbone = GPTBackbone(**INIT_KWARGS)
    too_long = np.ones((1, 13), "int32")
    with pytest.raises(ValueError, match="sequence_length=12"):
        backbone({"token_ids": too_long, "padding_mask": too_long})
