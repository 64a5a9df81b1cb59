"""GPT's fine-tuned Hugging Face heads, in and out.

transformers' ``GPT2ForSequenceClassification`` and
``OpenAIGPTForSequenceClassification`` are ``GPTClassifier`` with
``use_bias=False`` and the text's own tokens; ``OpenAIGPTDoubleHeadsModel``'s
multiple-choice head is ``GPTMultipleChoice``'s. Each case loads a tiny
random transformers model into kzoo, or writes a kzoo model for transformers,
and compares the outputs on the same token ids with transformers' own.
"""

import json

import keras
import numpy as np
import pytest

import kzoo
from kzoo.models.gpt.fine_tuning_tokens import FINE_TUNING_TOKENS
from kzoo.presets.errors import PresetError
from kzoo.testing import to_numpy

pytestmark = pytest.mark.without_tensorflow

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

TEXTS = ["the cat sat on the mat", "a dog", "the dog sat on a log by the cat"]
LABELS = ["negative", "neutral", "positive"]
LENGTH = 12
TOLERANCE = 1e-4


def spread(weights, seed=0):
    """Random values in every weight (biases and layer norms too), so that a
    weight read or written in the wrong place shows."""
    rng = np.random.default_rng(seed)
    for variable in weights:
        variable.assign(rng.normal(0, 0.3, variable.shape).astype("float32"))


def spread_torch(parameters, seed=0):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in parameters:
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)


def run(model, **inputs):
    with torch.no_grad():
        return model(**{k: torch.tensor(np.asarray(v), dtype=torch.long)
                        for k, v in inputs.items()})


def close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected),
                               atol=TOLERANCE, rtol=0)


# --- GPT-2 ---
@pytest.fixture(scope="module")
def gpt2_tokenizer():
    vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
        TEXTS * 3, vocabulary_size=280)
    vocabulary = dict(vocabulary)
    vocabulary.setdefault("<|endoftext|>", len(vocabulary))
    return kzoo.models.GPTTokenizer(vocabulary, merges)


def write_gpt2_tokenizer(tokenizer, path):
    with open(path / "vocab.json", "w", encoding="utf-8") as f:
        json.dump(dict(tokenizer.vocabulary), f)
    (path / "merges.txt").write_text(
        "#version: 0.2\n" + "".join(m + "\n" for m in tokenizer.merges), encoding="utf-8")


def gpt2_batch(tokenizer):
    """A right-padded batch of the texts' own tokens (padded with
    ``<|endoftext|>``, transformers' usual pad token for GPT-2)."""
    preprocessor = kzoo.models.GPTClassifierPreprocessor(
        tokenizer, sequence_length=LENGTH, fine_tuning_tokens=False)
    x = preprocessor(TEXTS)
    return {k: to_numpy(v).astype("int32") for k, v in x.items()}


@pytest.fixture(scope="module")
def gpt2_classification_folder(tmp_path_factory, gpt2_tokenizer):
    """A ``GPT2ForSequenceClassification`` folder: three labels, random
    ``score``, ``pad_token_id`` set."""
    path = tmp_path_factory.mktemp("gpt2_classifier")
    write_gpt2_tokenizer(gpt2_tokenizer, path)
    eos = gpt2_tokenizer.vocabulary["<|endoftext|>"]
    config = transformers.GPT2Config(
        vocab_size=gpt2_tokenizer.vocabulary_size(), n_positions=32, n_embd=16,
        n_layer=2, n_head=2, bos_token_id=eos, eos_token_id=eos, pad_token_id=eos,
        num_labels=3, id2label=dict(enumerate(LABELS)),
        label2id={n: i for i, n in enumerate(LABELS)})
    torch.manual_seed(0)
    model = transformers.GPT2ForSequenceClassification(config).eval()
    spread_torch(model.parameters())
    model.save_pretrained(path)
    return path, model


