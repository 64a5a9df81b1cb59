"""Which engine preprocesses a task's in-memory raw data (``data_engine``)."""

import os
import subprocess
import sys
import types

import keras
import pytest

from kzoo.preprocessing import engine

pytestmark = pytest.mark.without_tensorflow


@pytest.fixture
def unchosen(monkeypatch):
    """No engine chosen (no scope, no ``set_engine``, no environment
    variable) and TensorFlow installed, on a backend the test sets."""
    monkeypatch.delenv("KZOO_PREPROCESSING", raising=False)
    monkeypatch.setitem(engine._DEFAULT, "engine", None)
    monkeypatch.setattr(engine, "tensorflow_installed", lambda: True)

    def on(backend):
        monkeypatch.setattr(engine, "_keras_backend", lambda: backend)

    return on


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_small_in_memory_data_goes_to_python_on_jax_and_torch(unchosen, backend):
    unchosen(backend)
    limit = engine.PYTHON_DATA_LIMIT
    for size in (0, 1, 8, 32, limit):
        assert engine.data_engine(size) == "python", size
    assert engine.data_engine(None) == "python"  # batches read one at a time
    assert engine.data_engine(limit + 1) == "tensorflow"
    assert engine.data_engine(100 * limit) == "tensorflow"
    # Eager calls of a layer keep the process's engine.
    assert engine.engine() == "tensorflow"


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_multi_process_distribution_that_shards_the_data_gets_tf_data(
        unchosen, monkeypatch, backend):
    unchosen(backend)
    distribution = types.SimpleNamespace(_is_multi_process=True,
                                         auto_shard_dataset=True)
    monkeypatch.setattr(keras.distribution, "distribution", lambda: distribution)
    assert engine.data_engine(1) == "tensorflow"
    distribution.auto_shard_dataset = False  # the user shards: any data
    assert engine.data_engine(1) == "python"
    distribution._is_multi_process = False
    distribution.auto_shard_dataset = True
    assert engine.data_engine(1) == "python"


def test_the_tensorflow_backend_keeps_tf_data(unchosen):
    unchosen("tensorflow")
    for size in (None, 1, engine.PYTHON_DATA_LIMIT + 1):
        assert engine.data_engine(size) == "tensorflow", size


@pytest.mark.parametrize("backend", ["jax", "torch", "tensorflow"])
def test_without_tensorflow_all_data_goes_to_python(unchosen, monkeypatch, backend):
    unchosen(backend)
    monkeypatch.setattr(engine, "tensorflow_installed", lambda: False)
    for size in (None, 1, engine.PYTHON_DATA_LIMIT + 1):
        assert engine.data_engine(size) == "python", size


@pytest.mark.parametrize("backend", ["jax", "torch", "tensorflow"])
@pytest.mark.parametrize("chosen", engine.ENGINES)
def test_a_chosen_engine_wins_over_the_rule(unchosen, monkeypatch, backend, chosen):
    unchosen(backend)
    sizes = (None, 1, engine.PYTHON_DATA_LIMIT + 1)
    monkeypatch.setenv("KZOO_PREPROCESSING", chosen)
    assert [engine.data_engine(n) for n in sizes] == [chosen] * 3
    other = next(name for name in engine.ENGINES if name != chosen)
    engine.set_engine(other)  # set_engine over the environment ...
    try:
        assert [engine.data_engine(n) for n in sizes] == [other] * 3
        with engine.engine_scope(chosen):  # ... and a scope over both
            assert [engine.data_engine(n) for n in sizes] == [chosen] * 3
    finally:
        engine.set_engine(None)
    monkeypatch.delenv("KZOO_PREPROCESSING")
    with engine.engine_scope(other):
        assert engine.chosen_engine() == other
    assert engine.chosen_engine() is None


def test_a_bad_environment_value_names_the_choices(unchosen, monkeypatch):
    unchosen("jax")
    monkeypatch.setenv("KZOO_PREPROCESSING", "numpy")
    with pytest.raises(ValueError, match="KZOO_PREPROCESSING must be one of"):
        engine.data_engine(1)


_BLOCKED_TENSORFLOW = """
import sys
sys.modules["tensorflow"] = None  # Python's documented way to block an import
import kzoo
from kzoo.preprocessing import engine

tokenizer = kzoo.BertTokenizer(
    vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "fox"])
preprocessor = kzoo.BertClassifierPreprocessor(tokenizer, sequence_length=6)
x = preprocessor(["the quick fox", "the fox"])
print(engine.tensorflow_imported(), [int(i) for i in tokenizer("the quick fox")],
      [int(i) for i in x["token_ids"][1]])
"""


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_tensorflow_blocked_in_sys_modules_counts_as_absent(backend):
    environment = {**os.environ, "KERAS_BACKEND": backend}
    run = subprocess.run([sys.executable, "-c", _BLOCKED_TENSORFLOW], env=environment,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    # The tokens by the vocabulary's order; the packed ids [CLS] the fox [SEP].
    assert run.stdout.split("\n")[-2] == "False [5, 6, 7] [2, 5, 7, 3, 0, 0]"
