"""Hugging Face openai-gpt (GPT-1) folders: logits, tokenizer, fine-tuning."""

import numpy as np
import pytest

import kzoo
from kzoo.presets.errors import PresetError
from kzoo.testing import assert_allclose, to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

CORPUS = ["The quick brown fox jumps over the lazy dog.",
          "Hello, world! It's 2024: naïve café résumé.",
          "Numbers 12345 and 3.14159 were seen\non two lines.",
          "a b c d e f g h i j k l m n o p q r s t u v w x y z"] * 10
# Punctuation, digits, accents (stripped), newlines and tabs, unknown symbols.
TEXTS = ["The quick brown fox!", "It's 2024: naïve Café, résumé?",
         "Numbers 12345\nand 3.14159", "UNSEEN wörds ☃ zebra",
         "  spaces\t\ttabs\n\nnewlines  "]


def _write_tokenizer(path):
    """A GPT-1-style vocab.json + merges.txt (``</w>`` word ends) trained by
    Hugging Face tokenizers, the library behind OpenAIGPTTokenizer."""
    bpe = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>",
                                                     end_of_word_suffix="</w>"))
    bpe.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    bpe.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    bpe.train_from_iterator(CORPUS, tokenizers.trainers.BpeTrainer(
        vocab_size=200, special_tokens=["<unk>"], end_of_word_suffix="</w>"))
    bpe.model.save(str(path))
    return bpe.get_vocab_size()


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("openai_gpt")
    vocabulary_size = _write_tokenizer(path)
    config = transformers.OpenAIGPTConfig(vocab_size=vocabulary_size, n_positions=24,
                                          n_embd=16, n_layer=2, n_head=2)
    torch.manual_seed(0)
    model = transformers.OpenAIGPTLMHeadModel(config).eval()
    model.save_pretrained(path)
    return path, model


def test_logits_match_transformers(hf_folder):
    path, model = hf_folder
    token_ids = np.array([[5, 9, 17, 3, 40, 2, 60], [7, 7, 1, 60, 2, 8, 0]])
    padding_mask = np.array([[1] * 7, [1] * 6 + [0]])
    with torch.no_grad():
        expected = model(torch.tensor(token_ids),
                         attention_mask=torch.tensor(padding_mask)).logits.numpy()
    lm = kzoo.models.GPTCausalLM.from_preset(str(path))
    assert lm.backbone.normalize_first is False
    logits = to_numpy(lm({"token_ids": token_ids, "padding_mask": padding_mask}))
    real = padding_mask.astype(bool)
    assert_allclose(logits[real], expected[real], atol=1e-4, rtol=0)


def test_token_ids_match_openai_gpt_tokenizer(hf_folder):
    path, _ = hf_folder
    reference = transformers.OpenAIGPTTokenizer.from_pretrained(str(path))
    ours = kzoo.models.GPT1Tokenizer.from_preset(str(path))
    for text in TEXTS:
        expected = reference(text, add_special_tokens=False)["input_ids"]
        assert to_numpy(ours(text)).tolist() == expected, text
    assert 0 in to_numpy(ours(TEXTS[3])).tolist()  # "☃" is <unk>
    assert ours.detokenize(to_numpy(ours([TEXTS[0]]))) == ["the quick brown fox !"]


def test_classifier_and_multiple_choice_fine_tune(hf_folder):
    path, _ = hf_folder
    texts = ["the quick fox", "the lazy dog", "hello world", "numbers 123"]
    labels = np.array([1, 0, 1, 0])
    # Classification, entailment (pairs), similarity (both orders): the three
    # fine-tuning tokens are added to the pretrained vocabulary on load.
    # Entailment is packed as similarity's first order; only classification
    # and multiple choice are trained (each fit compiles a train step: the
    # suite's time; gpt_classifier_test checks the symmetric forward pass).
    for kwargs, x, train in (
            ({}, texts, True), ({"num_segments": 2}, (texts, texts[::-1]), False),
            ({"num_segments": 2, "symmetric": True}, (texts, texts[::-1]), False)):
        model = kzoo.models.GPTClassifier.from_preset(
            str(path), num_classes=2, sequence_length=16, **kwargs)
        tokenizer = model.preprocessor.tokenizer
        assert isinstance(tokenizer, kzoo.models.GPT1Tokenizer)
        assert model.backbone.vocabulary_size == tokenizer.vocabulary_size()
        packed = to_numpy(model.preprocessor(x)["token_ids"])
        assert packed[0, 0] == tokenizer.token_to_id("<|start|>")
        if "num_segments" in kwargs:  # <start> a <delim> b <extract>
            assert tokenizer.token_to_id("<|delim|>") in packed[0]
        if train:
            history = model.fit(x, labels, batch_size=4, epochs=1, verbose=0)
            assert np.isfinite(history.history["loss"]).all()
    # Multiple choice: each (context, answer) sequence scored, softmaxed.
    model = kzoo.models.GPTMultipleChoice.from_preset(
        str(path), num_choices=2, sequence_length=16)
    x = (texts[:2], [["fox", "dog"], ["world", "numbers"]])
    model.fit(x, np.array([0, 1]), epochs=1, verbose=0)
    assert to_numpy(model.predict(x, verbose=0)).shape == (2, 2)


def test_missing_merges_names_the_file(hf_folder, tmp_path):
    path, _ = hf_folder
    for name in ("config.json", "vocab.json", "model.safetensors"):
        (tmp_path / name).write_bytes((path / name).read_bytes())
    with pytest.raises(PresetError, match="has no merges.txt"):
        kzoo.models.GPT1Tokenizer.from_preset(str(tmp_path))
    with pytest.raises(PresetError, match="has no merges.txt"):
        kzoo.models.GPTClassifier.from_preset(str(tmp_path), num_classes=2)