def test_gpt2_classifier_loads_from_transformers(gpt2_classification_folder,
                                                 gpt2_tokenizer):
    path, reference = gpt2_classification_folder
    x = gpt2_batch(gpt2_tokenizer)
    assert (x["padding_mask"] == 0).any()
    expected = run(reference, input_ids=x["token_ids"],
                   attention_mask=x["padding_mask"]).logits.numpy()
    for model in (kzoo.models.GPTClassifier.from_preset(str(path)),
                  kzoo.models.TextClassifier.from_preset(str(path))):
        assert type(model) is kzoo.models.GPTClassifier
        assert model.num_classes == 3 and model.label_names == tuple(LABELS)
        assert model.use_bias is False
        assert model.preprocessor.fine_tuning_tokens is False
        close(to_numpy(model.predict_on_batch(x)), expected)
        # From text: the preprocessor packs what transformers reads.
        close(to_numpy(model.predict(TEXTS, verbose=0)), expected)


def test_gpt2_classifier_exports_as_gpt2_for_sequence_classification(
        tmp_path, gpt2_tokenizer):
    keras.utils.set_random_seed(0)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=gpt2_tokenizer.vocabulary_size(), num_layers=2, num_heads=2,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=32)
    preprocessor = kzoo.models.GPTClassifierPreprocessor(
        gpt2_tokenizer, sequence_length=LENGTH, fine_tuning_tokens=False)
    model = kzoo.models.GPTClassifier(backbone, 3, preprocessor=preprocessor,
                                      use_bias=False, label_names=LABELS)
    spread(model.weights)
    path = kzoo.export.hugging_face(model, tmp_path / "cls")
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(path).eval()
    assert type(hf).__name__ == "GPT2ForSequenceClassification"
    assert hf.config.id2label == dict(enumerate(LABELS))
    x = gpt2_batch(gpt2_tokenizer)
    close(run(hf, input_ids=x["token_ids"], attention_mask=x["padding_mask"]).logits,
          to_numpy(model.predict_on_batch(x)))
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    for text, ids, mask in zip(TEXTS, x["token_ids"], x["padding_mask"]):
        assert hf_tokenizer(text)["input_ids"] == ids[mask == 1].tolist()
    # And back: the folder loads into kzoo with the same logits.
    again = kzoo.models.GPTClassifier.from_preset(path)
    close(to_numpy(again.predict_on_batch(x)), to_numpy(model.predict_on_batch(x)))


@pytest.fixture(scope="module")
def gpt2_framed_tokenizer(gpt2_tokenizer):
    """GPT-2's tokenizer with GPT-1's three fine-tuning tokens added."""
    vocabulary = dict(gpt2_tokenizer.vocabulary)
    for token in FINE_TUNING_TOKENS:
        vocabulary.setdefault(token, len(vocabulary))
    return kzoo.models.GPTTokenizer(vocabulary, list(gpt2_tokenizer.merges))


def test_gpt1_style_classifier_on_gpt2_is_refused(tmp_path, gpt2_framed_tokenizer):
    tokenizer = gpt2_framed_tokenizer
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=1, num_heads=2,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=32)
    framed = kzoo.models.GPTClassifierPreprocessor(tokenizer, sequence_length=LENGTH)
    with pytest.raises(ValueError, match="use_bias=False"):
        kzoo.export.hugging_face(
            kzoo.models.GPTClassifier(backbone, 2, preprocessor=framed), tmp_path / "x")
    with pytest.raises(ValueError, match="fine_tuning_tokens=False"):
        kzoo.export.hugging_face(
            kzoo.models.GPTClassifier(backbone, 2, preprocessor=framed, use_bias=False),
            tmp_path / "x")
    assert not (tmp_path / "x").exists()


# --- GPT-1 (openai-gpt) ---
GPT1_CORPUS = ["the quick brown fox jumps over the lazy dog",
               "a cat sat on the mat", "hello world , it is a test ."] * 10


