"""Each backbone's layout rules against its real variable paths (every
backend: the rules and checks need no engine)."""

import keras
import pytest

import kzoo
from kzoo.distribution import layout
from tests.distribution import tiny_models

MESH = keras.distribution.DeviceMesh(
    (2, 4), ("batch", "model"), [f"cpu:{i}" for i in range(8)])


def _bert_masked_lm():
    return kzoo.BertMaskedLM(
        tiny_models.bert_classifier().backbone,
        preprocessor=kzoo.BertMaskedLMPreprocessor(
            kzoo.BertTokenizer(vocabulary=tiny_models.BERT_VOCABULARY),
            sequence_length=8))


def _word2vec():
    return kzoo.Word2VecSkipGram(kzoo.Word2VecBackbone(vocabulary_size=12, hidden_dim=4))


TASKS = {
    "bert": _bert_masked_lm,
    "gpt": tiny_models.gpt_causal_lm,
    "elmo": tiny_models.elmo_language_model,
    "word2vec": _word2vec,
}


@pytest.mark.parametrize("family", sorted(TASKS))
def test_every_large_weight_has_a_rule_and_every_rule_a_weight(family):
    model = TASKS[family]()
    layouts = type(model.backbone).get_layout_map(MESH)
    matched = layout.check_layouts(layouts, model.weights, require_every_rule=True)
    covered = {path for paths in matched.values() for path in paths}
    for variable in model.weights:
        small = variable.path.endswith(("bias", "gamma", "beta")) or len(variable.shape) < 2
        if small:  # biases, norms, scalars: replicated
            assert variable.path not in covered, variable.path
        else:  # kernels and tables
            assert variable.path in covered, f"no layout rule for {variable.path}"
    split = [p for p, paths in matched.items() if "model" in layouts[p].axes]
    assert split, "nothing is split over the model axis"


def test_rules_split_the_intended_axes():
    bert = kzoo.BertBackbone.get_layout_map(MESH, model_parallel_dim_name="model")
    # Megatron: attention by heads, feed-forward column then row.
    assert bert["transformer_layer_3/self_attention_layer/key/kernel"].axes == (
        None, "model", None)
    assert bert["transformer_layer_0/self_attention_layer/attention_output/kernel"
                ].axes == ("model", None, None)
    assert bert["transformer_layer_0/feedforward_intermediate_dense/kernel"].axes == (
        None, "model")
    assert bert["transformer_layer_0/feedforward_output_dense/kernel"].axes == (
        "model", None)
    assert bert["transformer_layer_0/feedforward_output_dense/bias"] is None
    # Rules match after the names of layers around the backbone.
    assert bert["bert_classifier/token_embedding/embeddings"].axes == (None, "model")
    word2vec = kzoo.Word2VecBackbone.get_layout_map(MESH)
    assert word2vec["context_embedding/embeddings"].axes == ("model", None)


def test_custom_axis_names_and_bad_meshes():
    mesh = keras.distribution.DeviceMesh(
        (2, 4), ("data", "tensor"), [f"cpu:{i}" for i in range(8)])
    layouts = kzoo.GPTBackbone.get_layout_map(
        mesh, model_parallel_dim_name="tensor", data_parallel_dim_name="data")
    assert layouts["transformer_layer_0/attention_output_dense/kernel"].axes == (
        "tensor", None)
    with pytest.raises(ValueError, match="'model' is not an axis .* \\['data', 'tensor'\\]"):
        kzoo.GPTBackbone.get_layout_map(mesh)
    with pytest.raises(ValueError, match="must be a keras.distribution.DeviceMesh"):
        kzoo.GPTBackbone.get_layout_map((2, 4))


def test_divisibility_names_the_variable_and_the_numbers():
    model = _word2vec()  # 12 rows: split over 4 devices, but not over 8
    layouts = kzoo.Word2VecBackbone.get_layout_map(MESH)
    layout.check_layouts(layouts, model.weights)
    mesh8 = keras.distribution.DeviceMesh(
        (1, 8), ("batch", "model"), [f"cpu:{i}" for i in range(8)])
    with pytest.raises(ValueError, match=r"'token_embedding/embeddings' \(shape "
                                         r"\(12, 4\)\).*axis 0 has 12 entries.*size 8"):
        layout.check_layouts(kzoo.Word2VecBackbone.get_layout_map(mesh8), model.weights)
    clash = layout.layout_map(MESH, {r"token_embedding/.*": ("model", None),
                                     r".*/embeddings": (None, "model")})
    with pytest.raises(ValueError, match="matches 2 layout rules"):
        layout.check_layouts(clash, model.weights)
