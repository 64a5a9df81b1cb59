"""Which pipeline a task's ``fit`` / ``evaluate`` / ``predict`` builds for raw
in-memory text, and that both give the same answers."""

import numpy as np
import pytest

from kzoo.models.task import Task
from kzoo.preprocessing import engine
from kzoo.preprocessing.batches import PreprocessedBatches
from kzoo.testing import assert_allclose
from tests.models.bert.bert_classifier_test import LABELS, TEXTS, tiny_classifier

tf = pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def model():
    return tiny_classifier()


@pytest.fixture
def pipelines(monkeypatch):
    """The pipelines built, in order: ``"tf.data"`` for each
    ``tf.data.Dataset.from_tensor_slices`` call, ``"python"`` for each
    ``PreprocessedBatches``; no engine chosen by the environment."""
    monkeypatch.delenv("KZOO_PREPROCESSING", raising=False)
    monkeypatch.setitem(engine._DEFAULT, "engine", None)
    built = []
    slices = tf.data.Dataset.from_tensor_slices

    def from_tensor_slices(*args, **kwargs):
        built.append("tf.data")
        return slices(*args, **kwargs)

    monkeypatch.setattr(tf.data.Dataset, "from_tensor_slices",
                        staticmethod(from_tensor_slices))
    make = Task._preprocess_dataset

    def preprocess_dataset(self, *args, **kwargs):
        data = make(self, *args, **kwargs)
        if isinstance(data, PreprocessedBatches):
            built.append("python")
        return data

    monkeypatch.setattr(Task, "_preprocess_dataset", preprocess_dataset)
    return built


def _calls(model):
    return {
        "predict": lambda: model.predict(TEXTS, batch_size=4, verbose=0),
        "evaluate": lambda: model.evaluate(TEXTS, LABELS, batch_size=4, verbose=0),
        "fit": lambda: model.fit(TEXTS, LABELS, batch_size=4, epochs=1, verbose=0),
    }


@pytest.mark.backends("jax", "torch")
@pytest.mark.parametrize("call", ["predict", "evaluate", "fit"])
def test_raw_text_on_jax_and_torch_builds_no_tf_data_pipeline(model, pipelines, call):
    _calls(model)[call]()
    assert pipelines == ["python"]


@pytest.mark.backends("jax", "torch")
def test_more_examples_than_the_limit_go_through_tf_data(model, pipelines, monkeypatch):
    monkeypatch.setattr(engine, "PYTHON_DATA_LIMIT", len(TEXTS) - 1)
    model.predict(TEXTS, verbose=0)
    model.predict(TEXTS[:-1], verbose=0)
    assert pipelines == ["tf.data", "python"]


@pytest.mark.backends("tensorflow")
def test_raw_text_on_tensorflow_goes_through_tf_data(model, pipelines):
    _calls(model)["predict"]()
    assert pipelines == ["tf.data"]


@pytest.mark.parametrize("chosen", ["python", "tensorflow"])
def test_a_chosen_engine_decides_the_pipeline(model, pipelines, monkeypatch, chosen):
    want = "python" if chosen == "python" else "tf.data"
    with engine.engine_scope(chosen):
        model.predict(TEXTS, verbose=0)
    engine.set_engine(chosen)
    try:
        model.predict(TEXTS, verbose=0)
    finally:
        engine.set_engine(None)
    monkeypatch.setenv("KZOO_PREPROCESSING", chosen)
    model.predict(TEXTS, verbose=0)
    assert pipelines == [want] * 3


def test_both_pipelines_give_the_same_answers(model):
    texts = TEXTS + ["good", "", "a good film " * 30, "the plot"]
    labels = np.concatenate([LABELS, [1, 0, 1, 0]])
    answers = {}
    for name in engine.ENGINES:
        with engine.engine_scope(name):
            answers[name] = (model.predict(texts, verbose=0),
                             model.evaluate(texts, labels, verbose=0))
    for got, want in zip(answers["python"], answers["tensorflow"]):
        assert_allclose(got, want, atol=1e-6)
