"""A griffe extension: kzoo's doctest examples as Google-style sections.

kzoo's docstrings write their examples flush with the ``Example:`` header
(so that ``--doctest-modules`` reads them as written):

    Example:
    >>> layer(x).shape

Google style, which mkdocstrings reads, wants a section's lines indented
under its header, and griffe reads only ``Examples:`` as an examples
section. This extension indents the lines and renames the header when the
docs are built, so the examples render as Python sessions; the sources stay
as they are.
"""

import re

import griffe

_HEADER = re.compile(r"^(\s*)Examples?:\s*$")
_NEXT_SECTION = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")


def indent_examples(text):
    """Indents the lines under each ``Example:`` header, renamed ``Examples:``."""
    out, indent = [], None
    for line in text.split("\n"):
        header = _HEADER.match(line)
        if header:
            indent = header.group(1)
            line = indent + "Examples:"  # griffe reads "Example:" as an admonition
        elif indent is not None and line.strip():
            body = line[len(indent):] if line.startswith(indent) else line.lstrip()
            if (_NEXT_SECTION.match(line) and not body.startswith(" ")
                    and not out[-1].strip()):
                indent = None
            else:
                line = indent + "    " + body
        out.append(line)
    return "\n".join(out)


class DoctestExamples(griffe.Extension):
    """Indents every docstring's flush ``Example:`` section (see the module)."""

    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = indent_examples(obj.docstring.value)
