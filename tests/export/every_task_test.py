"""Every task serves from strings: exported in TF Serving's ``<base>/<version>``
layout and called from a fresh process through ``PredictRequest`` protos.

The fresh process does what the model server does with a request, without
the server binary (which cannot be had here): it picks the highest version
under the base path, parses a serialized ``tensorflow_serving.apis``
``PredictRequest``, checks its input names and dtypes against the
signature, feeds ``tf.make_ndarray`` of each input tensor to the signature
and sends the outputs back as a serialized ``PredictResponse``.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import kzoo
from kzoo.export.saved_model import _serving_object
from kzoo.models.bert.bert_masked_lm import BertMaskedLM
from kzoo.models.word2vec.word2vec_skip_gram import Word2VecSkipGram
from kzoo.testing import to_numpy
from tests.models.bert import bert_masked_lm_test as masked_lm
from tests.models.bert import bert_multiple_choice_test as multiple_choice
from tests.models.bert import bert_question_answerer_test as question_answerer
from tests.models.bert import bert_token_classifier_test as token_classifier
from tests.models.gpt import gpt_classifier_test as gpt_classifier

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_SERVE = r"""
import json, os, sys
import tensorflow as tf
import numpy as np
import tensorflow_text  # noqa: F401  (the tokenizers' ops)
from tensorflow_serving.apis import predict_pb2

def plain(array):
    if array.dtype == object:
        array = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(array)
    return array.tolist()

def serve(base, requests):
    version = max(int(v) for v in os.listdir(base) if v.isdigit())
    loaded = tf.saved_model.load(os.path.join(base, str(version)))
    results = {"version": version}
    for signature_name, inputs in requests.items():
        request = predict_pb2.PredictRequest()
        request.model_spec.name = "kzoo"
        request.model_spec.signature_name = signature_name
        for name, values in inputs.items():
            request.inputs[name].CopyFrom(tf.make_tensor_proto(values, dtype=tf.string))
        request = predict_pb2.PredictRequest.FromString(request.SerializeToString())
        fn = loaded.signatures[request.model_spec.signature_name]
        spec = fn.structured_input_signature[1]
        assert sorted(spec) == sorted(request.inputs), (sorted(spec), sorted(request.inputs))
        feeds = {}
        for name, proto in request.inputs.items():
            assert proto.dtype == spec[name].dtype.as_datatype_enum, name
            feeds[name] = tf.constant(tf.make_ndarray(proto))
        response = predict_pb2.PredictResponse()
        response.model_spec.CopyFrom(request.model_spec)
        for name, value in fn(**feeds).items():
            response.outputs[name].CopyFrom(tf.make_tensor_proto(value.numpy()))
        response = predict_pb2.PredictResponse.FromString(response.SerializeToString())
        results[signature_name] = {
            name: plain(tf.make_ndarray(proto)) for name, proto in response.outputs.items()}
    return results

