"""LoRA (``Backbone.enable_lora``) and int8 (``Backbone.quantize``) on every family."""

import numpy as np
import pytest

import kzoo
from kzoo.testing import assert_allclose, to_numpy
from tests.models.bert.bert_classifier_test import LABELS, TEXTS, tiny_classifier

BERT_INPUTS = {"token_ids": np.array([[2, 5, 6, 3, 0]]), "segment_ids": np.zeros((1, 5), "int32"),
               "padding_mask": np.array([[1, 1, 1, 1, 0]])}


def _values(weights):
    return {v.path: to_numpy(v).copy() for v in weights}


def test_lora_trains_only_the_adapters_and_round_trips(tmp_path):
    model = tiny_classifier()
    backbone = model.backbone
    backbone.enable_lora(2)
    # Query and value of each block (keras' EinsumDense LoRA on a [hidden,
    # heads, head_dim] kernel): A [hidden, heads, r] and B [r, head_dim].
    hidden, heads, head_dim, rank, layers = 8, 2, 4, 2, 2
    assert sum(int(np.prod(v.shape)) for v in backbone.trainable_weights) == (
        layers * 2 * (hidden * heads * rank + rank * head_dim))
    frozen = {p: v for p, v in _values(backbone.weights).items() if "lora" not in p}
    adapters = _values([v for v in backbone.weights if "lora_kernel_b" in v.path])
    model.fit(TEXTS, LABELS, batch_size=4, epochs=2, verbose=0)
    after = _values(backbone.weights)
    for path, value in frozen.items():
        np.testing.assert_array_equal(after[path], value, err_msg=path)
    assert any(not np.array_equal(after[p], v) for p, v in adapters.items())

    expected = to_numpy(backbone(BERT_INPUTS)["sequence_output"])
    backbone.save_to_preset(tmp_path / "lora")
    restored = kzoo.models.BertBackbone.from_preset(str(tmp_path / "lora"))
    assert restored.lora_rank == 2
    assert_allclose(restored(BERT_INPUTS)["sequence_output"], expected, atol=1e-5)
    # The restored adapters train on: B is zero (no change yet), A is not.
    a = [to_numpy(v) for v in restored.weights if "lora_kernel_a" in v.path]
    assert a and all(np.abs(x).sum() > 0 for x in a)

    with pytest.raises(ValueError, match="already enabled"):
        backbone.enable_lora(2)
    with pytest.raises(ValueError, match="`rank` must be a positive int"):
        tiny_classifier().backbone.enable_lora(0)


def _backbones():
    small = dict(num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16)
    yield (kzoo.models.BertBackbone(vocabulary_size=20, max_sequence_length=8, **small),
           BERT_INPUTS)
    yield (kzoo.models.GPTBackbone(vocabulary_size=20, max_sequence_length=8, **small),
           {"token_ids": np.array([[2, 5, 6, 3]]), "padding_mask": np.ones((1, 4), "int32")})
    yield (kzoo.models.Word2VecBackbone(vocabulary_size=20, hidden_dim=8),
           {"token_ids": np.array([[2, 5]]), "target_ids": np.array([[3, 4, 5]])})


@pytest.mark.parametrize("index", [0, 1, 2])
def test_int8_stays_close_and_round_trips(tmp_path, index):
    backbone, inputs = list(_backbones())[index]
    if isinstance(backbone, kzoo.models.Word2VecBackbone):
        backbone.context_embedding.embeddings.assign(
            np.random.default_rng(0).normal(size=(20, 8)).astype("float32"))
    key = "target_output" if "target_ids" in inputs else "sequence_output"
    expected = to_numpy(backbone(inputs)[key])
    backbone.quantize("int8")
    quantized = to_numpy(backbone(inputs)[key])
    scale = np.abs(expected).max()
    assert np.abs(quantized - expected).max() < 0.05 * scale
    assert not np.array_equal(quantized, expected)
    backbone.save_to_preset(tmp_path / "int8")
    restored = type(backbone).from_preset(str(tmp_path / "int8"))
    assert_allclose(restored(inputs)[key], quantized, atol=1e-6)
    # A reloaded int8 preset saves again (its layers held Keras'
    # DTypePolicyMap, and Embedding saved no scales through one).
    restored.save_to_preset(tmp_path / "again")
    again = type(backbone).from_preset(str(tmp_path / "again"))
    assert_allclose(again(inputs)[key], quantized, atol=1e-6)
    with pytest.raises(ValueError, match=r"supports the modes \('int8',\), got 'int4'"):
        backbone.quantize("int4")
    with pytest.raises(ValueError, match="Expected one of"):  # keras lists its modes
        backbone.quantize("int3")


