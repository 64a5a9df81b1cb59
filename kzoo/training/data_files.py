"""The text files that ``kzoo pretrain`` and ``kzoo finetune`` read."""

import csv
import json
import os

TEXT_COLUMNS = ("text", "text_pair")
#: the longest line a data file may hold (one example, or one JSONL row)
MAX_LINE_BYTES = 8 << 20


def text_lines(path, errors="strict", max_line_bytes=MAX_LINE_BYTES):
    """The lines of a UTF-8 file (line ends kept), read one at a time: a
    line longer than ``max_line_bytes`` raises a ValueError naming the file
    and the line before more of it is read, and so does a line that is not
    UTF-8 (unless ``errors="replace"``)."""
    with open(path, "rb") as f:
        number = 0
        while True:
            raw = f.readline(max_line_bytes + 1)
            if not raw:
                return
            number += 1
            if len(raw) > max_line_bytes:
                raise ValueError(
                    f"{path} line {number} is longer than {max_line_bytes} "
                    "bytes: one example per line, far shorter (is it the "
                    "right file, with line breaks?).")
            try:
                yield raw.decode("utf-8", errors=errors)
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"{path} line {number} is not valid UTF-8 ({exc.reason} at "
                    f"byte {exc.start}): save the file as UTF-8 (e.g. "
                    "`iconv -f latin1 -t utf-8`).") from None


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
        for line in text_lines(path, errors="replace"):
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
    if extension in (".jsonl", ".json"):
        rows = []
        for number, line in enumerate(text_lines(path), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path} line {number} is not JSON: {exc}")
        return rows
    if extension not in (".csv", ".tsv"):
        raise ValueError(f"{path}: the data file must be .csv, .tsv or .jsonl.")
    reader = csv.DictReader(text_lines(path),
                            delimiter="\t" if extension == ".tsv" else ",")
    try:
        return list(reader)
    except csv.Error as exc:
        raise ValueError(
            f"{path} line {reader.line_num} cannot be read as "
            f"{extension[1:].upper()} ({exc}): check its quotes and "
            "separators.") from None


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


def _columns(path, rows, needed, hint):
    if not rows:
        raise ValueError(f"{path} holds no rows.")
    found = list(rows[0].keys())
    missing = [c for c in needed if c not in found]
    if missing:
        raise ValueError(f"{path} has the columns {found}; kzoo needs {hint}.")
    return found


def read_scored_file(path):
    """A CSV, TSV or JSONL file of texts with a number each (regression:
    STS-B's similarity) → ``(x, scores)``.

    Columns: ``text`` (and ``text_pair`` for pairs) and ``label`` (a number).

    Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "sts.tsv")
    >>> _ = open(path, "w").write("text\\ttext_pair\\tlabel\\na\\tb\\t4.5\\n")
    >>> kzoo.training.read_scored_file(path)
    ((['a'], ['b']), array([4.5], dtype=float32))
    """
    import numpy as np

    _check_exists(path, "the data file")
    rows = _rows(path)
    found = _columns(path, rows, ("text", "label"),
                     "'text' and 'label' (a number), and 'text_pair' for pairs")
    scores = []
    for number, row in enumerate(rows, 1):
        try:
            scores.append(float(row["label"]))
        except (TypeError, ValueError):
            raise ValueError(f"{path} row {number}: the label {row['label']!r} is not "
                             "a number (regression takes numeric labels).") from None
    texts = [str(row.get("text", "")) for row in rows]
    x = (texts, [str(row.get("text_pair", "")) for row in rows]) if (
        "text_pair" in found) else texts
    return x, np.asarray(scores, "float32")


def _tag_names(tags, label_names):
    if label_names is not None:
        names = list(label_names)
    else:  # "O" first, then sorted: the order people read tag sets in
        seen = {t for sentence in tags for t in sentence}
        names = sorted(seen, key=lambda t: (t != "O", t))
    index = {name: i for i, name in enumerate(names)}
    unknown = sorted({t for sentence in tags for t in sentence} - set(index))
    if unknown:
        raise ValueError(f"tags {unknown} are not among the training data's: {names}.")
    return [[index[t] for t in sentence] for sentence in tags], names


