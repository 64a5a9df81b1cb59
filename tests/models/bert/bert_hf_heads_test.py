"""Fine-tuned Hugging Face BERT heads → kzoo tasks, checked against transformers.

Each case saves a tiny random transformers model (its head drawn with a
stddev of 0.5, so that a head left random or put in the wrong place shows)
with its tokenizer, loads the folder with kzoo, and compares the logits on
the same token ids, and on raw text through each library's own tokenizer.
"""

import json
import shutil
import warnings

import keras
import numpy as np
import pytest

import kzoo
from kzoo.models.bert import (
    BertBackbone,
    BertClassifier,
    BertMultipleChoice,
    BertQuestionAnswerer,
    BertTextEmbedder,
    BertTokenClassifier,
    BertTokenizer,
)
from kzoo.models.bert.bert_converter import HuggingFaceBertSource
from kzoo.presets.errors import PresetError
from kzoo.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

pytestmark = pytest.mark.without_tensorflow

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + (
    "the cat sat on a mat dog ran big is it . , who where what in paris "
    "john plays ##s ##ed sun red blue").split()
LABELS = {0: "negative", 1: "neutral", 2: "positive"}
TOLERANCE = 1e-4
LENGTH = 10

#: architecture → (kzoo task, its generic shape)
TASKS = {
    "BertForSequenceClassification": (BertClassifier, kzoo.models.TextClassifier),
    "BertForTokenClassification": (BertTokenClassifier, kzoo.models.TokenClassifier),
    "BertForQuestionAnswering": (BertQuestionAnswerer, kzoo.models.QuestionAnswerer),
    "BertForMultipleChoice": (BertMultipleChoice, kzoo.models.MultipleChoice),
}


def _config(**kwargs):
    return transformers.BertConfig(
        vocab_size=len(VOCABULARY), hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=37, max_position_embeddings=64,
        **kwargs)


def _save(model, folder, vocabulary_file):
    """``save_pretrained`` of the model and of transformers' tokenizer (as
    transformers 5 writes it: tokenizer.json, no vocab.txt)."""
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.startswith(("classifier.", "qa_outputs.")):
                parameter.normal_(0, 0.5)
            else:  # non-trivial biases and layer norms too
                parameter.add_(torch.randn_like(parameter) * 0.1)
    model.eval().save_pretrained(folder)
    transformers.BertTokenizer(str(vocabulary_file)).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    """A folder per architecture (3 named labels for the classifiers), a
    regression and a classifier with transformers' default label names,
    with the transformers models."""
    root = tmp_path_factory.mktemp("hf_heads")
    vocabulary_file = root / "vocab.txt"
    vocabulary_file.write_text("\n".join(VOCABULARY) + "\n")
    torch.manual_seed(0)
    labelled = dict(num_labels=3, id2label=LABELS,
                    label2id={v: k for k, v in LABELS.items()})
    built = {}
    for architecture in TASKS:
        kwargs = labelled if "Classification" in architecture else {}
        model = getattr(transformers, architecture)(_config(**kwargs))
        built[architecture] = (model, _save(model, root / architecture, vocabulary_file))
    for name, kwargs in (("regression", dict(num_labels=1)),
                         ("default_labels", dict(num_labels=2, classifier_dropout=0.3))):
        model = transformers.BertForSequenceClassification(_config(**kwargs))
        built[name] = (model, _save(model, root / name, vocabulary_file))
    return built


