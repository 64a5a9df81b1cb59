"""SavedModel export: strings in, named outputs out, served from a fresh process."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import kzoo
from kzoo.testing import to_numpy
from tests.models.bert.bert_classifier_test import TEXTS, tiny_classifier

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_SERVE = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the tokenizer's ops)
loaded = tf.saved_model.load(sys.argv[1])
fn = loaded.signatures["serving_default"]
inputs = {k: tf.constant(v) for k, v in json.loads(sys.argv[2]).items()}
print(json.dumps({
    "inputs": sorted(fn.structured_input_signature[1]),
    "outputs": {k: v.numpy().tolist() for k, v in fn(**inputs).items()},
}))
"""


def _serve(path, inputs):
    result = subprocess.run(
        [sys.executable, "-c", _SERVE, str(path), json.dumps(inputs)],
        capture_output=True, text=True, cwd=ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_single_text_classifier_exports_and_serves(tmp_path):
    model = tiny_classifier()
    model.fit(TEXTS, np.arange(len(TEXTS)) % 2, epochs=1, verbose=0)
    path = kzoo.export.saved_model(model, tmp_path / "served")
    served = _serve(path, {"text": TEXTS})
    assert served["inputs"] == ["text"]
    expected = to_numpy(model.predict(TEXTS, verbose=0))
    np.testing.assert_allclose(served["outputs"]["logits"], expected, atol=1e-5)
    probabilities = np.asarray(served["outputs"]["probabilities"])
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-6)

    # saved_model_cli can run it too, once the tf-text ops are registered
    # (the folder is TensorFlow's on every backend: checked once).
    if keras.config.backend() != "tensorflow":
        return
    cli = ("import sys, tensorflow_text; "
           "from tensorflow.python.tools import saved_model_cli; "
           "sys.argv = ['saved_model_cli'] + sys.argv[1:]; saved_model_cli.main()")
    result = subprocess.run(
        [sys.executable, "-c", cli, "run", "--dir", str(path), "--tag_set",
         "serve", "--signature_def", "serving_default",
         "--input_exprs", "text=['a good film', '']"],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "probabilities" in result.stdout and "logits" in result.stdout


@pytest.mark.large  # a second export + serve round: ~1 min on jax / torch
def test_pair_classifier_exports_two_string_inputs(tmp_path):
    model = tiny_classifier(num_classes=3, num_segments=2)
    first, second = TEXTS[:3], TEXTS[3:6]
    path = kzoo.export.saved_model(model, tmp_path / "pairs")
    served = _serve(path, {"text": first, "text_pair": second})
    assert served["inputs"] == ["text", "text_pair"]
    expected = to_numpy(model.predict((first, second), verbose=0))
    np.testing.assert_allclose(served["outputs"]["logits"], expected, atol=1e-5)


def test_export_needs_a_preprocessor(tmp_path):
    model = tiny_classifier()
    model.preprocessor = None
    with pytest.raises(ValueError, match="needs the task's preprocessor"):
        kzoo.export.saved_model(model, tmp_path / "x")
    with pytest.raises(TypeError, match="must be a kzoo Task"):
        kzoo.export.saved_model(object(), tmp_path / "x")