def read_tagged_file(path, label_names=None):
    """Tagged words (NER, POS) → ``(words, tag_ids, names)``.

    Formats: JSONL with ``tokens`` and ``tags`` lists per line; CSV / TSV
    with ``tokens`` and ``tags`` columns, space-separated; or CoNLL
    (``.conll``, ``.txt``: a word and its tag (the last column) per line,
    a blank line between sentences, ``-DOCSTART-`` lines skipped). Tags are
    mapped to ids by ``label_names`` when given (the training file's), else
    in sorted order with ``O`` first.

    Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "ner.conll")
    >>> _ = open(path, "w").write("Ada B-PER\\nruns O\\n\\nParis B-LOC\\n")
    >>> kzoo.training.read_tagged_file(path)
    ([['Ada', 'runs'], ['Paris']], [[2, 0], [1]], ['O', 'B-LOC', 'B-PER'])
    """
    _check_exists(path, "the data file")
    words, tags = [], []
    if os.path.splitext(path)[1].lower() in (".conll", ".txt"):
        sentence = ([], [])
        for number, line in enumerate(text_lines(path), 1):
            parts = line.split()
            if parts and parts[0] == "-DOCSTART-":
                continue
            if not parts:
                if sentence[0]:
                    words.append(sentence[0])
                    tags.append(sentence[1])
                sentence = ([], [])
                continue
            if len(parts) < 2:
                raise ValueError(f"{path} line {number}: a word and its tag "
                                 f"(the last column) expected, got {line.strip()!r}.")
            sentence[0].append(parts[0])
            sentence[1].append(parts[-1])
        if sentence[0]:
            words.append(sentence[0])
            tags.append(sentence[1])
    else:
        rows = _rows(path)
        _columns(path, rows, ("tokens", "tags"), "'tokens' and 'tags'")
        for number, row in enumerate(rows, 1):
            row_words, row_tags = row["tokens"], row["tags"]
            if isinstance(row_words, str):
                row_words, row_tags = row_words.split(), str(row_tags).split()
            if len(row_words) != len(row_tags):
                raise ValueError(f"{path} row {number}: {len(row_words)} tokens but "
                                 f"{len(row_tags)} tags: give one tag per token.")
            words.append([str(w) for w in row_words])
            tags.append([str(t) for t in row_tags])
    if not words:
        raise ValueError(f"{path} holds no tagged sentence.")
    ids, names = _tag_names(tags, label_names)
    return words, ids, names


def read_squad_file(path):
    """A SQuAD-format JSON file → ``(questions, contexts, answers)``.

    ``answers[i]`` is the list of gold answers of question ``i``, each a
    dict ``{"text", "answer_start"}`` (the first trains; all of them score).
    """
    _check_exists(path, "the data file")
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ValueError(f"{path}: SQuAD's format has a top-level 'data' list "
                         "(articles → paragraphs → qas).")
    questions, contexts, answers = [], [], []
    for article in data["data"]:
        for paragraph in article.get("paragraphs", ()):
            for qa in paragraph.get("qas", ()):
                gold = [{"text": a["text"], "answer_start": int(a["answer_start"])}
                        for a in qa.get("answers", ())]
                if not gold:
                    raise ValueError(f"{path}: question {qa.get('id', qa['question'])!r} "
                                     "has no answer (SQuAD 1.1 needs one).")
                questions.append(qa["question"])
                contexts.append(paragraph["context"])
                answers.append(gold)
    if not questions:
        raise ValueError(f"{path} holds no question.")
    return questions, contexts, answers


def read_choices_file(path):
    """A CSV, TSV or JSONL file of multiple-choice questions (SWAG) →
    ``(contexts, endings, labels)``.

    Columns: ``context`` (or SWAG's ``sent1``), ``ending0`` ... ``endingN``
    and ``label`` (the right ending's index). With SWAG's ``sent2`` (the
    start of the ending), it is put before each ending.
    """
    import numpy as np

    _check_exists(path, "the data file")
    rows = _rows(path)
    found = _columns(path, rows, ("label",),
                     "'context' (or 'sent1'), 'ending0'... and 'label'")
    context = "context" if "context" in found else "sent1"
    endings = sorted((c for c in found if c.startswith("ending")
                      and c[len("ending"):].lstrip("_").isdigit()),
                     key=lambda c: int(c[len("ending"):].lstrip("_")))
    if context not in found or len(endings) < 2:
        raise ValueError(f"{path} has the columns {found}; kzoo needs 'context' (or "
                         "'sent1'), two or more 'ending0', 'ending1'... and 'label'.")
    prefix = [str(row.get("sent2", "") or "") for row in rows]
    choices = [[f"{p} {row[e]}".strip() for e in endings]
               for p, row in zip(prefix, rows)]
    labels = np.asarray([int(row["label"]) for row in rows], "int32")
    if labels.min() < 0 or labels.max() >= len(endings):
        raise ValueError(f"{path}: labels must be ending indices in [0, {len(endings)}).")
    return [str(row[context]) for row in rows], choices, labels
