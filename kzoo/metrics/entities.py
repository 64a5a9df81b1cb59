"""Entity-level precision, recall and F1 of sequence tags (NER, chunking),
counted as CoNLL's `conlleval` script counts them or as seqeval's strict
mode does."""

# The prefixes each scheme writes besides "O".
_SCHEMES = {
    "IOB2": "BI",
    "IOB1": "BI",
    "BIOES": "BIES",
    "IOBES": "BIES",  # seqeval's name for BIOES
}
_MODES = ("conlleval", "strict")

# Strict mode: each scheme's rules, as `(previous prefixes, current
# prefixes, types)` patterns over a pair of neighbouring tags, `types` being
# "same", "different" or "any" (seqeval.scheme's IOB1, IOB2 and IOBES). A
# tag that matches a `start` pattern after its neighbour opens a chunk; the
# chunk takes every following tag that matches an `inside` pattern, and it is
# an entity when the tag after it matches an `end` pattern.
_ANY = "OBIES"
_STRICT = {
    "IOB1": {
        "start": (("O", "I", "any"), ("I", "I", "different"), ("B", "I", "any"),
                  ("I", "B", "same"), ("B", "B", "same")),
        "inside": (("B", "I", "same"), ("I", "I", "same")),
        "end": (("I", "I", "different"), ("I", "O", "any"), ("I", "B", "any"),
                ("B", "O", "any"), ("B", "I", "different"), ("B", "B", "same")),
    },
    "IOB2": {
        "start": ((_ANY, "B", "any"),),
        "inside": (("B", "I", "same"), ("I", "I", "same")),
        "end": (("I", "O", "any"), ("I", "I", "different"), ("I", "B", "any"),
                ("B", "O", "any"), ("B", "I", "different"), ("B", "B", "any")),
    },
    "BIOES": {
        "start": ((_ANY, "B", "any"), (_ANY, "S", "any")),
        "inside": (("B", "I", "same"), ("B", "E", "same"), ("I", "I", "same"),
                   ("I", "E", "same")),
        "end": (("S", _ANY, "any"), ("E", _ANY, "any")),
    },
}
_STRICT["IOBES"] = _STRICT["BIOES"]
_OUTSIDE = ("O", None)


def _parse(tag, allowed, scheme, sentence, position):
    """`(prefix, type)` of one tag: `("O", None)` or e.g. `("B", "PER")`."""
    if not isinstance(tag, str):
        raise TypeError(
            f"Sentence {sentence}, position {position}: the tag {tag!r} is a "
            f"{type(tag).__name__}, not a str; map label ids to tag strings "
            "first.")
    if tag == "O":
        return _OUTSIDE
    if len(tag) < 3 or tag[1] != "-" or tag[0] not in allowed:
        prefixes = ", ".join(sorted(allowed))
        raise ValueError(
            f"Sentence {sentence}, position {position}: {tag!r} is not a "
            f"{scheme} tag. Tags are 'O' or '<prefix>-<type>' with a prefix in "
            f"{{{prefixes}}} (e.g. 'B-PER'); pass the scheme the tags are "
            "written in.")
    return tag[0], tag[2:]


def _matches(patterns, previous, current):
    for previous_prefixes, current_prefixes, types in patterns:
        if previous[0] in previous_prefixes and current[0] in current_prefixes:
            if (types == "any" or (types == "same") == (previous[1] == current[1])):
                return True
    return False


def _strict_chunks(parsed, rules):
    """`(type, start, end)` of each entity the scheme's rules read."""
    tags = parsed + [_OUTSIDE]
    chunks, i, previous = [], 0, _OUTSIDE
    while i < len(tags):
        if _matches(rules["start"], previous, tags[i]):
            j = i + 1
            while j < len(tags) and _matches(rules["inside"], tags[j - 1], tags[j]):
                j += 1
            if j < len(tags) and _matches(rules["end"], tags[j - 1], tags[j]):
                chunks.append((tags[i][1], i, j))
            i = j
        else:
            i += 1
        previous = tags[i - 1]
    return chunks


def _chunk_ends(previous, current):
    """conlleval's endOfChunk: a chunk ends between the two tags."""
    if previous[0] == "O":
        return False
    return previous[0] in "ES" or current[0] in "BSO" or previous[1] != current[1]


def _chunk_starts(previous, current):
    """conlleval's startOfChunk: a chunk starts at the current tag."""
    if current[0] == "O":
        return False
    return current[0] in "BS" or previous[0] in "OES" or previous[1] != current[1]


def _conlleval_chunks(parsed):
    """`(type, start, end)` of each chunk conlleval reads: every `I-X` or
    `E-X` that does not continue a chunk of type X opens one."""
    chunks, start, previous = [], 0, _OUTSIDE
    for i, current in enumerate(parsed + [_OUTSIDE]):
        if _chunk_ends(previous, current):
            chunks.append((previous[1], start, i))
        if _chunk_starts(previous, current):
            start = i
        previous = current
    return chunks


def _entities(tags, scheme, mode, sentence):
    """The set of `(sentence, type, start, end)` entities of one sentence."""
    allowed = _SCHEMES[scheme]
    parsed = [_parse(tag, allowed, scheme, sentence, position)
              for position, tag in enumerate(tags)]
    chunks = (_conlleval_chunks(parsed) if mode == "conlleval"
              else _strict_chunks(parsed, _STRICT[scheme]))
    return {(sentence, entity_type, start, end) for entity_type, start, end in chunks}


