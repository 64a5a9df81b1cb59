"""Hugging Face GPT-2 folders through kzoo: logits, greedy generation, tokenizer."""

import json

import numpy as np
import pytest

import kzoo
from kzoo.presets.errors import PresetError
from kzoo.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

CORPUS = ["The cat sat on the mat.", "Dogs don't sit; cats do!",
          "  spaces   and\nnew lines 123"] * 4
VOCABULARY, MERGES = kzoo.tokenizers.compute_byte_pair_merges(CORPUS, vocabulary_size=300)
EOS = VOCABULARY["<|endoftext|>"]


def _write_tokenizer(path):
    with open(path / "vocab.json", "w", encoding="utf-8") as f:
        json.dump(VOCABULARY, f)
    (path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n",
                                     encoding="utf-8")


def _save_hf(path, safe_serialization=True, **config):
    path.mkdir(parents=True, exist_ok=True)
    _write_tokenizer(path)
    config = transformers.GPT2Config(
        vocab_size=len(VOCABULARY), n_positions=32, n_embd=16, n_layer=2, n_head=2,
        bos_token_id=EOS, eos_token_id=EOS, **config)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    model.save_pretrained(path)
    if not safe_serialization:  # transformers 5 writes safetensors only
        (path / "model.safetensors").unlink()
        torch.save(model.state_dict(), path / "pytorch_model.bin")
    return model


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt2")
    return path, _save_hf(path)


def test_logits_match_transformers(hf_folder):
    path, model = hf_folder
    lm = kzoo.models.GPTCausalLM.from_preset(str(path))
    ids = np.random.default_rng(0).integers(0, len(VOCABULARY), (2, 9))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    with torch.no_grad():
        expected = model(input_ids=torch.tensor(ids),
                         attention_mask=torch.tensor(mask)).logits.numpy()
    actual = to_numpy(lm.predict_on_batch({"token_ids": ids, "padding_mask": mask}))
    real = mask.astype(bool)
    np.testing.assert_allclose(actual[real], expected[real], atol=1e-4, rtol=1e-4)


def test_greedy_generation_matches_transformers_generate(hf_folder):
    path, model = hf_folder
    lm = kzoo.models.GPTCausalLM.from_preset(str(path))
    prompts = [[5, 7, 9], [1, 2, 3, 4, 5, 6, 7], [42]]  # one batch, three lengths
    actual = lm.generate_token_ids(prompts, max_length=24, stop_token_ids=None)
    for prompt, row in zip(prompts, actual):
        expected = model.generate(torch.tensor([prompt]), max_length=24,
                                  do_sample=False, pad_token_id=EOS,
                                  eos_token_id=None)[0].tolist()
        assert row == expected
    # With a stop token: the row ends at (and keeps) the stop token, as HF.
    stop = actual[0][5]
    stopped = lm.generate_token_ids(prompts[:1], max_length=24, stop_token_ids=[stop])
    expected = model.generate(torch.tensor(prompts[:1]), max_length=24,
                              do_sample=False, pad_token_id=EOS,
                              eos_token_id=stop)[0].tolist()
    assert stopped[0] == expected[:expected.index(stop, 3) + 1]


def test_pytorch_bin_and_all_or_nothing_errors(tmp_path):
    _save_hf(tmp_path / "bin", safe_serialization=False)
    assert (tmp_path / "bin" / "pytorch_model.bin").is_file()
    backbone = kzoo.models.GPTBackbone.from_preset(str(tmp_path / "bin"))
    assert backbone.num_layers == 2 and backbone.hidden_dim == 16
    with pytest.raises(PresetError, match="wpe.weight has shape"):
        kzoo.models.GPTBackbone.from_preset(str(tmp_path / "bin"),
                                            max_sequence_length=16)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text(
        json.dumps({"model_type": "gpt2", "n_layer": 1, "n_embd": 8, "n_head": 2}))
    with pytest.raises(PresetError, match="has no weights"):
        kzoo.models.GPTBackbone.from_preset(str(tmp_path / "empty"))
    built = kzoo.models.GPTBackbone.from_preset(str(tmp_path / "empty"),
                                                load_weights=False)
    assert built.vocabulary_size == 50257 and built.intermediate_dim == 32
    with pytest.raises(PresetError, match="vocab.json"):
        kzoo.models.GPTTokenizer.from_preset(str(tmp_path / "empty"))


def test_tokenizer_from_hf_folder_matches_gpt2_tokenizer(tmp_path):
    _write_tokenizer(tmp_path)
    vocabulary = VOCABULARY
    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": "gpt2", "vocab_size": len(vocabulary)}))
    ours = kzoo.models.GPTTokenizer.from_preset(str(tmp_path))
    theirs = transformers.GPT2Tokenizer(str(tmp_path / "vocab.json"),
                                        str(tmp_path / "merges.txt"))
    texts = ["The cat sat<|endoftext|>on a dog.", "  new   lines\n\n123 don't"]
    for text in texts:
        assert to_numpy(ours(text)).tolist() == theirs(text)["input_ids"]
    assert ours.end_token_id == theirs.eos_token_id == vocabulary["<|endoftext|>"]
    # And a GPTCausalLM preset round trip keeps tokenizer and weights.
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=len(vocabulary), num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=16)
    lm = kzoo.models.GPTCausalLM(backbone, kzoo.models.GPTCausalLMPreprocessor(
        ours, sequence_length=8))
    lm.save_to_preset(str(tmp_path / "preset"))
    restored = kzoo.models.GPTCausalLM.from_preset(str(tmp_path / "preset"))
    assert restored.generate("The cat", max_length=8) == lm.generate("The cat",
                                                                      max_length=8)
