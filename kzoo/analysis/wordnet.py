"""WordNet 3.0's usage examples, read from its database files.

WordNet's ``data.noun``, ``data.verb``, ``data.adj`` and ``data.adv`` hold one
synset a line: its offset, its lexicographer file (the "supersense", such as
``noun.artifact``), its words and a gloss whose quoted parts are usage
examples (``"he cashed a check at the bank"``). Each example that contains
one of its synset's words (as the word itself or an inflection of it) is a
sentence tagged with the sense of that word.
"""

import dataclasses
import os
import re

WORDNET_DIR = "/usr/share/wordnet"
INSTALL_HINT = ("WordNet 3.0 is read from the Debian package wordnet-base: "
                "`sudo apt-get install -y wordnet-base` (it installs "
                f"{WORDNET_DIR}), or pass the folder that holds data.noun.")
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
# WordNet's lexicographer files (lexnames): the supersense of a synset.
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact "
    "noun.attribute noun.body noun.cognition noun.communication noun.event "
    "noun.feeling noun.food noun.group noun.location noun.motive noun.object "
    "noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance "
    "noun.time verb.body verb.change verb.cognition verb.communication "
    "verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social "
    "verb.stative verb.weather adj.ppl").split()
# Morphy's detachment rules (WordNet's morph.c): suffix -> replacement.
SUFFIX_RULES = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"),
          ("ed", ""), ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
WORD_PATTERN = re.compile(r"[A-Za-z]+(?:['-][A-Za-z]+)*")
_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")


class WordNetNotFoundError(FileNotFoundError):
    """WordNet's database files are not where they were looked for."""


@dataclasses.dataclass(frozen=True)
class SenseExample:
    """One usage example: ``sentence[start:end]`` is ``lemma`` used in
    ``synset`` (``"n:08420278"``), whose supersense is ``supersense``."""

    lemma: str
    pos: str
    synset: str
    supersense: str
    sentence: str
    start: int
    end: int


def base_forms(token, pos, exceptions):
    """The lemmas ``token`` may be an inflection of (Morphy's rules).

    Example:
    >>> sorted(base_forms("banked", "v", {}))
    ['bank', 'banke', 'banked']
    >>> sorted(base_forms("mice", "n", {"mice": ["mouse"]}))
    ['mice', 'mouse']
    """
    token = token.lower()
    forms = {token, *exceptions.get(token, ())}
    for suffix, replacement in SUFFIX_RULES[pos]:
        if token.endswith(suffix) and len(token) > len(suffix):
            forms.add(token[: -len(suffix)] + replacement)
    return forms


def _read_exceptions(folder, pos):
    path = os.path.join(folder, f"{POS_FILES[pos]}.exc")
    table = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                inflected, *lemmas = line.split()
                table.setdefault(inflected, []).extend(lemmas)
    return table


def _parse_synset(line):
    """``(offset, lexname, words, examples)`` of one data-file line."""
    fields, _, gloss = line.partition("|")
    fields = fields.split()
    offset, lex_filenum, word_count = fields[0], int(fields[1]), int(fields[3], 16)
    words = {_ADJ_MARKER.sub("", fields[4 + 2 * i]).lower()
             for i in range(word_count)}
    examples = re.findall(r'"([^"]+)"', gloss)
    return offset, LEXNAMES[lex_filenum], words, examples


def _find_lemma(sentence, words, pos, exceptions):
    """``(lemma, start, end)`` where exactly one token of ``sentence`` is an
    inflection of a one-word lemma in ``words``, else None."""
    hits = []
    for match in WORD_PATTERN.finditer(sentence):
        for lemma in base_forms(match.group(), pos, exceptions) & words:
            hits.append((lemma, match.start(), match.end()))
    return hits[0] if len(hits) == 1 else None


def read_wordnet_examples(folder=None, parts_of_speech="nvar"):
    """Every WordNet usage example that holds its synset's word once.

    Multi-word lemmas (``river_bank``) are left out; so are examples where
    none or several tokens are an inflection of a synset word (the target
    must be one span).

    Args:
        folder: the WordNet database folder. Defaults to
            ``/usr/share/wordnet`` (Debian's ``wordnet-base``).
        parts_of_speech: which of ``n v a r`` to read.

    Returns:
        A list of ``SenseExample``, in file order.

    Raises:
        WordNetNotFoundError: the folder has no ``data.noun``; the message
            gives the install command.
    """
    folder = folder or WORDNET_DIR
    if not os.path.exists(os.path.join(folder, "data.noun")):
        raise WordNetNotFoundError(f"No WordNet database in {folder}. {INSTALL_HINT}")
    examples = []
    for pos in parts_of_speech:
        if pos not in POS_FILES:
            raise ValueError(f"`parts_of_speech` letters must be among 'nvar', got {pos!r}.")
        exceptions = _read_exceptions(folder, pos)
        with open(os.path.join(folder, f"data.{POS_FILES[pos]}"), encoding="utf-8") as f:
            for line in f:
                if line.startswith(" "):  # the license header
                    continue
                offset, lexname, words, sentences = _parse_synset(line)
                words = {w for w in words if "_" not in w}
                for sentence in sentences:
                    found = _find_lemma(sentence, words, pos, exceptions)
                    if found:
                        lemma, start, end = found
                        examples.append(SenseExample(
                            lemma, pos, f"{pos}:{offset}", lexname, sentence, start, end))
    return examples