def _scores(true_count, predicted_count, correct):
    precision = correct / predicted_count if predicted_count else 0.0
    recall = correct / true_count if true_count else 0.0
    f1 = (2 * precision * recall / (precision + recall)
          if precision + recall else 0.0)
    return {"precision": precision, "recall": recall, "f1": f1}


def entity_scores(true_tags, predicted_tags, scheme="IOB2", by_type=False,
                  mode="conlleval"):
    """Entity-level precision, recall and F1 of predicted sequence tags.

    The entities of each sentence are read from its tags, and a predicted
    entity counts as correct only when a true entity has the same type, the
    same first token and the same last token. Precision is the share of
    predicted entities that are correct, recall the share of true entities
    that were predicted, F1 their harmonic mean; all three are micro
    averages over every entity of every sentence (0 where a denominator is
    0).

    `mode` says how ill-formed tags are read:

    - "conlleval" (default): as `conlleval`, the CoNLL shared tasks'
      script behind published NER results (CoNLL-2003, BERT's NER table),
      reads them. Any tag that does not continue the chunk before it opens
      a new one: an `I-X` after `O`, at the start or after another type
      starts an entity, and so does an `E-X` there; `B-X` and `S-X` always
      start one. A chunk ends before a tag that does not continue it, and
      after `E-X` or `S-X`. The scheme only says which prefixes are allowed:
      IOB1, IOB2 and BIOES are read by the same rules. These are the numbers
      of `seqeval.metrics.precision_score`, `recall_score` and `f1_score`
      without `mode` (and of Hugging Face evaluate's "seqeval").
    - "strict": only what the scheme defines is an entity, as seqeval's
      `mode="strict"` with the matching `scheme` reads it. IOB2: `B-X`
      and every `I-X` right after it; a stray `I-X` is no entity. IOB1: an
      `I-X` run, `B-X` opening a run that follows one of the same type.
      BIOES: `S-X`, or `B-X` then any `I-X` then `E-X`; a chunk not closed
      by its `E-X` is no entity. Ill-formed tags thus cost recall or
      precision instead of being repaired.

    Args:
        true_tags: list of lists of str. The gold tags of each sentence,
            "O" or "<prefix>-<type>" (e.g. "B-PER").
        predicted_tags: list of lists of str, the same shape.
        scheme: str. "IOB2" (default), "IOB1" or "BIOES" ("IOBES").
        by_type: bool. Return the scores of each entity type instead.
        mode: str. "conlleval" (default) or "strict".

    Returns:
        dict: `{"precision", "recall", "f1"}`, floats in [0, 1]. With
        `by_type=True`, a dict from each entity type (those in the true or
        predicted tags, sorted) to `{"precision", "recall", "f1",
        "support"}`, `support` being its number of true entities.

    Raises:
        ValueError: when the two lists, or two sentences, differ in
            length, when there are no sentences, when a tag is not
            written in `scheme`, or for an unknown scheme or mode.
        TypeError: when a sentence is a string instead of a list of tags,
            or a tag is not a string.

    Example:
    >>> true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    >>> predicted = [["B-PER", "I-PER", "O", "I-LOC"], ["B-ORG", "O"]]
    >>> kzoo.metrics.entity_scores(true, predicted)  # I-LOC opens an entity
    {'precision': 1.0, 'recall': 1.0, 'f1': 1.0}
    >>> kzoo.metrics.entity_scores(true, predicted, mode="strict")
    {'precision': 1.0, 'recall': 0.6666666666666666, 'f1': 0.8}
    >>> kzoo.metrics.entity_scores(true, predicted, by_type=True,
    ...                            mode="strict")["LOC"]
    {'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'support': 1}
    """
    if scheme not in _SCHEMES:
        raise ValueError(
            f"Unknown scheme {scheme!r}: use one of {sorted(_SCHEMES)}.")
    if mode not in _MODES:
        raise ValueError(
            f"Unknown mode {mode!r}: use 'conlleval' (entities as CoNLL's "
            "conlleval script and seqeval's default count them) or 'strict' "
            "(seqeval's mode='strict').")
    true_tags, predicted_tags = list(true_tags), list(predicted_tags)
    if len(true_tags) != len(predicted_tags):
        raise ValueError(
            f"`true_tags` has {len(true_tags)} sentences but `predicted_tags` "
            f"has {len(predicted_tags)}: pass one list of tags per sentence "
            "in both, in the same order.")
    if not true_tags:
        raise ValueError(
            "`true_tags` and `predicted_tags` are empty: pass at least one "
            "sentence.")
    true_entities, predicted_entities = set(), set()
    for index, (true, predicted) in enumerate(zip(true_tags, predicted_tags)):
        for name, sentence in (("true_tags", true), ("predicted_tags", predicted)):
            if isinstance(sentence, str):
                raise TypeError(
                    f"{name}[{index}] is a str, not a list of tags: split each "
                    "sentence into one tag per token.")
        true, predicted = list(true), list(predicted)
        if len(true) != len(predicted):
            raise ValueError(
                f"Sentence {index} has {len(true)} true tags but "
                f"{len(predicted)} predicted tags: predict one tag per token.")
        true_entities |= _entities(true, scheme, mode, index)
        predicted_entities |= _entities(predicted, scheme, mode, index)
    correct = true_entities & predicted_entities
    if not by_type:
        return _scores(len(true_entities), len(predicted_entities), len(correct))
    types = sorted({entity[1] for entity in true_entities | predicted_entities})
    result = {}
    for entity_type in types:
        count = lambda entities: sum(e[1] == entity_type for e in entities)  # noqa: E731
        support = count(true_entities)
        result[entity_type] = dict(
            _scores(support, count(predicted_entities), count(correct)),
            support=support)
    return result
