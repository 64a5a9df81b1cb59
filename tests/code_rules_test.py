"""House rules that a reviewer would otherwise have to catch by eye."""

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Model code: keras.ops, keras.layers, keras.random and kzoo.ops only.
MODEL_CODE = ("kzoo/layers/", "kzoo/models/", "kzoo/losses/", "kzoo/metrics/",
              "kzoo/samplers/")
# Data handling may use TensorFlow (tf.data, tf-text) on every backend.
DATA_FILES = re.compile(r"(preprocessor|tokenizer|converter)\.py$|^kzoo/models/task\.py$")
TENSORFLOW = {"tensorflow", "tensorflow_text"}
BACKEND_LIBRARIES = TENSORFLOW | {"tf_keras", "jax", "jaxlib", "torch"}
# The Keras modules whose `backend()` names the backend that runs.
NAMES_THE_BACKEND = {"keras.backend", "keras.config", "keras.src.backend",
                     "keras.src.backend.config"}
# kzoo's lazy TensorFlow modules (imported on first use).
LAZY_TENSORFLOW = {"kzoo.preprocessing.engine": {"tf", "tf_text"}}
KERAS_BACKEND_PACKAGES = re.compile(r"^keras\.src\.backend\.(tensorflow|jax|torch|numpy|openvino)\b")


def _library(module, allowed):
    top = module.split(".")[0]
    return top if top in BACKEND_LIBRARIES - allowed else None


