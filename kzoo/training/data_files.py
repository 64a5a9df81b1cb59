"""The text files that ``kzoo pretrain`` and ``kzoo finetune`` read."""

import csv
import json
import os

TEXT_COLUMNS = ("text", "text_pair")


def _check_exists(path, what):
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{what} {path} does not exist" if not os.path.exists(path)
            else f"{what} {path} is not a file")


def read_documents(paths):
    """Plain-text corpus files → documents, each a list of non-empty lines.

    A blank line ends a document (BERT's pretraining format: a sentence or
    paragraph a line, documents apart), and so does the end of a file.

    Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> _ = open(path, "w").write("One. Two.\\nThree.\\n\\nA new one.\\n")
    >>> kzoo.training.read_documents([path])
    [['One. Two.', 'Three.'], ['A new one.']]
    """
    documents = []
    for path in paths:
        _check_exists(path, "the corpus file")
        document = []
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line:
                    document.append(line)
                elif document:
                    documents.append(document)
                    document = []
        if document:
            documents.append(document)
    if not documents:
        raise ValueError(f"the corpus {', '.join(paths)} holds no text.")
    return documents


def _rows(path):
    extension = os.path.splitext(path)[1].lower()
    with open(path, encoding="utf-8", newline="") as f:
        if extension in (".jsonl", ".json"):
            rows = []
            for number, line in enumerate(f, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"{path} line {number} is not JSON: {exc}")
            return rows
        if extension not in (".csv", ".tsv"):
            raise ValueError(f"{path}: the data file must be .csv, .tsv or .jsonl.")
        return list(csv.DictReader(f, delimiter="\t" if extension == ".tsv" else ","))


def read_labeled_file(path, label_names=None):
    """A CSV, TSV or JSONL file of labelled text → ``(x, labels, names)``.

    Columns: ``text`` (and ``text_pair`` for sentence pairs) and ``label``.
    Labels that are all integers are used as they are; others (strings)
    are mapped to ids in sorted order, or by ``label_names`` when given
    (the training file's names, for a validation file).

    Returns:
        ``x`` (a list of texts, or a tuple of two lists for pairs), an int
        numpy array of labels, and the label names (``None`` for integer
        labels).
    """
    import numpy as np

    _check_exists(path, "the data file")
    rows = _rows(path)
    if not rows:
        raise ValueError(f"{path} holds no rows.")
    found = list(rows[0].keys())
    if "text" not in found or "label" not in found:
        raise ValueError(
            f"{path} has the columns {found}; kzoo needs 'text' and 'label' "
            "(and 'text_pair' for sentence pairs).")
    pairs = "text_pair" in found
    texts = [str(row.get("text", "")) for row in rows]
    labels = [row.get("label") for row in rows]
    if label_names is None and all(_is_int(v) for v in labels):
        ids = np.asarray([int(v) for v in labels], "int32")
        names = None
    else:
        names = list(label_names) if label_names else sorted({str(v) for v in labels})
        index = {name: i for i, name in enumerate(names)}
        unknown = sorted({str(v) for v in labels} - set(index))
        if unknown:
            raise ValueError(f"{path} has labels {unknown} that the training "
                             f"data does not: {names}.")
        ids = np.asarray([index[str(v)] for v in labels], "int32")
    x = (texts, [str(row.get("text_pair", "")) for row in rows]) if pairs else texts
    return x, ids, names


def _is_int(value):
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and value.strip().lstrip("-").isdigit()