models = json.loads(sys.argv[1])
print(json.dumps({name: serve(base, requests) for name, (base, requests) in models.items()}))
"""


def serve(models):
    """``{name: (base path, {signature: {input: strings}})}`` →
    ``{name: {"version": served, signature: {output: list}}}``, all in one
    fresh process (as one model server serves several models)."""
    result = subprocess.run(
        [sys.executable, "-c", _SERVE, json.dumps(
            {name: (str(base), requests) for name, (base, requests) in models.items()})],
        capture_output=True, text=True, cwd=ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# Each case: the task, its serving requests, and what Keras itself computes
# for them on the current backend.
def token_classifier_case():
    model = token_classifier.tiny_model()
    texts = ["John plays in Paris", "She lives in New York", ""]
    logits = to_numpy(model.predict_on_batch(model.preprocessor(texts)))
    return model, {"serving_default": {"text": texts}}, {"serving_default": {
        "logits": logits, "predictions": logits.argmax(-1)}}


def multiple_choice_case():
    model = multiple_choice.tiny_model(num_choices=3)
    multiple_choice.spread_weights(model)
    contexts, endings = multiple_choice.CONTEXTS, multiple_choice.ENDINGS
    logits = to_numpy(model.predict_on_batch(model.preprocessor((contexts, endings))))
    inputs = {"context": contexts}
    inputs.update({f"ending_{i}": [e[i] for e in endings] for i in range(3)})
    return model, {"serving_default": inputs}, {"serving_default": {"logits": logits}}


def masked_lm_case():
    keras.utils.set_random_seed(0)
    model = BertMaskedLM(masked_lm._backbone(1), preprocessor=masked_lm._preprocessor())
    texts = ["the [MASK] sat on the [MASK]", "a dog ran", "[MASK] big dog"]
    x, weights = model.preprocessor.fill_mask_inputs(texts)
    logits = to_numpy(model.predict_on_batch(x))
    top = [[m[0]["token"] for m in row] for row in model.fill_mask(texts, top_k=1)]
    return model, {"serving_default": {"text": texts}}, {"serving_default": {
        "logits": logits, "mask_positions": to_numpy(x["mask_positions"]),
        "mask_weights": to_numpy(weights), "predicted_tokens": top}}


def gpt_classifier_case():
    backbone, tokenizer = gpt_classifier._parts()
    model = kzoo.models.GPTClassifier(
        backbone, num_classes=3, preprocessor=kzoo.models.GPTClassifierPreprocessor(
            tokenizer, sequence_length=16))
    texts = ["the cat sat on the mat", "a dog", ""]
    logits = to_numpy(model.predict(texts, verbose=0))
    return model, {"serving_default": {"text": texts}}, {"serving_default": {
        "logits": logits}}


def gpt_similarity_case():
    """GPT-1's similarity: each pair read in both orders inside the graph."""
    backbone, tokenizer = gpt_classifier._parts()
    model = kzoo.models.GPTClassifier(
        backbone, num_classes=2, symmetric=True, label_names=["different", "same"],
        preprocessor=kzoo.models.GPTClassifierPreprocessor(
            tokenizer, sequence_length=17, num_segments=2, symmetric=True))
    first = ["the cat sat on the mat", "a dog", ""]
    second = ["a cat and a dog sat on the log, the end", "the cat is not", "a"]
    logits = to_numpy(model.predict((first, second), verbose=0))
    return model, {"serving_default": {"text": first, "text_pair": second}}, {
        "serving_default": {"logits": logits, "probabilities": _softmax(logits),
                            "labels": [model.label_names[i] for i in logits.argmax(-1)]}}


def gpt_multiple_choice_case():
    backbone, tokenizer = gpt_classifier._parts()
    model = kzoo.models.GPTMultipleChoice(
        backbone, preprocessor=kzoo.models.GPTMultipleChoicePreprocessor(
            tokenizer, sequence_length=16, num_choices=3))
    contexts = ["the cat", "a dog sat", ""]
    endings = [["sat on the mat", "is not a dog", "ran"],
               ["on a log", "", "the cat is not"],
               ["a cat", "the dog", "sat"]]
    logits = to_numpy(model.predict((contexts, endings), verbose=0))
    inputs = {"context": contexts}
    inputs.update({f"ending_{i}": [e[i] for e in endings] for i in range(3)})
    return model, {"serving_default": inputs}, {"serving_default": {
        "logits": logits, "probabilities": _softmax(logits)}}


def _softmax(logits):
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


def question_answerer_case():
    model = question_answerer.tiny_model()
    questions, contexts = question_answerer.inputs()
    expected = to_numpy(model.predict_on_batch(model.preprocessor((questions, contexts))))
    return model, {"serving_default": {"question": questions, "context": contexts}}, {
        "serving_default": expected}


def word_vectors_case():
    corpus = ["the cat sat on the mat", "the dog sat on the log",
              "a cat and a dog"] * 5
    model = Word2VecSkipGram.from_corpus(corpus, hidden_dim=4, min_count=1,
                                         lowercase=True, seed=1)
    model.fit(corpus, epochs=1, batch_size=16, verbose=0)
    wv = model.word_vectors()
    words = ["cat", "DOG", "unicorn"]  # the export lowercases, as training did
    vectors = np.stack([wv["cat"], wv["dog"], np.zeros(4, np.float32)])
    neighbours = [[w for w, _ in wv.most_similar(word, topn=3)] for word in ("cat", "dog")]
    return model, {"serving_default": {"words": words},
                   "most_similar": {"words": words[:2]}}, {
        "serving_default": {"vectors": vectors, "found": [True, True, False]},
        "most_similar": {"neighbours": neighbours}}


CASES = {f.__name__[:-len("_case")]: f for f in (
    token_classifier_case, multiple_choice_case, masked_lm_case,
    gpt_classifier_case, gpt_similarity_case, gpt_multiple_choice_case,
    question_answerer_case, word_vectors_case)}


