"""Every task fits and predicts on raw strings without TensorFlow, with the
numbers of the same program on TensorFlow's preprocessing."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from kzoo.testing import assert_allclose, check_without_tensorflow

SCRIPT = Path(__file__).with_name("every_task.py")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.without_tensorflow, pytest.mark.backends("jax", "torch")]


def _results(stdout):
    line = [l for l in stdout.splitlines() if l.startswith("RESULTS ")][-1]
    return json.loads(line[len("RESULTS "):])


def test_every_task_without_tensorflow_equals_tensorflow_preprocessing():
    code = f"exec(compile(open({str(SCRIPT)!r}).read(), 'every_task.py', 'exec'))"
    without = _results(check_without_tensorflow(code, cwd=ROOT, timeout=1800))
    assert not without["tensorflow_imported"]
    assert without["masked_lm_loss_finite"]
    assert np.asarray(without["multiple_choice_predict"]).shape == (4, 3)
    assert np.asarray(without["token_classifier_predict"]).shape == (4, 12, 3)
    for answer, context in zip(without["answers"], ["Le cafe est a Paris.",
                                                   "the cat sat on the mat.",
                                                   "the cat ran.", "a dog sat on a log."]):
        assert context[answer["start"]:answer["end"]] == answer["text"]
    assert len(without["fill_mask"][0][0]) == 2
    if importlib.util.find_spec("tensorflow") is None:
        return
    env = dict(os.environ, KZOO_PREPROCESSING="tensorflow",
               KERAS_BACKEND=keras.config.backend())
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    with_tf = _results(done.stdout)
    for key, value in with_tf.items():
        if key in ("tensorflow_imported", "fill_mask"):
            continue
        if isinstance(value, (list, float)) and key != "answers":
            assert_allclose(without[key], value, atol=1e-5, rtol=1e-5, msg=key)
        else:
            assert without[key] == value, key
    # The masked LM trained on other random masks: only its shape compares.
    assert [len(r) for r in without["fill_mask"][0]] == [
        len(r) for r in with_tf["fill_mask"][0]]
