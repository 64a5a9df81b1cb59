"""TF Serving's full contract: warmup requests and the Classify API.

A fresh process does what the model server does, without the server binary
(which cannot be had here): at load it reads
``assets.extra/tf_serving_warmup_requests`` as a TFRecord of
``PredictionLog`` protos and replays each request against the signature it
names; then it answers a serialized ``ClassificationRequest`` as TF
Serving's classifier does (``classifier.cc``): the signature must have the
method name ``tensorflow/serving/classify``, the request's examples go in
serialized into its ``inputs`` tensor, and ``classes`` (strings) and
``scores`` (floats, ``[num_examples, num_classes]``) come back as one
``Classifications`` entry per example.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kzoo
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.testing import to_numpy

pytest.importorskip("tensorflow_serving")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat",
              "on", "mat", "a", "dog", "ran", "##s", "big"]
LENGTH = 10

_SERVE = r"""
import json, os, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the tokenizers' ops)
from tensorflow_serving.apis import classification_pb2, prediction_log_pb2

CLASSIFY = "tensorflow/serving/classify"

def signature_methods(path):
    from tensorflow.core.protobuf import saved_model_pb2
    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString(open(os.path.join(path, "saved_model.pb"), "rb").read())
    return {k: v.method_name for k, v in saved.meta_graphs[0].signature_def.items()}

def classify(loaded, methods, request):
    # TF Serving's classifier: a classify signature, serialized examples in
    # `inputs`, `classes` and `scores` out, one Classifications per example.
    name = request.model_spec.signature_name or "serving_default"
    assert methods[name] == CLASSIFY, (name, methods[name])
    fn = loaded.signatures[name]
    assert list(fn.structured_input_signature[1]) == ["inputs"]
    examples = [e.SerializeToString() for e in request.input.example_list.examples]
    out = fn(inputs=tf.constant(examples, dtype=tf.string))
    scores, classes = out["scores"].numpy(), out["classes"].numpy()
    assert scores.dtype == np.float32 and scores.shape[0] == len(examples)
    assert classes.shape == scores.shape
    response = classification_pb2.ClassificationResponse()
    response.model_spec.CopyFrom(request.model_spec)
    for row_classes, row_scores in zip(classes, scores):
        result = response.result.classifications.add()
        for label, score in zip(row_classes, row_scores):
            result.classes.add(label=label.decode("utf-8"), score=float(score))
    return classification_pb2.ClassificationResponse.FromString(
        response.SerializeToString())

def predict(loaded, request):
    fn = loaded.signatures[request.model_spec.signature_name or "serving_default"]
    spec = fn.structured_input_signature[1]
    assert sorted(spec) == sorted(request.inputs)
    return fn(**{k: tf.constant(tf.make_ndarray(v)) for k, v in request.inputs.items()})

def serve(path, examples):
    loaded = tf.saved_model.load(path)
    methods = signature_methods(path)
    warmup = os.path.join(path, "assets.extra", "tf_serving_warmup_requests")
    replayed = []
    for record in tf.data.TFRecordDataset(warmup):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        kind = log.WhichOneof("log_type")
        if kind == "classify_log":
            classify(loaded, methods, log.classify_log.request)
            name = log.classify_log.request.model_spec.signature_name
        else:
            assert kind == "predict_log", kind
            predict(loaded, log.predict_log.request)
            name = log.predict_log.request.model_spec.signature_name
        replayed.append([kind, name])
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = "kzoo"
    request.model_spec.signature_name = "classify"
    for features in examples:
        example = request.input.example_list.examples.add()
        for key, text in features.items():
            example.features.feature[key].bytes_list.value.append(text.encode("utf-8"))
    request = classification_pb2.ClassificationRequest.FromString(
        request.SerializeToString())
    response = classify(loaded, methods, request)
    return {"methods": methods, "replayed": replayed,
            "classifications": [[[c.label, c.score] for c in r.classes]
                                for r in response.result.classifications]}

