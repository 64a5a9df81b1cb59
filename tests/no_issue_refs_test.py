"""The code and the documentation describe the software, not the tracker:
no issue references (``#17``, ``issue 17``) in README.md, docs/, kzoo/,
examples/ or bench/."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.without_tensorflow  # needs no Keras at all

#: ``#17`` standing alone (not ``#!``, ``# comment``, a ``## heading``, a
#: colour ``#1f77b4``, an HTML entity ``&#123;``, a URL fragment ``page#17`` or
#: another repository's ``owner/name#17``), and ``issue 17`` / ``issue #17``
ISSUE_REFERENCE = re.compile(
    r"(?<![\w&#/])#\d{1,4}(?![\w-])"
    r"|\bissues?\s+(?:no\.?\s*)?#?\d+\b",
    re.IGNORECASE,
)
SCANNED = ("README.md", "docs", "kzoo", "examples", "bench")
TEXT_SUFFIXES = {".py", ".md", ".txt", ".sh", ".json", ".toml", ".yml", ".yaml", ".cfg"}


def issue_references(text):
    """``[(line number, matched text)]`` of the issue references in ``text``."""
    return [(number, match.group(0))
            for number, line in enumerate(text.splitlines(), 1)
            for match in ISSUE_REFERENCE.finditer(line)]


@pytest.mark.parametrize("text", [
    "see #17", "(#17)", "#17's bound", "issue 17", "Issue #17", "issues 3 and 4",
    "goal of #9.", "fixed in #1234",
])
def test_a_planted_reference_is_found(text):
    assert issue_references(text), text


@pytest.mark.parametrize("text", [
    "#!/usr/bin/env python", "# noqa: E402", "## 1. Install", "### Speed",
    "color: #1f77b4", "#2ca02c", "#123456", "&#123;", "docs/page.md#17",
    "keras-team/keras#23276", "x = 3  # 17 rows", "tokens ##14 and ##.",
    "issue a warning", "the issue's bound", "f'{n:#010x}'",
])
def test_legitimate_uses_are_not_flagged(text):
    assert not issue_references(text), text


def _ignored(paths):
    """The paths git ignores (downloaded data, build outputs); none outside git."""
    try:
        found = subprocess.run(
            ["git", "check-ignore", "--stdin"], cwd=ROOT, capture_output=True,
            text=True, input="\n".join(str(p.relative_to(ROOT)) for p in paths))
    except OSError:
        return set()
    return {ROOT / line for line in found.stdout.splitlines()}


def _scanned_files():
    paths = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            paths.append(path)
        elif path.is_dir():
            paths.extend(p for p in sorted(path.rglob("*"))
                         if p.is_file() and p.suffix in TEXT_SUFFIXES)
    ignored = _ignored(paths)
    return [p for p in paths if p not in ignored]


def test_no_issue_references_in_code_or_docs():
    found = []
    for path in _scanned_files():
        for number, text in issue_references(path.read_text(errors="replace")):
            found.append(f"{path.relative_to(ROOT)}:{number}: {text}")
    assert not found, ("issue references (say what the code does or link the "
                       "page that explains it instead):\n" + "\n".join(found))
