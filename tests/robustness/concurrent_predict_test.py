"""Many threads calling ``predict`` on one task get the serial answers."""

import threading

import numpy as np
import pytest

from kzoo.models.bert.bert_text_embedder import BertTextEmbedder
from kzoo.testing import to_numpy
from tests.models.bert.bert_classifier_test import tiny_classifier

THREADS = 8
REQUESTS_PER_THREAD = 2


def mixed_requests(count, seed=0, long_words=40):
    """Texts of mixed lengths: empty, one word, a sentence, and past the
    sequence length."""
    words = "the a movie film was good bad great awful and very not".split()
    rng = np.random.default_rng(seed)
    shapes = ["", "good", None, " ".join(["film"] * long_words)]
    texts = []
    for i in range(count):
        text = shapes[i % len(shapes)]
        if text is None:
            text = " ".join(rng.choice(words, size=rng.integers(2, 8)))
        texts.append(text)
    return texts


def serve_concurrently(answer, requests, threads=THREADS):
    """Calls ``answer(text)`` for every request from ``threads`` threads;
    returns the answers in request order and the errors raised."""
    answers = [None] * len(requests)
    errors = []
    start = threading.Barrier(threads)

    def worker(offset):
        start.wait()
        for i in range(offset, len(requests), threads):
            try:
                answers[i] = answer(requests[i])
            except Exception as exc:  # noqa: BLE001 — collected for the assert
                errors.append(exc)

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return answers, errors


@pytest.fixture(scope="module")
def embedder():
    classifier = tiny_classifier()
    return BertTextEmbedder(classifier.backbone, classifier.preprocessor)


def test_threads_predict_preprocessed_requests_as_serial(embedder):
    """The variables' swap in and out during Keras' JAX ``predict`` is what
    raced: tensors (no tokenizer) make many requests cheap."""
    requests = [embedder.preprocessor([text])
                for text in mixed_requests(THREADS * REQUESTS_PER_THREAD)]
    serial = [to_numpy(embedder.predict(x, verbose=0)) for x in requests]
    answers, errors = serve_concurrently(
        lambda x: to_numpy(embedder.predict(x, verbose=0)), requests)
    assert not errors, f"{len(errors)} requests failed, first: {errors[0]!r}"
    for i, (got, want) in enumerate(zip(answers, serial)):
        np.testing.assert_allclose(got, want, atol=1e-6, err_msg=f"request {i}")


@pytest.mark.large  # on TensorFlow each raw `predict` builds a tf.data pipeline: ~1 s
def test_threads_predict_raw_text_as_serial(embedder):
    """A new user's call: raw strings, one thread per request."""
    requests = mixed_requests(THREADS)
    serial = to_numpy(embedder.predict(requests, verbose=0))
    answers, errors = serve_concurrently(
        lambda text: to_numpy(embedder.predict([text], verbose=0)), requests)
    assert not errors, f"{len(errors)} requests failed, first: {errors[0]!r}"
    np.testing.assert_allclose(np.concatenate(answers), serial, atol=1e-5)