models = json.loads(sys.argv[1])
print(json.dumps({name: serve(path, examples) for name, (path, examples) in models.items()}))
"""


def serve(models):
    """``{name: (SavedModel path, examples)}`` → what the fresh process
    saw and answered for each, all in one process (one model server)."""
    result = subprocess.run(
        [sys.executable, "-c", _SERVE, json.dumps(
            {name: (str(path), examples) for name, (path, examples) in models.items()})],
        capture_output=True, text=True, cwd=ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def classifier(pairs, label_names=None):
    import keras

    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2,
                            hidden_dim=8, intermediate_dim=16, max_sequence_length=LENGTH)
    preprocessor = kzoo.models.BertClassifierPreprocessor(
        BertTokenizer(vocabulary=VOCABULARY), sequence_length=LENGTH,
        num_segments=2 if pairs else 1)
    model = kzoo.models.BertClassifier(backbone, 3, preprocessor=preprocessor,
                                       label_names=label_names)
    rng = np.random.default_rng(0)
    for variable in model.weights:
        variable.assign(rng.normal(0, 0.5, variable.shape).astype("float32"))
    return model


TEXTS = ["the cat sat on the mat", "a big dog ran", ""]
OTHERS = ["a dog", "the cats", "mat"]
CASES = {"single": (False, ["neg", "neu", "pos"]), "pairs": (True, None)}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Each case exported, then served from one fresh process; with what
    kzoo computes for the examples on the current backend."""
    models, expected, tasks = {}, {}, {}
    for name, (pairs, names) in CASES.items():
        model = classifier(pairs, names)
        x = (TEXTS, OTHERS) if pairs else TEXTS
        expected[name] = keras_softmax(to_numpy(model.predict(x, verbose=0)))
        tasks[tmp_path_factory.mktemp(name) / "model"] = model
    # Both in one export (one TensorFlow subprocess on JAX and torch).
    paths = kzoo.export.saved_models(tasks)
    for (name, (pairs, _)), path in zip(CASES.items(), paths):
        models[name] = (path, [{"text": t, **({"text_pair": o} if pairs else {})}
                               for t, o in zip(TEXTS, OTHERS)])
    return serve(models), expected


@pytest.mark.parametrize("case", sorted(CASES))
def test_warmup_replays_and_classify_answers(served, case):
    result, probabilities = served[0][case], served[1][case]
    assert result["methods"]["classify"] == "tensorflow/serving/classify"
    assert result["methods"]["serving_default"] == "tensorflow/serving/predict"
    # Three warmup requests of each signature, every one replayed.
    assert sorted(map(tuple, result["replayed"])) == sorted(
        [("predict_log", "serving_default")] * 3 + [("classify_log", "classify")] * 3)
    expected = CASES[case][1] or ["0", "1", "2"]
    assert len(result["classifications"]) == len(TEXTS)
    for row, scores in zip(result["classifications"], probabilities):
        assert [label for label, _ in row] == expected
        np.testing.assert_allclose([score for _, score in row], scores, atol=1e-5)


def keras_softmax(logits):
    logits = np.asarray(logits, dtype="float64")
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def test_serving_default_names_labels_and_regressors_have_no_classify(tmp_path):
    model = classifier(False, ["neg", "neu", "pos"])
    endpoints = model.serving_endpoints()
    assert sorted(endpoints) == ["classify", "serving_default"]
    assert model.serving_method_names() == {"classify": "tensorflow/serving/classify"}
    regressor = kzoo.models.BertClassifier(model.backbone, 1,
                                           preprocessor=model.preprocessor)
    assert sorted(regressor.serving_endpoints()) == ["serving_default"]
    assert regressor.serving_method_names() == {}


def read_warmup(path):
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    file = os.path.join(path, "assets.extra", "tf_serving_warmup_requests")
    return [prediction_log_pb2.PredictionLog.FromString(record.numpy())
            for record in tf.data.TFRecordDataset(file)]


def test_word_table_gets_the_default_warmup_requests(tmp_path):
    import tensorflow as tf

    table = kzoo.models.WordVectors(np.eye(3, dtype="float32"), ["a", "b", "c"])
    path = kzoo.export.saved_model(table, tmp_path / "words")
    logs = read_warmup(path)
    by_signature = {}
    for log in logs:
        request = log.predict_log.request
        words = tf.make_ndarray(request.inputs["words"]).tolist()
        by_signature.setdefault(request.model_spec.signature_name, []).append(words)
    from kzoo.export.serving_warmup import WARMUP_TEXTS

    texts = [[t.encode("utf-8")] for t in WARMUP_TEXTS]
    assert by_signature == {"serving_default": texts, "most_similar": texts}


def test_a_guessed_request_the_model_fails_on_is_left_out(tmp_path, caplog):
    import tensorflow as tf

    from kzoo.export import serving_warmup

    def non_empty(text):
        tf.debugging.assert_greater(tf.strings.length(text), 0, message="empty text")
        return {"length": tf.strings.length(text)}

    spec = tf.TensorSpec([None], tf.string, name="text")
    function = tf.function(non_empty, input_signature=[spec]).get_concrete_function()
    requests = {"serving_default": serving_warmup.default_warmup_inputs([spec])}
    with caplog.at_level("WARNING"):
        written = serving_warmup.write_warmup_requests(
            tmp_path, {"serving_default": function}, requests,
            defaults={"serving_default"})
    assert written == 2 and "empty text" in caplog.text
    assert [tf.make_ndarray(log.predict_log.request.inputs["text"]).tolist()
            for log in read_warmup(tmp_path)] == [[b"hello"], [
                serving_warmup.WARMUP_TEXTS[2].encode("utf-8")]]
    # A request the object gave itself must run.
    with pytest.raises(tf.errors.InvalidArgumentError, match="empty text"):
        serving_warmup.write_warmup_requests(
            tmp_path, {"serving_default": function}, requests)