def token_inputs(batch=3, length=LENGTH, seed=1):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, len(VOCABULARY), (batch, length)).astype("int32")
    token_ids[:, 0], token_ids[:, length // 2] = 2, 3
    segment_ids = np.zeros_like(token_ids)
    segment_ids[:, length // 2 + 1:] = 1
    padding_mask = np.ones_like(token_ids)
    padding_mask[1, length - 3:] = 0
    token_ids[padding_mask == 0] = 0
    segment_ids[padding_mask == 0] = 0
    return {"token_ids": token_ids, "segment_ids": segment_ids,
            "padding_mask": padding_mask}


def run_hf(model, x):
    with torch.no_grad():
        return model(input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
                     token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long))


def close(actual, expected, where=None):
    actual, expected = np.asarray(actual), np.asarray(expected)
    if where is not None:
        actual, expected = actual[where], expected[where]
    np.testing.assert_allclose(actual, expected, atol=TOLERANCE, rtol=0)


def check_against_hf(model, reference):
    """kzoo's outputs on token ids equal transformers' (question answering:
    at the positions that can hold an answer, where kzoo does not mask)."""
    if isinstance(model, BertMultipleChoice):
        x = {k: v.reshape(2, 3, LENGTH) for k, v in token_inputs(6).items()}
        close(to_numpy(model(x)), run_hf(reference, x).logits.numpy())
        return
    x = token_inputs()
    ours, theirs = to_numpy(model(x)), run_hf(reference, x)
    if isinstance(model, BertQuestionAnswerer):
        allowed = to_numpy(model.answer_mask(x)).astype(bool)
        assert allowed.sum() > 6
        close(ours["start_logits"], theirs.start_logits.numpy(), allowed)
        close(ours["end_logits"], theirs.end_logits.numpy(), allowed)
    elif isinstance(model, BertTokenClassifier):
        close(ours, theirs.logits.numpy(), x["padding_mask"].astype(bool))
    else:
        close(ours, theirs.logits.numpy())


@pytest.mark.parametrize("architecture", list(TASKS))
def test_head_loads_with_its_class_and_its_shape(hf, architecture):
    reference, folder = hf[architecture]
    task_cls, shape = TASKS[architecture]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every tensor used, none missing
        model = task_cls.from_preset(str(folder))
        generic = shape.from_preset(str(folder))
    assert type(model) is task_cls and type(generic) is task_cls
    # No model_max_length in the folder: the class default, cut to the 64
    # positions of the checkpoint.
    assert model.preprocessor.sequence_length == 64
    check_against_hf(model, reference)
    check_against_hf(generic, reference)
    if "Classification" in architecture:
        assert model.label_names == tuple(LABELS.values())
        assert model.num_classes == 3
    if architecture != "BertForQuestionAnswering":
        assert model.dropout == pytest.approx(0.1)  # hidden_dropout_prob


def test_raw_text_through_each_tokenizer(hf):
    reference, folder = hf["BertForSequenceClassification"]
    model = BertClassifier.from_preset(str(folder), sequence_length=16)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    texts = ["The cat sat on the mat.", "John plays in Paris", "a big, red dog ran"]
    pairs = ["who is it?", "where?", "what ran"]

    def hf_logits(*segments):
        batch = hf_tokenizer(*segments, padding="max_length", max_length=16,
                             return_tensors="pt")
        with torch.no_grad():
            return reference(**batch).logits.numpy()

    close(model.predict(texts, verbose=0), hf_logits(texts))
    close(model.predict((texts, pairs), verbose=0), hf_logits(texts, pairs))
    expected = [LABELS[i] for i in hf_logits(texts).argmax(-1)]
    assert model.predict_labels(texts) == expected


@pytest.mark.parametrize("files", ["tokenizer.json", "vocab.txt"])
def test_tokenizer_from_either_file(hf, tmp_path, files):
    """transformers 5 writes tokenizer.json alone, older versions vocab.txt
    (and tokenizer_config.json) too: kzoo's tokenizer is transformers' on
    both."""
    _, folder = hf["BertForSequenceClassification"]
    target = tmp_path / "folder"
    shutil.copytree(folder, target)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(target)
    if files == "vocab.txt":
        (target / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
        (target / "tokenizer.json").unlink()
    tokenizer = HuggingFaceBertSource(target).load_tokenizer()
    for text in ["The Café in PARIS, who plays?", "johnplays sun-red", ""]:
        expected = hf_tokenizer(text, add_special_tokens=False)["input_ids"]
        assert [int(i) for i in to_numpy(tokenizer(text))] == expected, text


def test_question_answering_on_raw_text(hf):
    reference, folder = hf["BertForQuestionAnswering"]
    model = BertQuestionAnswerer.from_preset(str(folder), sequence_length=20)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    questions, contexts = ["who plays?", "where is it?"], ["John plays in Paris.",
                                                           "The red sun is in Paris."]
    x = model.preprocessor((questions, contexts))
    batch = hf_tokenizer(questions, contexts, padding="max_length", max_length=20,
                         return_tensors="pt")
    np.testing.assert_array_equal(to_numpy(x["token_ids"]), batch["input_ids"].numpy())
    ours = to_numpy(model(x))
    with torch.no_grad():
        theirs = reference(**batch)
    allowed = to_numpy(model.answer_mask(x)).astype(bool)
    close(ours["start_logits"], theirs.start_logits.numpy(), allowed)
    close(ours["end_logits"], theirs.end_logits.numpy(), allowed)


def test_regression_and_default_label_names(hf):
    reference, folder = hf["regression"]
    model = kzoo.models.TextClassifier.from_preset(str(folder))
    assert model.num_classes == 1 and model.is_regressor and model.label_names is None
    check_against_hf(model, reference)
    reference, folder = hf["default_labels"]
    model = BertClassifier.from_preset(str(folder))
    # transformers' LABEL_0, LABEL_1 are no names: predict_labels gives ids.
    assert model.num_classes == 2 and model.label_names is None
    assert model.dropout == pytest.approx(0.3)  # classifier_dropout
    check_against_hf(model, reference)
    # Other names than the checkpoint's (none) ask for a new head.
    with pytest.raises(PresetError, match="load_task_head=False"):
        BertClassifier.from_preset(str(folder), label_names=["no", "yes"])


def test_arguments_that_contradict_the_head(hf):
    _, folder = hf["BertForSequenceClassification"]
    with pytest.raises(PresetError, match=r"BertForSequenceClassification.*"
                       r"num_classes=3.*load_task_head=False"):
        BertClassifier.from_preset(str(folder), num_classes=5)
    # The same arguments as the checkpoint's are no contradiction.
    model = BertClassifier.from_preset(
        str(folder), num_classes=3, label_names=("negative", "neutral", "positive"))
    assert model.label_names == tuple(LABELS.values())
    # load_task_head=False: the backbone with a new head.
    with pytest.warns(UserWarning, match="trained head of a BertForSequenceClassification"):
        fresh = BertClassifier.from_preset(str(folder), num_classes=5,
                                           load_task_head=False)
    assert fresh.num_classes == 5 and fresh.label_names is None
    for ours, theirs in zip(fresh.backbone.weights, model.backbone.weights):
        np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


@pytest.mark.parametrize("asked", [BertTokenClassifier, kzoo.models.TokenClassifier,
                                   BertQuestionAnswerer, BertMultipleChoice])
def test_another_head_shape_is_refused(hf, asked):
    _, folder = hf["BertForSequenceClassification"]
    with pytest.raises(PresetError, match=r"fine-tuned BertForSequenceClassification"
                       r".*BertClassifier\.from_preset.*load_task_head=False"):
        asked.from_preset(str(folder))
    with pytest.warns(UserWarning, match="trained head"):
        fresh = asked.from_preset(
            str(folder), load_task_head=False,
            **({"num_classes": 4} if "Token" in asked.__name__ else {}))
    assert isinstance(fresh, (BertTokenClassifier, BertQuestionAnswerer,
                              BertMultipleChoice))


def test_tasks_without_a_head_of_their_own_load_the_backbone(hf):
    _, folder = hf["BertForSequenceClassification"]
    with pytest.warns(UserWarning, match=r"trained head of a "
                      r"BertForSequenceClassification \(classifier.bias, "
                      r"classifier.weight\).*BertClassifier.from_preset"):
        backbone = BertBackbone.from_preset(str(folder))
    classifier = BertClassifier.from_preset(str(folder))
    for ours, theirs in zip(backbone.weights, classifier.backbone.weights):
        np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))
    with pytest.warns(UserWarning, match="trained head"):
        embedder = BertTextEmbedder.from_preset(str(folder), sequence_length=8)
    assert tuple(embedder.predict(["the cat"], verbose=0).shape) == (1, 32)
    with pytest.warns(UserWarning) as record:
        kzoo.models.BertMaskedLM.from_preset(str(folder))
    messages = " | ".join(str(w.message) for w in record)
    assert "trained head" in messages and "no masked LM head" in messages


