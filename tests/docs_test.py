"""The documentation's runnable code blocks run, so the docs cannot rot.

The convention for README.md and every page under docs/: a block fenced
```` ```python ```` runs here, a block fenced ```` ```py ```` is only shown
(mkdocs highlights both alike). Each page's runnable blocks run in order in
one fresh namespace, in a temporary working folder, on the backend the suite
runs (KERAS_BACKEND), also where TensorFlow is not installed; a page whose
blocks need TensorFlow (or keras-hub, installed beside it) skips there.
"""

import importlib.util
import pathlib
import re
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<info>[^`\n]*)$")
# A bare issue number ("#17"); "owner/repo#123" names another project's thread.
_ISSUE_REFERENCE = re.compile(r"(?<![\w/&])#\d+\b")


def code_blocks(text):
    """Every fenced block of a Markdown text: (info string, first line, code)."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, ticks = match["indent"], match["ticks"]
        body, j = [], i + 1
        while j < len(lines) and lines[j].strip() != ticks:
            body.append(lines[j])
            j += 1
        if j == len(lines):
            raise ValueError(f"line {i + 1}: a code fence is never closed; "
                             f"close it with {ticks}")
        code = textwrap.dedent("\n".join(body)) + "\n" if body else ""
        if indent and code and not all(
                line.startswith(indent) or not line.strip() for line in body):
            raise ValueError(f"line {i + 1}: the block is indented less than "
                             "its fence; indent every line as the fence is")
        blocks.append((match["info"].strip().split(" ")[0], i + 2, code))
        i = j + 1
    return blocks


def _runnable(page):
    return [(line, code) for info, line, code in
            code_blocks(page.read_text(encoding="utf-8")) if info == "python"]


def _page_id(page):
    return str(page.relative_to(ROOT))


def test_code_blocks_reads_fences():
    text = ("text\n```python\nimport os\n\nx = 1\n```\n"
            "```bash\nls\n```\n- item\n\n    ```python\n    y = 2\n    ```\n")
    assert code_blocks(text) == [("python", 3, "import os\n\nx = 1\n"),
                                 ("bash", 8, "ls\n"), ("python", 13, "y = 2\n")]
    with pytest.raises(ValueError, match="never closed"):
        code_blocks("```python\nx = 1\n")


@pytest.mark.without_tensorflow
@pytest.mark.parametrize("page", [p for p in PAGES if _runnable(p)], ids=_page_id)
def test_page_runs(page, tmp_path, monkeypatch):
    blocks = _runnable(page)
    source = "\n".join(code for _, code in blocks)
    # keras-hub is installed beside TensorFlow only (the test extra).
    for library in ("tensorflow", "keras_hub"):
        if library in source and importlib.util.find_spec(library) is None:
            pytest.skip(f"{_page_id(page)}'s blocks need {library}, not installed")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for line, code in blocks:
        exec(compile(code, f"{page}:{line}", "exec"), namespace)


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_page_names_no_issue(page):
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        found = _ISSUE_REFERENCE.search(line)
        assert found is None, (
            f"{_page_id(page)}:{number} refers to an issue ({found.group()}): "
            "describe the software instead")


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 250, (f"README.md has {lines} lines: keep it to 250 and put "
                          "the rest in docs/")


def test_doctest_examples_are_indented_for_mkdocstrings():
    pytest.importorskip("griffe", reason="the docs extra (pip install -e '.[docs]')")
    spec = importlib.util.spec_from_file_location(
        "doctest_examples", ROOT / "docs" / "hooks" / "doctest_examples.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    docstring = ("Sums.\n\nArgs:\n    x: int.\n\nExample:\n>>> 1 + 1\n2\n\n"
                 ">>> print('Args:')\nArgs:\n\nReference:\n    A paper.")
    assert hook.indent_examples(docstring) == (
        "Sums.\n\nArgs:\n    x: int.\n\nExamples:\n    >>> 1 + 1\n    2\n\n"
        "    >>> print('Args:')\n    Args:\n\nReference:\n    A paper.")
    method = "Example:\n    >>> f()\n    1\n\nReference:\n    x"
    assert hook.indent_examples(method) == (
        "Examples:\n        >>> f()\n        1\n\nReference:\n    x")
