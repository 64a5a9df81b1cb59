"""Jane Austen's six novels, from Debian's ``r-cran-janeaustenr`` package.

The package keeps the novels as R character vectors (one line of the printed
text each) in an R lazy-load database; ``kzoo.datasets.r_serialization``
reads it without R. Write the corpus file the ``kzoo`` commands take with::

    python -m kzoo.datasets.austen austen.txt
"""

import os
import sys

from kzoo.datasets.r_serialization import read_lazy_load

DATA = "/usr/lib/R/site-library/janeaustenr/data/Rdata"
# Publication order, as janeaustenr's austen_books().
NOVELS = (
    ("sensesensibility", "Sense & Sensibility"),
    ("prideprejudice", "Pride & Prejudice"),
    ("mansfieldpark", "Mansfield Park"),
    ("emma", "Emma"),
    ("northangerabbey", "Northanger Abbey"),
    ("persuasion", "Persuasion"),
)


def _paragraphs(lines):
    paragraphs, current = [], []
    for line in list(lines) + [""]:
        line = (line or "").strip()
        if line:
            current.append(line)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    return paragraphs


def jane_austen(data=DATA):
    """The six novels as paragraphs, in publication order.

    Args:
        data: the lazy-load database's path without its suffix (default:
            where Debian's ``r-cran-janeaustenr`` puts it).

    Returns:
        ``{title: [paragraph, ...]}``: a paragraph is the novel's consecutive
        non-blank lines joined by spaces (chapter headings are paragraphs too).

    Raises:
        FileNotFoundError: the package is not installed (with the command).
    """
    if not os.path.exists(data + ".rdx"):
        raise FileNotFoundError(
            f"Jane Austen's novels are read from {data}.rdx/.rdb, which Debian's "
            "r-cran-janeaustenr package installs: apt install r-cran-janeaustenr "
            "(or, without R: apt-get download r-cran-janeaustenr && "
            "dpkg -x r-cran-janeaustenr_*.deb /).")
    objects = read_lazy_load(data, [name for name, _ in NOVELS])
    return {title: _paragraphs(objects[name]) for name, title in NOVELS}


def write_jane_austen(path, data=DATA):
    """Writes the novels as one corpus file: a paragraph a line, a blank line
    after each (so each paragraph is a document to ``kzoo prepare`` and
    ``kzoo compare``), the novels in publication order. Returns ``path``."""
    novels = jane_austen(data)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for paragraphs in novels.values():
            for paragraph in paragraphs:
                f.write(paragraph + "\n\n")
    return path


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m kzoo.datasets.austen OUTPUT.txt\n"
              "Writes Jane Austen's six novels (Debian's r-cran-janeaustenr) as a "
              "corpus file: a paragraph a line, a blank line between paragraphs.",
              file=sys.stderr)
        return 2
    try:
        path = write_jane_austen(argv[0])
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with open(path, encoding="utf-8") as f:
        words = sum(len(line.split()) for line in f)
    print(f"wrote {path}: six novels, {words:,} words")
    return 0


if __name__ == "__main__":
    sys.exit(main())