def _damaged(folder, tmp_path, change):
    target = tmp_path / "damaged"
    shutil.copytree(folder, target)
    tensors = safetensors_numpy.load_file(str(target / "model.safetensors"))
    change(tensors)
    safetensors_numpy.save_file(tensors, str(target / "model.safetensors"),
                                metadata={"format": "pt"})
    return target


@pytest.mark.parametrize("damage, named", [
    (lambda t: t.update({"classifier.weight": t["classifier.weight"][:, :-1]}),
     r"classifier.weight has shape \(3, 31\).*expects \(3, 32\)"),
    (lambda t: t.pop("classifier.bias"), "missing.*classifier.bias"),
    (lambda t: t.pop("bert.pooler.dense.bias"), "missing.*pooler.dense.bias"),
])
def test_a_damaged_head_loads_nothing(hf, tmp_path, damage, named):
    _, folder = hf["BertForSequenceClassification"]
    damaged = _damaged(folder, tmp_path, damage)
    with pytest.raises(PresetError, match=named):
        BertClassifier.from_preset(str(damaged))
    model = BertClassifier.from_preset(str(damaged), load_weights=False)
    before = [to_numpy(v).copy() for v in model.weights]
    with pytest.raises(PresetError, match="Nothing was loaded"):
        HuggingFaceBertSource(damaged).load_task_weights(model)
    for variable, value in zip(model.weights, before):
        np.testing.assert_array_equal(to_numpy(variable), value)


