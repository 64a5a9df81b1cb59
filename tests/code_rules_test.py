"""House rules that a reviewer would otherwise have to catch by eye."""

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BACKEND_IMPORT = re.compile(
    r"^\s*(import|from)\s+(tensorflow|jax|torch)\b|keras\.config\.backend\(\)", re.M
)
# Data handling may use TensorFlow (tf.data, tf-text) on every backend.
DATA_FILES = re.compile(r"(preprocessor|tokenizer|converter)\.py$|^kzoo/models/task\.py$")


def test_model_code_uses_keras_ops_only():
    offenders = []
    for path in sorted((ROOT / "kzoo").glob("**/*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(("kzoo/layers/", "kzoo/models/")) or DATA_FILES.search(rel):
            continue
        if BACKEND_IMPORT.search(path.read_text()):
            offenders.append(rel)
    assert not offenders, f"backend-specific code in model files: {offenders}"


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