@pytest.mark.parametrize("index", [0, 1])
def test_weight_only_int8_round_trips_its_config(tmp_path, index):
    # Int8QuantizationConfig(activation_quantizer=None): int8 weights, float
    # inputs. The dense layers are rebuilt with Keras' default (int8 inputs
    # too) on reload, so the preset must carry the config.
    from keras.quantizers import Int8QuantizationConfig

    backbone, inputs = list(_backbones())[index]
    default = type(backbone).from_config(backbone.get_config())
    default.set_weights(backbone.get_weights())
    default.quantize("int8")
    backbone.quantize(config=Int8QuantizationConfig(activation_quantizer=None))
    weight_only = to_numpy(backbone(inputs)["sequence_output"])
    assert not np.allclose(weight_only, to_numpy(default(inputs)["sequence_output"]),
                           atol=1e-6)
    assert backbone.get_config()["quantization_config"]["config"]["activation_quantizer"] is None
    assert default.get_config()["quantization_config"]["config"]["activation_quantizer"]
    backbone.save_to_preset(tmp_path / "int8")
    restored = type(backbone).from_preset(str(tmp_path / "int8"))
    dense = [layer for layer in restored._flatten_layers()
             if hasattr(layer, "inputs_quantizer")]
    assert dense and all(layer.inputs_quantizer is None for layer in dense)
    assert_allclose(restored(inputs)["sequence_output"], weight_only, atol=1e-6)


def test_quantization_configs_per_layer_round_trip(tmp_path):
    # Two quantize calls with different configs on different layers: the
    # preset records each layer's.
    from keras.quantizers import Int8QuantizationConfig

    backbone, inputs = next(_backbones())
    backbone.quantize(config=Int8QuantizationConfig(activation_quantizer=None),
                      filters="query")
    backbone.quantize("int8", filters="key")
    found = to_numpy(backbone(inputs)["sequence_output"])
    saved = backbone.get_config()["quantization_config"]["per_layer"]
    assert sorted(path.rsplit("/", 1)[1] for path in saved) == ["key", "key", "query", "query"]
    backbone.save_to_preset(tmp_path / "mixed")
    restored = kzoo.models.BertBackbone.from_preset(str(tmp_path / "mixed"))
    quantizers = {layer.name: layer.inputs_quantizer for layer in restored._flatten_layers()
                  if getattr(layer, "quantization_mode", None)}
    assert {name for name, q in quantizers.items() if q is None} == {"query"}
    assert {name for name, q in quantizers.items() if q is not None} == {"key"}
    assert_allclose(restored(inputs)["sequence_output"], found, atol=1e-6)

    config = backbone.get_config()
    config["quantization_config"]["per_layer"]["no/such/layer"] = None
    with pytest.raises(ValueError, match="names layers that this BertBackbone has not quantized"):
        kzoo.models.BertBackbone.from_config(config)


def test_quantized_task_head_round_trips(tmp_path):
    # task.quantize quantizes the head too (the classifier's logits Dense);
    # the task config records it, so the preset's int8 head weights load.
    model = tiny_classifier()
    model.quantize("int8")
    assert model.get_layer("logits").quantization_mode == "int8"
    expected = to_numpy(model.predict(TEXTS, verbose=0))
    model.save_to_preset(tmp_path / "int8")
    restored = type(model).from_preset(str(tmp_path / "int8"))
    assert restored.get_layer("logits").quantization_mode == "int8"
    assert_allclose(restored.predict(TEXTS, verbose=0), expected, atol=1e-6)
    with pytest.raises(ValueError, match=r"BertClassifier.quantize supports the modes"):
        tiny_classifier().quantize("int4")
    config = model.get_config()
    config["quantized_head"]["no_such_layer"] = config["quantized_head"]["logits"]
    with pytest.raises(ValueError, match="names layers that this BertClassifier does not have"):
        type(model).from_config(config)