def test_label_names_that_cannot_name_classes(hf, tmp_path):
    _, folder = hf["BertForSequenceClassification"]
    target = tmp_path / "repeated"
    shutil.copytree(folder, target)
    config = json.loads((target / "config.json").read_text())
    config["id2label"] = {"0": "same", "1": "same", "2": "other"}
    (target / "config.json").write_text(json.dumps(config))
    with pytest.raises(PresetError, match="id2label.*repeats"):
        BertClassifier.from_preset(str(target))


# --- kzoo → Hugging Face → kzoo ---
def _backbone(seed):
    keras.utils.set_random_seed(seed)
    return BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=2, num_heads=2,
                        hidden_dim=8, intermediate_dim=16, max_sequence_length=16)


def _unnamed(config):
    """A config without the layers' names (a second object is ``_1``)."""
    if isinstance(config, dict):
        return {k: _unnamed(v) for k, v in config.items() if k != "name"}
    return config


def _spread(model, seed):
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(rng.normal(0, 0.3, variable.shape).astype("float32"))


@pytest.mark.parametrize("task_cls, preprocessor_cls, kwargs", [
    (BertClassifier, kzoo.models.BertClassifierPreprocessor,
     {"num_classes": 3, "label_names": ["a", "b", "c"], "dropout": 0.2}),
    (BertClassifier, kzoo.models.BertClassifierPreprocessor, {"num_classes": 1}),
    (BertTokenClassifier, kzoo.models.BertTokenClassifierPreprocessor,
     {"num_classes": 4, "label_names": ["O", "B-PER", "I-PER", "B-LOC"]}),
    (BertQuestionAnswerer, kzoo.models.BertQuestionAnswererPreprocessor, {}),
    (BertMultipleChoice, kzoo.models.BertMultipleChoicePreprocessor, {"dropout": 0.0}),
])
def test_kzoo_to_hugging_face_and_back(tmp_path, task_cls, preprocessor_cls, kwargs):
    preprocessor = preprocessor_cls(BertTokenizer(vocabulary=VOCABULARY),
                                    sequence_length=LENGTH)
    model = task_cls(_backbone(0), preprocessor=preprocessor, **kwargs)
    _spread(model, 1)
    path = kzoo.export.hugging_face(model, tmp_path / "hf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = task_cls.from_preset(path)
    assert type(again) is task_cls
    ours, theirs = _unnamed(model.get_config()), _unnamed(again.get_config())
    for config in (ours, theirs):
        del config["backbone"]
        # None follows lowercase: the folder reads as the effective value.
        tokenizer = config["preprocessor"]["config"]["tokenizer"]["config"]
        tokenizer["strip_accents"] = tokenizer["strip_accents"] in (True, None)
    assert theirs == ours  # the head's arguments and the preprocessor's
    text = ["Café Paris, the CAT!"]
    np.testing.assert_array_equal(to_numpy(again.preprocessor.tokenizer(text)),
                                  to_numpy(preprocessor.tokenizer(text)))
    x = token_inputs(length=LENGTH)
    if task_cls is BertMultipleChoice:
        x = {k: v.reshape(3, 1, LENGTH) for k, v in x.items()}
    keras.tree.map_structure(
        lambda a, b: np.testing.assert_allclose(a, b, atol=1e-5, rtol=0),
        to_numpy(again(x)), to_numpy(model(x)))
