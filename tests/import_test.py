"""`import kzoo`: names on first use, no backend library it does not use,
no command-line parsing, every class registered for Keras."""

import os
import subprocess
import sys

import keras
import pytest

from kzoo.testing import check_without_tensorflow


def _run(code, **env):
    environment = dict(os.environ, KERAS_BACKEND=keras.config.backend(), **env)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, env=environment, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_import_kzoo_imports_neither_keras_nor_tensorflow():
    out = _run("import sys, kzoo; print(sorted(m for m in ('keras', 'tensorflow', "
               "'jax', 'torch') if m in sys.modules))")
    assert out.strip() == "[]"


@pytest.mark.backends("jax", "torch")
def test_model_classes_load_without_tensorflow_on_jax_and_torch():
    out = _run("import sys, kzoo; kzoo.BertClassifier; kzoo.GPTCausalLM; "
               "kzoo.layers; kzoo.training; kzoo.analysis; kzoo.export; "
               "print('tensorflow' in sys.modules)")
    assert out.strip() == "False"


def test_importing_never_reads_the_command_line():
    out = _run("import os, sys; sys.argv = ['kzoo', '--backend', 'torch', 'presets']; "
               "import kzoo; kzoo.BertBackbone; print(os.environ['KERAS_BACKEND'])")
    assert out.strip() == keras.config.backend()


def test_classes_are_registered_when_keras_came_first(tmp_path):
    path = tmp_path / "position_embedding.keras"
    inputs = keras.Input((5, 4))
    from kzoo.layers import PositionEmbedding

    keras.Model(inputs, PositionEmbedding(sequence_length=5)(inputs)).save(path)
    out = _run(f"import keras, kzoo; m = keras.models.load_model({str(path)!r}); "
               "print(type(m.layers[-1]).__name__)")
    assert out.strip() == "PositionEmbedding"


def test_unknown_name_and_dir():
    import kzoo

    with pytest.raises(AttributeError, match="no attribute 'NoSuchModel'"):
        kzoo.NoSuchModel  # noqa: B018
    assert {"BertClassifier", "models", "list_presets"} <= set(dir(kzoo))


@pytest.mark.without_tensorflow
@pytest.mark.backends("jax", "torch")
def test_export_without_tensorflow_names_the_install():
    check_without_tensorflow("""
        import kzoo
        from kzoo.preprocessing.engine import TensorFlowNotInstalledError
        try:
            kzoo.export.saved_model(None, "/tmp/never-written")
        except TensorFlowNotInstalledError as error:
            assert "pip install 'kzoo[tensorflow]'" in str(error), error
        else:
            raise AssertionError("export did not fail")
    """)
