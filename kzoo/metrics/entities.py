"""Entity-level precision, recall and F1 of sequence tags (NER, chunking),
as seqeval's strict mode computes them."""

_SCHEMES = {
    "IOB2": frozenset("BIO"),
    "BIOES": frozenset("BIOES"),
    "IOBES": frozenset("BIOES"),  # seqeval's name for BIOES
}


def _parse(tag, allowed, scheme, sentence, position):
    """`(prefix, type)` of one tag: `("O", None)` or e.g. `("B", "PER")`."""
    if not isinstance(tag, str):
        raise TypeError(
            f"Sentence {sentence}, position {position}: the tag {tag!r} is a "
            f"{type(tag).__name__}, not a str; map label ids to tag strings "
            "first.")
    if tag == "O":
        return "O", None
    if len(tag) < 3 or tag[1] != "-" or tag[0] not in allowed - {"O"}:
        prefixes = ", ".join(sorted(allowed - {"O"}))
        raise ValueError(
            f"Sentence {sentence}, position {position}: {tag!r} is not a "
            f"{scheme} tag. Tags are 'O' or '<prefix>-<type>' with a prefix in "
            f"{{{prefixes}}} (e.g. 'B-PER'); pass the scheme the tags are "
            "written in.")
    return tag[0], tag[2:]


def _entities(tags, scheme, sentence):
    """The set of `(sentence, type, start, end)` entities of one sentence."""
    allowed = _SCHEMES[scheme]
    parsed = [_parse(tag, allowed, scheme, sentence, position)
              for position, tag in enumerate(tags)]
    entities = set()
    i, n = 0, len(parsed)
    while i < n:
        prefix, entity_type = parsed[i]
        if prefix == "S":
            entities.add((sentence, entity_type, i, i + 1))
            i += 1
        elif prefix == "B":
            j = i + 1
            while j < n and parsed[j] == ("I", entity_type):
                j += 1
            if scheme == "IOB2":  # B-X I-X*: every B starts an entity
                entities.add((sentence, entity_type, i, j))
                i = j
            elif j < n and parsed[j] == ("E", entity_type):  # B-X I-X* E-X
                entities.add((sentence, entity_type, i, j + 1))
                i = j + 1
            else:  # a BIOES chunk that never ends: no entity
                i = j
        else:  # O, or an I or E that no B opened: no entity
            i += 1
    return entities


def _scores(true_count, predicted_count, correct):
    precision = correct / predicted_count if predicted_count else 0.0
    recall = correct / true_count if true_count else 0.0
    f1 = (2 * precision * recall / (precision + recall)
          if precision + recall else 0.0)
    return {"precision": precision, "recall": recall, "f1": f1}


def entity_scores(true_tags, predicted_tags, scheme="IOB2", by_type=False):
    """Entity-level precision, recall and F1 of predicted sequence tags.

    The entities of each sentence are read from its tags, and a predicted
    entity counts as correct only when a true entity has the same type, the
    same first token and the same last token. Precision is the share of
    predicted entities that are correct, recall the share of true entities
    that were predicted, F1 their harmonic mean; all three are micro
    averages over every entity of every sentence (0 where a denominator is
    0). These are the numbers of `seqeval.metrics.precision_score`,
    `recall_score` and `f1_score` with `mode="strict"` and the matching
    `scheme`, the way CoNLL-style NER results are reported.

    How entities are read (strict mode):

    - "IOB2": an entity is `B-X` followed by every `I-X` right after it.
      An `I-X` that does not continue a `B-X` or `I-X` chunk (after `O`,
      at the start, or after another type) is no entity and is ignored.
    - "BIOES" (also spelled "IOBES"): an entity is `S-X`, or `B-X` then
      any `I-X` then `E-X`. A chunk that is not closed by its `E-X` (the
      sentence ends, or another tag comes) is no entity; a stray `I-X` or
      `E-X` is ignored.

    Ill-formed tags thus cost recall or precision instead of being
    repaired, unlike conlleval's default reading (which seqeval uses
    without `mode="strict"`) where `I-X` after `O` opens an entity. IOB1,
    where `I-X` opens entities, is not read here.

    Args:
        true_tags: list of lists of str. The gold tags of each sentence,
            "O" or "<prefix>-<type>" (e.g. "B-PER").
        predicted_tags: list of lists of str, the same shape.
        scheme: str. "IOB2" (default) or "BIOES" ("IOBES").
        by_type: bool. Return the scores of each entity type instead.

    Returns:
        dict: `{"precision", "recall", "f1"}`, floats in [0, 1]. With
        `by_type=True`, a dict from each entity type (those in the true or
        predicted tags, sorted) to `{"precision", "recall", "f1",
        "support"}`, `support` being its number of true entities.

    Raises:
        ValueError: when the two lists, or two sentences, differ in
            length, when there are no sentences, or when a tag is not
            written in `scheme`.
        TypeError: when a sentence is a string instead of a list of tags,
            or a tag is not a string.

    Example:
    >>> true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    >>> predicted = [["B-PER", "I-PER", "O", "I-LOC"], ["B-ORG", "O"]]
    >>> kzoo.metrics.entity_scores(true, predicted)  # I-LOC opens nothing
    {'precision': 1.0, 'recall': 0.6666666666666666, 'f1': 0.8}
    >>> kzoo.metrics.entity_scores(true, predicted, by_type=True)["LOC"]
    {'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'support': 1}
    """
    if scheme not in _SCHEMES:
        raise ValueError(
            f"Unknown scheme {scheme!r}: use one of {sorted(_SCHEMES)}.")
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
        true_entities |= _entities(true, scheme, index)
        predicted_entities |= _entities(predicted, scheme, index)
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
