"""GPTCausalLM SavedModel: token ids → next-token logits, and text → generated text."""

import json
import os
import subprocess
import sys

import numpy as np

import kzoo
from kzoo.testing import to_numpy
from tests.models.gpt.gpt_causal_lm_test import _lm

_SERVE = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the tokenizer's ops)
loaded = tf.saved_model.load(sys.argv[1])
fn = loaded.signatures["serving_default"]
data = json.loads(sys.argv[2])
inputs = {k: tf.constant(data[k], tf.int32) for k in ("token_ids", "padding_mask")}
result = {k: v.numpy().tolist() for k, v in fn(**inputs).items()}
generated = loaded.signatures["generate"](text=tf.constant(data["text"]))["generated"]
result["generated"] = [t.decode("utf-8", "replace") for t in generated.numpy().tolist()]
print(json.dumps(result))
"""


PROMPTS = ["the cat", "a", "", "the mat and the log and"]


def test_causal_lm_exports_next_token_logits_and_generation(tmp_path):
    lm = _lm()
    ids = np.array([[0, 5, 9, 12, 3, 0], [0, 7, 2, 0, 0, 0]], "int32")
    mask = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]], "int32")
    path = kzoo.export.saved_model(lm, tmp_path / "served")
    result = subprocess.run(
        [sys.executable, "-c", _SERVE, str(path),
         json.dumps({"token_ids": ids.tolist(), "padding_mask": mask.tolist(),
                     "text": PROMPTS})],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-3000:]
    served = json.loads(result.stdout.strip().splitlines()[-1])
    logits = to_numpy(lm.predict_on_batch({"token_ids": ids, "padding_mask": mask}))
    np.testing.assert_allclose(served["logits"], logits, atol=1e-5)
    np.testing.assert_allclose(served["next_token_logits"],
                               logits[[0, 1], [4, 2]], atol=1e-5)
    # The served next token is what greedy generation picks.
    first = lm.generate_token_ids([ids[1, :3].tolist()], max_length=4,
                                  stop_token_ids=None)[0][3]
    assert int(np.argmax(served["next_token_logits"][1])) == first
    # Strings in, strings out: greedy generation inside the graph.
    assert served["generated"] == lm.generate(PROMPTS, max_length=12)