# Three groups (one per test worker), each served from one fresh process.
GROUPS = [["token_classifier", "multiple_choice", "masked_lm"],
          ["gpt_classifier", "question_answerer", "word_vectors"],
          ["gpt_similarity", "gpt_multiple_choice"]]


def test_the_groups_hold_every_case():
    assert sorted(sum(GROUPS, [])) == sorted(CASES)


@pytest.mark.parametrize("names", GROUPS, ids=["+".join(g) for g in GROUPS])
def test_tasks_serve_from_strings_in_tf_serving_layout(names, tmp_path):
    models, expectations, tasks = {}, {}, {}
    for name in names:
        model, requests, expectations[name] = CASES[name]()
        base = tmp_path / "models" / name
        tasks[base] = model
        models[name] = (base, requests)
    # One export for the group: on JAX and torch, one TensorFlow subprocess.
    written = kzoo.export.saved_models(tasks, version=1)
    assert written == [str(base / "1") for base in tasks]
    for base in tasks:
        assert os.path.isfile(base / "1" / "saved_model.pb")
    served = serve(models)
    for name in names:
        assert served[name]["version"] == 1
        _check(served[name], expectations[name], name)
    # Every signature has its warmup requests, as the model server replays them.
    for base, model in tasks.items():
        warmed = _warmup_signatures(base / "1")
        assert warmed == sorted(_serving_object(model).serving_endpoints()), base.name


def _warmup_signatures(path):
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    from kzoo.export.serving_warmup import WARMUP_FILE

    signatures = set()
    for record in tf.data.TFRecordDataset(str(path / WARMUP_FILE)):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        kind = log.WhichOneof("log_type")
        signatures.add(getattr(log, kind).request.model_spec.signature_name)
    return sorted(signatures)


def _check(served, expected, name):
    for signature, outputs in expected.items():
        for output, value in outputs.items():
            got = served[signature][output]
            if output == "neighbours":  # the export's top 10, gensim's top 3
                got = [row[:3] for row in got]
            if output == "predicted_tokens":  # at the real masks only
                got = [[t for t, w in zip(row, weights) if w] for row, weights
                       in zip(got, served[signature]["mask_weights"])]
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                np.testing.assert_allclose(got, value, atol=1e-5,
                                           err_msg=f"{name}: {output}")
            else:
                value = value.tolist() if isinstance(value, np.ndarray) else value
                assert got == value, f"{name}: {output}"


def test_versions_sit_side_by_side_and_bad_versions_are_refused(tmp_path):
    wv = kzoo.models.WordVectors(np.eye(3, dtype=np.float32), ["a", "b", "c"])
    for version in (1, 2):
        kzoo.export.saved_model(wv, tmp_path / "base", version=version)
    assert sorted(os.listdir(tmp_path / "base")) == ["1", "2"]
    for bad in (-1, "2", 1.0, True):
        with pytest.raises(ValueError, match="non-negative int"):
            kzoo.export.saved_model(wv, tmp_path / "base", version=bad)
    assert sorted(os.listdir(tmp_path / "base")) == ["1", "2"]
    with pytest.raises(ValueError, match="no word vectors"):
        kzoo.export.saved_model(kzoo.models.WordVectors(
            np.zeros((0, 2), np.float32), []), tmp_path / "empty")


def test_saved_models_refuses_bad_input_before_writing_anything(tmp_path):
    wv = kzoo.models.WordVectors(np.eye(3, dtype=np.float32), ["a", "b", "c"])
    for bad in ({}, [wv], None):
        with pytest.raises(ValueError, match="non-empty dict"):
            kzoo.export.saved_models(bad)
    with pytest.raises(ValueError, match="same folder"):
        kzoo.export.saved_models({tmp_path / "a": wv, str(tmp_path / "a"): wv})
    with pytest.raises(TypeError, match="serving_endpoints"):
        kzoo.export.saved_models({tmp_path / "b": wv, tmp_path / "c": object()})
    assert not os.path.exists(tmp_path / "b")
    written = kzoo.export.saved_models({tmp_path / "b": wv, tmp_path / "c": wv},
                                       version=3)
    assert written == [str(tmp_path / "b" / "3"), str(tmp_path / "c" / "3")]
    assert all(os.path.isfile(os.path.join(p, "saved_model.pb")) for p in written)