@pytest.fixture(scope="module")
def gpt1_files(tmp_path_factory):
    """``vocab.json`` + ``merges.txt`` of a GPT-1-style BPE (``</w>`` word
    ends) with the three fine-tuning tokens at the end of the vocabulary."""
    path = tmp_path_factory.mktemp("gpt1_tokenizer")
    bpe = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>",
                                                     end_of_word_suffix="</w>"))
    bpe.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    bpe.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    bpe.train_from_iterator(GPT1_CORPUS, tokenizers.trainers.BpeTrainer(
        vocab_size=120, special_tokens=["<unk>"], end_of_word_suffix="</w>"))
    bpe.model.save(str(path))
    vocabulary = json.loads((path / "vocab.json").read_text(encoding="utf-8"))
    for token in FINE_TUNING_TOKENS:
        vocabulary[token] = len(vocabulary)
    (path / "vocab.json").write_text(json.dumps(vocabulary), encoding="utf-8")
    return path


def gpt1_tokenizer(files):
    return kzoo.models.GPT1Tokenizer(str(files / "vocab.json"), str(files / "merges.txt"))


def gpt1_backbone(tokenizer):
    """A post-norm (GPT-1) backbone, feed-forward 4 x hidden as OpenAI GPT's."""
    keras.utils.set_random_seed(0)
    return kzoo.models.GPTBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=2, num_heads=2,
        hidden_dim=8, intermediate_dim=32, max_sequence_length=24,
        normalize_first=False)


def copy_tokenizer(files, path):
    for name in ("vocab.json", "merges.txt"):
        (path / name).write_bytes((files / name).read_bytes())


def gpt1_config(vocabulary_size, **kwargs):
    return transformers.OpenAIGPTConfig(vocab_size=vocabulary_size, n_positions=24,
                                        n_embd=16, n_layer=2, n_head=2, **kwargs)


def choice_batch(tokenizer):
    """``[batch, choices, length]`` inputs packed as GPT-1 packs them, and
    transformers' ``mc_token_ids``: each choice's ``<|extract|>`` position.
    (OpenAIGPTModel flattens ``input_ids`` to ``[batch * choices, length]``
    but not ``attention_mask``: pass that flat.)"""
    preprocessor = kzoo.models.GPTMultipleChoicePreprocessor(
        tokenizer, sequence_length=LENGTH)
    x, _, _ = keras.utils.unpack_x_y_sample_weight(preprocessor(
        (["the cat sat", "a quick test"],
         [["on the mat", "a dog"], ["hello", "the lazy brown fox"]])))
    x = {k: to_numpy(v).astype("int32") for k, v in x.items()}
    extract = tokenizer.token_to_id("<|extract|>")
    positions = x["padding_mask"].sum(-1) - 1
    assert (np.take_along_axis(x["token_ids"], positions[..., None], -1) == extract).all()
    return x, positions


@pytest.fixture(scope="module")
def double_heads_folder(tmp_path_factory, gpt1_files):
    path = tmp_path_factory.mktemp("openai_gpt_double_heads")
    copy_tokenizer(gpt1_files, path)
    vocabulary = json.loads((gpt1_files / "vocab.json").read_text(encoding="utf-8"))
    torch.manual_seed(0)
    model = transformers.OpenAIGPTDoubleHeadsModel(gpt1_config(len(vocabulary))).eval()
    spread_torch(model.parameters(), seed=1)
    model.save_pretrained(path)
    return path, model


def test_double_heads_load_into_gpt_multiple_choice(double_heads_folder, gpt1_files):
    path, reference = double_heads_folder
    x, positions = choice_batch(gpt1_tokenizer(gpt1_files))
    expected = run(reference, input_ids=x["token_ids"], mc_token_ids=positions,
                   attention_mask=x["padding_mask"].reshape(-1, LENGTH)).mc_logits.numpy()
    for model in (kzoo.models.GPTMultipleChoice.from_preset(str(path)),
                  kzoo.models.MultipleChoice.from_preset(str(path))):
        assert type(model) is kzoo.models.GPTMultipleChoice
        assert model.backbone.normalize_first is False
        close(to_numpy(model.predict_on_batch(x)), expected)