def backend_code(rel, text):
    """Where model file `rel` (its path from the repository root, `text` its
    source) imports a backend library or asks which backend runs, as
    `"rel:line: what"` lines; [] for files outside the model code."""
    if not rel.startswith(MODEL_CODE):
        return []
    allowed = TENSORFLOW if DATA_FILES.search(rel) else set()
    tree = ast.parse(text, filename=rel)
    # Names bound to a module with a `backend()`: `from keras import config`,
    # `import keras.backend as K`.
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names
                        if a.asname and a.name in NAMES_THE_BACKEND}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            aliases |= {a.asname or a.name for a in node.names
                        if f"{node.module}.{a.name}" in NAMES_THE_BACKEND}
    found = []

    def report(node, what):
        found.append(f"{rel}:{node.lineno}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _library(alias.name, allowed):
                    report(node, f"import {alias.name}")
                elif KERAS_BACKEND_PACKAGES.match(alias.name):
                    report(node, f"import {alias.name} (one backend's Keras)")
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if _library(node.module, allowed):
                report(node, f"from {node.module} import ...")
            elif KERAS_BACKEND_PACKAGES.match(node.module):
                report(node, f"from {node.module} import ... (one backend's Keras)")
            elif node.module in NAMES_THE_BACKEND and any(
                    a.name == "backend" for a in node.names):
                report(node, f"from {node.module} import backend")
            elif "tensorflow" not in allowed and any(
                    a.name in LAZY_TENSORFLOW.get(node.module, ()) for a in node.names):
                report(node, f"from {node.module} import (lazy) TensorFlow")
        elif isinstance(node, ast.Attribute):
            path = _attribute_path(node)
            owner = path.rpartition(".")[0]
            if node.attr == "backend" and (owner in NAMES_THE_BACKEND or owner in aliases
                                           or owner.endswith("backend")):
                report(node, f"{path}()")
        elif isinstance(node, ast.Call):
            name = _attribute_path(node.func)
            if (name.rpartition(".")[2] in ("import_module", "__import__", "find_spec")
                    or name == "sys.modules.get") and node.args:
                argument = node.args[0]
                if (isinstance(argument, ast.Constant) and isinstance(argument.value, str)
                        and _library(argument.value, allowed)):
                    report(node, f"{name}({argument.value!r})")
        elif isinstance(node, ast.Subscript) and _attribute_path(node.value) == "sys.modules":
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and _library(
                    key.value, allowed):
                report(node, f"sys.modules[{key.value!r}]")
        elif isinstance(node, ast.Constant) and node.value == "KERAS_BACKEND":
            report(node, "reads KERAS_BACKEND")
    return sorted(found, key=lambda line: int(line.split(":")[1]))


def backend_code_under(root):
    """`backend_code` of every Python file under `root`/kzoo."""
    found = []
    for path in sorted((root / "kzoo").glob("**/*.py")):
        found += backend_code(path.relative_to(root).as_posix(), path.read_text())
    return found


def test_model_code_uses_keras_ops_only():
    # Backend choices (a fused kernel, a faster formulation, a tuned default)
    # live in kzoo/ops/; support code (callbacks, training, export) may ask too.
    offenders = backend_code_under(ROOT)
    assert not offenders, ("backend-specific code in model files (move it behind a "
                           f"kzoo.ops function): {offenders}")


BRANCHES = {
    "keras.backend.backend()": 'import keras\nif keras.backend.backend() == "jax":\n    pass\n',
    "keras.config.backend()": 'import keras\nNAME = keras.config.backend()\n',
    "keras.src": "import keras.src.backend\nNAME = keras.src.backend.backend()\n",
    "module alias": "import keras.backend as K\nNAME = K.backend()\n",
    "config alias": "from keras import config as c\nNAME = c.backend()\n",
    "backend.backend()": "from keras import backend\nNAME = backend.backend()\n",
    "function import": "from keras.backend import backend\n",
    "function import from keras.src": "from keras.src.backend.config import backend as b\n",
    "one backend's Keras": "from keras.src.backend.torch.core import convert_to_tensor\n",
    "import torch": "import torch\n",
    "import jax.numpy": "import jax.numpy as jnp\n",
    "from tensorflow": "from tensorflow import nest\n",
    "tensorflow_text": "import tensorflow_text\n",
    "lazy tensorflow": "from kzoo.preprocessing.engine import tf\n",
    "import in a function": "def f():\n    import torch\n    return torch\n",
    "import_module": 'import importlib\ntorch = importlib.import_module("torch")\n',
    "__import__": 'jnp = __import__("jax.numpy")\n',
    "sys.modules": 'import sys\nTF = sys.modules["tensorflow"]\n',
    "sys.modules.get": 'import sys\nTF = sys.modules.get("tensorflow")\n',
    "KERAS_BACKEND": 'import os\nNAME = os.environ["KERAS_BACKEND"]\n',
}
CLEAN = ('"""Docstrings may name keras.backend.backend() and import torch."""\n'
         "import keras\nfrom keras import ops\n\nfrom kzoo import ops as kzoo_ops\n"
         "EPSILON = keras.backend.epsilon()\nDTYPE = keras.config.floatx()\n"
         'LIBRARY = "torch"\n')


def _plant(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CLEAN + text)


@pytest.mark.parametrize("rel", ["kzoo/models/x/y.py", "kzoo/losses/y.py",
                                 "kzoo/layers/y.py", "kzoo/models/y.py"])
@pytest.mark.parametrize("branch", sorted(BRANCHES))
def test_the_rule_catches_a_planted_branch(tmp_path, rel, branch):
    _plant(tmp_path, rel, BRANCHES[branch])
    found = backend_code_under(tmp_path)
    assert len(found) == 1 and found[0].startswith(f"{rel}:"), found
    line = int(found[0].split(":")[1])
    assert line > CLEAN.count("\n"), found  # the planted line, not the clean ones


def test_the_rule_leaves_clean_code_support_code_and_data_files_alone(tmp_path):
    _plant(tmp_path, "kzoo/models/x/y.py", "")
    for rel in ("kzoo/ops/y.py", "kzoo/callbacks/y.py", "kzoo/export/y.py"):
        _plant(tmp_path, rel, BRANCHES["keras.backend.backend()"] + "import torch\n")
    # Preprocessors, tokenizers and converters may use TensorFlow (tf.data) ...
    _plant(tmp_path, "kzoo/models/x/x_preprocessor.py", "import tensorflow as tf\n"
           "import tensorflow_text\nimport importlib\n"
           "from kzoo.preprocessing.engine import tf, tf_text\n"
           'TF = importlib.import_module("tensorflow")\n')
    assert backend_code_under(tmp_path) == []
    # ... but no other backend library, and no backend check.
    _plant(tmp_path, "kzoo/models/x/x_tokenizer.py", "import tensorflow as tf\nimport torch\n")
    _plant(tmp_path, "kzoo/models/x/x_converter.py", BRANCHES["keras.config.backend()"])
    found = backend_code_under(tmp_path)
    assert [line.split(":")[0] for line in found] == [
        "kzoo/models/x/x_converter.py", "kzoo/models/x/x_tokenizer.py"], found


def test_every_package_is_shipped():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {
        path.parent.relative_to(ROOT).as_posix().replace("/", ".")
        for path in (ROOT / "kzoo").glob("**/__init__.py")
    }
    assert found <= listed, f"add to pyproject packages: {sorted(found - listed)}"


def test_one_class_per_public_module_file_name():
    # STYLE.md: the file name is the class name in snake_case.
    offenders = []
    for path in sorted((ROOT / "kzoo").glob("**/*.py")):
        for name in re.findall(r'@kzoo_export\("kzoo\.[\w.]*?\.?(\w+)"\)\s*\nclass (\w+)',
                               path.read_text()):
            cls = name[1]
            snake = re.sub(r"(?<!^)(?=[A-Z][a-z])|(?<=[a-z])(?=[A-Z])", "_", cls.replace("Word2Vec", "Word2vec")).lower()
            if path.stem != snake and path.stem not in ("backbone", "task", "preprocessor"):
                offenders.append(f"{path.relative_to(ROOT)}: {cls}")
    assert not offenders, offenders


KZOO_IMPORT = re.compile(r"^\s*(?:from|import)\s+(kzoo(?:\.\w+)*)", re.M)
FAMILIES = tuple(sorted(p.parent.name for p in (ROOT / "kzoo" / "models").glob("*/__init__.py")))
# The generic parts read the family records (kzoo.models.family), never a family.
GENERIC = ("kzoo/cli/", "kzoo/training/", "kzoo/analysis/", "kzoo/export/",
           "kzoo/distribution/")


def _kzoo_imports(path):
    return KZOO_IMPORT.findall(path.read_text())


def test_import_walls():
    # presets/ is below every model: it imports only itself (and kzoo.version),
    # so no import circle runs through it; layers and preprocessing know no
    # family; families never import each other; the generic parts (the
    # command, training, analysis, export, distribution) import none.
    offenders = []
    for path in sorted((ROOT / "kzoo").glob("**/*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for module in _kzoo_imports(path):
            if rel.startswith("kzoo/presets/"):
                bad = module not in ("kzoo.presets", "kzoo.version") and not (
                    module.startswith("kzoo.presets."))
            elif rel.startswith(("kzoo/layers/", "kzoo/preprocessing/", "kzoo/tokenizers/")):
                bad = module.startswith("kzoo.models")
            elif rel.startswith(GENERIC):
                bad = any(module.startswith(f"kzoo.models.{family}")
                          for family in FAMILIES)
            elif rel.startswith("kzoo/models/") and rel.count("/") == 3:
                family = rel.split("/")[2]
                bad = any(module.startswith(f"kzoo.models.{other}")
                          for other in FAMILIES if other != family)
            else:
                bad = False
            if bad:
                offenders.append(f"{rel} imports {module}")
    assert not offenders, offenders


def test_converters_are_registered_by_family_packages():
    # One seam: a family's foreign formats live in its <family>_converter.py and
    # are registered in its __init__.py, not as a side effect of other imports.
    for path in sorted((ROOT / "kzoo" / "models").glob("*/*_converter.py")):
        init = (path.parent / "__init__.py").read_text()
        assert "register_converter(" in init, f"{path.parent.name}/__init__.py"
        assert "@register_converter" not in path.read_text(), path.name


def _attribute_path(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def test_generic_parts_name_no_family_class():
    # `kzoo.models.GPTCausalLM` in code (docstrings aside) is a family named
    # as surely as an import: the generic parts go through the records.
    import importlib

    family_names = set()
    for family in FAMILIES:
        family_names |= set(getattr(importlib.import_module(f"kzoo.models.{family}"),
                                    "__all__", ()))
    offenders = []
    for path in sorted((ROOT / "kzoo").glob("**/*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(GENERIC):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            name = _attribute_path(node) if isinstance(node, ast.Attribute) else ""
            if name.startswith("kzoo.") and name.rsplit(".", 1)[-1] in family_names:
                offenders.append(f"{rel}:{node.lineno} {name}")
    assert not offenders, offenders
