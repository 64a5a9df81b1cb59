"""Where a target word is in a sentence, as character offsets."""

import re

TOKEN_PATTERN = re.compile(r"\w+(?:['-]\w+)*|[^\w\s]")


def find_all(sentence, word):
    """Every whole-word, case-ignoring ``(start, end)`` span of ``word``.

    Example:
    >>> find_all("Bank, riverbank, bank-run, banks, the bank's.", "bank")
    [(0, 4), (38, 42)]
    """
    if not isinstance(sentence, str) or not isinstance(word, str):
        raise TypeError(f"`sentence` and `word` must be str, got {sentence!r:.60} "
                        f"and {word!r:.60}.")
    word = word.strip()
    if not word:
        raise ValueError("`word` is empty: pass the target word.")
    # Letters, digits, "_" and "-" around the match would make it part of a
    # longer word ("riverbank", "river-bank"); "bank's" and "(bank)" match.
    pattern = rf"(?<![\w-]){re.escape(word)}(?![\w-])"
    return [m.span() for m in re.finditer(pattern, sentence, re.IGNORECASE)]


def find_word(sentence, word, index=None):
    """The ``(start, end)`` character span of ``word`` in ``sentence``.

    The match ignores case and must be a whole word: ``"bank"`` is not found
    inside ``"riverbank"``, ``"river-bank"`` or ``"banking"``.

    Args:
        sentence: str.
        word: str. The target word as it is written in the sentence.
        index: int or None. Which occurrence (0 = first) when the word
            occurs more than once; required then.

    Raises:
        ValueError: the word is not in the sentence, occurs more than once
            without ``index``, or ``index`` is out of range.

    Example:
    >>> find_word("The riverbank is not a bank.", "bank")
    (23, 27)
    >>> find_word("A bank, then a Bank.", "bank", index=1)
    (15, 19)
    """
    spans = find_all(sentence, word)
    if not spans:
        raise ValueError(f"The word {word!r} is not in the sentence {sentence!r} "
                         "(whole words only, case ignored).")
    if index is None:
        if len(spans) > 1:
            raise ValueError(
                f"The word {word!r} occurs {len(spans)} times in {sentence!r}: "
                f"pass an index (0 to {len(spans) - 1}) to say which one.")
        return spans[0]
    if not -len(spans) <= index < len(spans):
        raise ValueError(f"index={index} but {word!r} occurs {len(spans)} times in "
                         f"{sentence!r}.")
    return spans[index]


def check_span(sentence, span):
    """Validates a ``(start, end)`` character span of ``sentence``."""
    start, end = span
    if not (isinstance(start, int) and isinstance(end, int)
            and 0 <= start < end <= len(sentence)):
        raise ValueError(f"Span {span!r} is not a non-empty character range of "
                         f"{sentence!r} (length {len(sentence)}).")
    return start, end


def split_tokens(sentence):
    """Word and punctuation tokens with their character spans (ELMo's input).

    Example:
    >>> split_tokens("Don't bank-run!")
    [("Don't", 0, 5), ('bank-run', 6, 14), ('!', 14, 15)]
    """
    return [(m.group(), m.start(), m.end()) for m in TOKEN_PATTERN.finditer(sentence)]


def overlapping(spans, start, end):
    """Indices of the ``(start, end)`` spans that overlap ``[start, end)``.

    Example:
    >>> overlapping([(0, 3), (4, 9), (9, 13)], 4, 13)
    [1, 2]
    """
    return [i for i, (s, e) in enumerate(spans) if s < end and e > start]