def test_gpt_multiple_choice_exports_as_double_heads(tmp_path, gpt1_files):
    tokenizer = gpt1_tokenizer(gpt1_files)
    backbone = gpt1_backbone(tokenizer)
    preprocessor = kzoo.models.GPTMultipleChoicePreprocessor(
        tokenizer, sequence_length=LENGTH)
    model = kzoo.models.GPTMultipleChoice(backbone, preprocessor=preprocessor)
    spread(model.weights)
    path = kzoo.export.hugging_face(model, tmp_path / "mc")
    hf = transformers.OpenAIGPTDoubleHeadsModel.from_pretrained(path).eval()
    x, positions = choice_batch(tokenizer)
    out = run(hf, input_ids=x["token_ids"], mc_token_ids=positions,
              attention_mask=x["padding_mask"].reshape(-1, LENGTH))
    close(out.mc_logits, to_numpy(model.predict_on_batch(x)))
    flat = {k: v.reshape(-1, LENGTH) for k, v in x.items()}
    lm = kzoo.models.GPTCausalLM(backbone)
    real = flat["padding_mask"].astype(bool)
    close(out.logits.numpy().reshape(-1, LENGTH, backbone.vocabulary_size)[real],
          to_numpy(lm.predict_on_batch(flat))[real])
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    assert hf_tokenizer.convert_tokens_to_ids("<|extract|>") == \
        tokenizer.token_to_id("<|extract|>")
    again = kzoo.models.GPTMultipleChoice.from_preset(path)
    close(to_numpy(again.predict_on_batch(x)), to_numpy(model.predict_on_batch(x)))


def test_openai_gpt_classifier_both_ways(tmp_path, gpt1_files):
    """GPT-1's classifier with ``use_bias=False`` reads its ``<|extract|>``
    token, the last real one: ``OpenAIGPTForSequenceClassification``."""
    tokenizer = gpt1_tokenizer(gpt1_files)
    backbone = gpt1_backbone(tokenizer)
    preprocessor = kzoo.models.GPTClassifierPreprocessor(tokenizer, sequence_length=LENGTH)
    model = kzoo.models.GPTClassifier(backbone, 2, preprocessor=preprocessor,
                                      use_bias=False)
    spread(model.weights)
    path = kzoo.export.hugging_face(model, tmp_path / "cls")
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(path).eval()
    assert type(hf).__name__ == "OpenAIGPTForSequenceClassification"
    x = {k: to_numpy(v).astype("int32") for k, v in preprocessor(TEXTS).items()}
    expected = run(hf, input_ids=x["token_ids"], attention_mask=x["padding_mask"]).logits
    close(to_numpy(model.predict_on_batch(x)), expected)
    again = kzoo.models.GPTClassifier.from_preset(path)
    assert again.use_bias is False and again.preprocessor.fine_tuning_tokens is True
    close(to_numpy(again.predict_on_batch(x)), expected)
    with pytest.raises(ValueError, match="use_bias=False"):
        kzoo.export.hugging_face(
            kzoo.models.GPTClassifier(backbone, 2, preprocessor=preprocessor),
            tmp_path / "bias")


# --- what does not fit ---
def rewrite(folder, path, config=None, tensors=None):
    """A copy of ``folder`` with ``config.json`` updated by ``config`` and
    the tensors changed by ``tensors(dict)``."""
    from safetensors.numpy import load_file, save_file

    path.mkdir()
    for file in folder.iterdir():
        (path / file.name).write_bytes(file.read_bytes())
    if config:
        data = json.loads((path / "config.json").read_text(encoding="utf-8"))
        (path / "config.json").write_text(json.dumps({**data, **config}),
                                          encoding="utf-8")
    if tensors:
        state = load_file(str(path / "model.safetensors"))
        tensors(state)
        save_file(state, str(path / "model.safetensors"), metadata={"format": "pt"})
    return path


def test_misfit_head_tensor_is_named_and_nothing_loads(tmp_path,
                                                       gpt2_classification_folder):
    folder, _ = gpt2_classification_folder
    wide = rewrite(folder, tmp_path / "wide", tensors=lambda t: t.update(
        {"score.weight": np.zeros((3, 17), "float32")}))
    with pytest.raises(PresetError, match=r"score\.weight has shape \(3, 17\)"):
        kzoo.models.GPTClassifier.from_preset(str(wide))
    absent = rewrite(folder, tmp_path / "absent", tensors=lambda t: t.pop("score.weight"))
    with pytest.raises(PresetError, match=r"missing from the checkpoint: score\.weight"):
        kzoo.models.GPTClassifier.from_preset(str(absent))


