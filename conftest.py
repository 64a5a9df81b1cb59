"""Test configuration shared by the doctests in kzoo/ and the tests in tests/."""

import importlib.util
import os

# Simulated devices for the distribution tests: must be set before jax is
# imported (keras imports jax whenever it is installed, whatever the backend).
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# JAX compiles every op once per shape: a persistent cache shared by the
# pytest-xdist workers (and later runs) saves most of that time.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", "/tmp/kzoo-jax-cache")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# Property tests: the same examples in every run ("ci", the default), no
# deadline (the first TensorFlow call of a test traces), no example database.
# HYPOTHESIS_PROFILE=explore draws new random examples on each run.
settings.register_profile("ci", derandomize=True, deadline=None, database=None,
                          print_blob=True)
settings.register_profile("explore", deadline=None, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Backends that cannot write a SavedModel directly (keras 3.15): torch needs
# torch_xla, which has no build for torch 2.13.
_CANNOT_EXPORT = {"torch"}


_TENSORFLOW = importlib.util.find_spec("tensorflow") is not None


def pytest_ignore_collect(collection_path, config):
    """Without TensorFlow, only the test files with tests marked
    `without_tensorflow` are collected (the others import TensorFlow or
    compare against it). `tests/families/` holds model families outside
    kzoo, which the tests that use them import (never collected: importing
    one registers it); the other files under tests/ that are not test files
    are helpers and scripts (never collected by --doctest-modules)."""
    if "families" in collection_path.parts and "tests" in collection_path.parts:
        return True
    if ("tests" in collection_path.parts and collection_path.suffix == ".py"
            and not collection_path.name.endswith("_test.py")
            and collection_path.name not in ("conftest.py", "__init__.py")):
        return True  # helpers and the scripts tests run: no tests, some run on import
    if _TENSORFLOW or collection_path.suffix != ".py" or collection_path.is_dir():
        return None
    if not collection_path.name.endswith("_test.py"):
        return None
    return "mark.without_tensorflow" not in collection_path.read_text(
        encoding="utf-8")


def pytest_report_header(config):
    return f"keras {keras.__version__}, backend: {keras.config.backend()}"


def pytest_collection_modifyitems(config, items):
    run_large = "large" in (config.getoption("-m") or "") or os.environ.get(
        "KZOO_RUN_LARGE"
    )
    skip_large = pytest.mark.skip(reason="large test: run with -m large")
    skip_export = pytest.mark.skip(
        reason=f"the {keras.config.backend()} backend cannot export a "
        "SavedModel directly in keras 3.15"
    )
    for item in items:
        backends = item.get_closest_marker("backends")
        if backends and keras.config.backend() not in backends.args:
            item.add_marker(pytest.mark.skip(
                reason=f"runs on the {'/'.join(backends.args)} backend(s) only"))
        if "large" in item.keywords and not run_large:
            item.add_marker(skip_large)
        if (
            "requires_saved_model_export" in item.keywords
            and keras.config.backend() in _CANNOT_EXPORT
        ):
            item.add_marker(skip_export)


@pytest.fixture(autouse=True)
def _seeded():
    """Every test and doctest starts from the same random state.

    Weights drawn without an explicit seed (Keras initializers, dropout),
    ``np.random``, ``random`` and TensorFlow's global seed (``tf.data``
    shuffles) then give the same numbers in every run, whichever pytest-xdist
    worker runs the test and whatever ran before it in that process.
    """
    keras.utils.set_random_seed(int(os.environ.get("KZOO_TEST_SEED", "0")))


@pytest.fixture(scope="session")
def allennlp_elmo():
    """AllenNLP's ELMo test fixture folder (options.json, lm_weights.hdf5,
    references), fetched with pip on first use; the test is skipped when it
    cannot be fetched."""
    from kzoo.testing.allennlp_fixtures import FixtureUnavailable, allennlp_elmo_fixture

    try:
        return allennlp_elmo_fixture()
    except FixtureUnavailable as exc:
        pytest.skip(f"AllenNLP 0.9.0's ELMo fixture cannot be fetched: {exc}")


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    import kzoo

    doctest_namespace["np"] = np
    doctest_namespace["keras"] = keras
    doctest_namespace["ops"] = keras.ops
    doctest_namespace["kzoo"] = kzoo


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "backends(*names): runs only on these Keras backends (the engine the "
        "test drives exists only there: keras.distribution on JAX, "
        "tf.distribute on TensorFlow, torch.distributed on PyTorch)",
    )