def test_another_head_shape_is_refused(gpt2_classification_folder, double_heads_folder):
    folder, _ = gpt2_classification_folder
    with pytest.raises(PresetError, match="GPT2ForSequenceClassification"):
        kzoo.models.GPTMultipleChoice.from_preset(str(folder))
    with pytest.raises(PresetError, match="num_classes=3"):
        kzoo.models.GPTClassifier.from_preset(str(folder), num_classes=5)
    folder, _ = double_heads_folder
    with pytest.raises(PresetError, match="OpenAIGPTDoubleHeadsModel"):
        kzoo.models.GPTClassifier.from_preset(str(folder))
    # The backbone, or a task without a trained head, still loads.
    lm = kzoo.models.GPTCausalLM.from_preset(str(folder))
    assert lm.backbone.normalize_first is False


def test_double_heads_summary_kzoo_cannot_compute_is_refused(tmp_path,
                                                             double_heads_folder):
    folder, _ = double_heads_folder
    tanh = rewrite(folder, tmp_path / "tanh", config={"summary_activation": "tanh"})
    with pytest.raises(PresetError, match="summary_activation='tanh'"):
        kzoo.models.GPTMultipleChoice.from_preset(str(tanh))


def test_double_heads_without_fine_tuning_tokens_keep_their_head(tmp_path, gpt1_files):
    """A vocabulary without GPT-1's three tokens gets them (new rows); the
    trained multiple-choice head is kept."""
    vocabulary = json.loads((gpt1_files / "vocab.json").read_text(encoding="utf-8"))
    vocabulary = {k: v for k, v in vocabulary.items() if k not in FINE_TUNING_TOKENS}
    (tmp_path / "vocab.json").write_text(json.dumps(vocabulary), encoding="utf-8")
    (tmp_path / "merges.txt").write_bytes((gpt1_files / "merges.txt").read_bytes())
    torch.manual_seed(0)
    reference = transformers.OpenAIGPTDoubleHeadsModel(gpt1_config(len(vocabulary)))
    spread_torch(reference.parameters(), seed=2)
    reference.save_pretrained(tmp_path)
    model = kzoo.models.GPTMultipleChoice.from_preset(str(tmp_path))
    assert model.backbone.vocabulary_size == len(vocabulary) + 3
    close(to_numpy(model.output_dense.kernel)[:, 0],
          reference.multiple_choice_head.summary.weight.detach().numpy()[0])
    close(to_numpy(model.output_dense.bias),
          reference.multiple_choice_head.summary.bias.detach().numpy())


def test_gpt2_double_heads_both_ways(tmp_path, gpt2_framed_tokenizer):
    """``GPT2DoubleHeadsModel``'s multiple-choice head is the same as
    OpenAI GPT's: ``GPTMultipleChoice`` on a pre-norm backbone."""
    tokenizer = gpt2_framed_tokenizer
    x, positions = choice_batch(tokenizer)
    write_gpt2_tokenizer(tokenizer, tmp_path)
    torch.manual_seed(0)
    reference = transformers.GPT2DoubleHeadsModel(transformers.GPT2Config(
        vocab_size=tokenizer.vocabulary_size(), n_positions=32, n_embd=16, n_layer=2,
        n_head=2)).eval()
    spread_torch(reference.parameters(), seed=3)
    reference.save_pretrained(tmp_path)
    expected = run(reference, input_ids=x["token_ids"], mc_token_ids=positions,
                   attention_mask=x["padding_mask"].reshape(-1, LENGTH)).mc_logits
    model = kzoo.models.MultipleChoice.from_preset(str(tmp_path))
    assert type(model) is kzoo.models.GPTMultipleChoice
    close(to_numpy(model.predict_on_batch(x)), expected)
    path = kzoo.export.hugging_face(model, tmp_path / "out")
    again = transformers.GPT2DoubleHeadsModel.from_pretrained(path).eval()
    close(run(again, input_ids=x["token_ids"], mc_token_ids=positions,
              attention_mask=x["padding_mask"].reshape(-1, LENGTH)).mc_logits, expected)
