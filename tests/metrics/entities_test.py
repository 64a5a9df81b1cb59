"""`kzoo.metrics.entity_scores` against seqeval 1.2.2's strict mode
(`seqeval.metrics.*_score(..., mode="strict", scheme=...)`), on seqeval's
documented examples and on seeded random tag sequences, ill-formed ones
included."""

import warnings

import numpy as np
import pytest

from kzoo.metrics import entity_scores

pytestmark = pytest.mark.without_tensorflow

seqeval_metrics = pytest.importorskip("seqeval.metrics")
seqeval_scheme = pytest.importorskip("seqeval.scheme")

SCHEMES = {"IOB2": seqeval_scheme.IOB2, "BIOES": seqeval_scheme.IOBES}
PREFIXES = {"IOB2": "BIO", "BIOES": "BIOES"}
TYPES = ["PER", "LOC", "MISC"]

# The inputs of seqeval's docstring examples (seqeval/metrics/sequence_labeling.py)
# and of its README's strict-mode example.
DOCUMENTED_IOB2 = [
    ([["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]],
     [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]),
    ([["O", "O", "B-MISC", "I-MISC", "B-MISC", "O", "O"], ["B-PER", "I-PER", "O"]],
     [["O", "O", "B-MISC", "I-MISC", "B-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]),
    ([["O", "O", "O", "B-MISC", "I-MISC", "O", "B-ORG"], ["B-PER", "I-PER", "O", "B-PER"]],
     [["O", "O", "B-MISC", "I-MISC", "I-MISC", "O", "O"], ["B-PER", "I-PER", "O", "B-MISC"]]),
    ([["B-NP", "I-NP", "O"]], [["I-NP", "I-NP", "O"]]),
]


def _seqeval(true, predicted, scheme):
    kwargs = dict(mode="strict", scheme=SCHEMES[scheme])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero divisions: seqeval warns, gives 0
        return {
            "precision": float(seqeval_metrics.precision_score(true, predicted, **kwargs)),
            "recall": float(seqeval_metrics.recall_score(true, predicted, **kwargs)),
            "f1": float(seqeval_metrics.f1_score(true, predicted, **kwargs)),
        }


def _seqeval_by_type(true, predicted, scheme):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = seqeval_metrics.classification_report(
            true, predicted, mode="strict", scheme=SCHEMES[scheme], output_dict=True)
    return {name: {"precision": row["precision"], "recall": row["recall"],
                   "f1": row["f1-score"], "support": int(row["support"])}
            for name, row in report.items() if not name.endswith(" avg")}


def _assert_same_by_type(true, predicted, scheme):
    ours = entity_scores(true, predicted, scheme=scheme, by_type=True)
    reference = _seqeval_by_type(true, predicted, scheme)
    assert list(ours) == sorted(reference), (true, predicted)
    for name, row in reference.items():
        assert ours[name] == pytest.approx(row, abs=1e-12), (name, true, predicted)


def _well_formed(rng, length, scheme):
    """Random entities written correctly in the scheme."""
    tags, i = [], 0
    while i < length:
        if rng.random() < 0.4:
            tags.append("O")
            i += 1
            continue
        size = min(int(rng.integers(1, 4)), length - i)
        entity_type = rng.choice(TYPES)
        if scheme == "BIOES" and size == 1:
            tags.append(f"S-{entity_type}")
        else:
            inside = ["I"] * (size - 1)
            if scheme == "BIOES":
                inside[-1] = "E"
            tags += [f"{p}-{entity_type}" for p in ["B"] + inside]
        i += size
    return tags


def _random_tag(rng, scheme):
    prefix = rng.choice(list(PREFIXES[scheme]))
    return "O" if prefix == "O" else f"{prefix}-{rng.choice(TYPES)}"


def _case(rng, scheme):
    """A few sentences: true tags well-formed or random (ill-formed), the
    predictions a copy with some tags replaced by random ones."""
    true, predicted = [], []
    for _ in range(rng.integers(1, 5)):
        length = int(rng.integers(0, 12))
        if rng.random() < 0.6:
            sentence = _well_formed(rng, length, scheme)
        else:
            sentence = [_random_tag(rng, scheme) for _ in range(length)]
        noise = rng.random() * 0.5
        true.append(sentence)
        predicted.append([_random_tag(rng, scheme) if rng.random() < noise else tag
                          for tag in sentence])
    return true, predicted


@pytest.mark.parametrize("true, predicted", DOCUMENTED_IOB2)
def test_seqeval_documented_examples(true, predicted):
    assert entity_scores(true, predicted) == pytest.approx(
        _seqeval(true, predicted, "IOB2"), abs=1e-12)
    _assert_same_by_type(true, predicted, "IOB2")


@pytest.mark.parametrize("scheme", ["IOB2", "BIOES"])
def test_random_tags_match_seqeval_strict(scheme):
    rng = np.random.default_rng(sum(map(ord, scheme)))
    ill_formed = 0
    for _ in range(300):
        true, predicted = _case(rng, scheme)
        ours = entity_scores(true, predicted, scheme=scheme)
        assert ours == pytest.approx(_seqeval(true, predicted, scheme), abs=1e-12), (
            true, predicted)
        _assert_same_by_type(true, predicted, scheme)
        ill_formed += any(
            tag[0] == "I" and (i == 0 or sentence[i - 1][2:] != tag[2:])
            for sentence in predicted for i, tag in enumerate(sentence))
    assert ill_formed > 100  # the cases exercise stray I- tags


def test_ill_formed_tags_read_as_seqeval_strict_reads_them():
    # Strict mode reads what the scheme defines and nothing else: stray I-
    # (and, in BIOES, E-) tags and BIOES chunks without their E- are no
    # entity; an IOB2 B- always opens one, whatever follows.
    cases = {
        "IOB2": [["I-PER", "I-PER", "O"], ["B-PER", "I-LOC", "I-LOC"], ["O", "I-X"],
                 ["B-PER", "B-PER", "I-PER"]],
        "BIOES": [["B-PER", "I-PER"], ["B-PER", "O"], ["I-PER", "E-PER"], ["E-PER"],
                  ["B-PER", "I-LOC", "E-LOC"], ["B-PER", "E-LOC"],
                  ["B-PER", "E-PER", "E-PER"], ["S-PER", "I-PER", "E-PER"]],
    }
    for scheme, sentences in cases.items():
        for sentence in sentences:
            reference = seqeval_scheme.Entities([sentence], SCHEMES[scheme]).entities[0]
            ours = entity_scores([sentence], [sentence], scheme=scheme, by_type=True)
            assert {name: row["support"] for name, row in ours.items()} == {
                name: sum(e.tag == name for e in reference)
                for name in {e.tag for e in reference}}, sentence


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="`true_tags` has 2 sentences but `predicted_tags` has 1"):
        entity_scores([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="Sentence 1 has 2 true tags but 1 predicted"):
        entity_scores([["O"], ["B-PER", "O"]], [["O"], ["B-PER"]])
    with pytest.raises(ValueError, match="empty"):
        entity_scores([], [])
    with pytest.raises(ValueError, match=r"Sentence 0, position 1: 'E-PER' is not a IOB2 tag"):
        entity_scores([["B-PER", "E-PER"]], [["O", "O"]])
    with pytest.raises(ValueError, match="'PER' is not a BIOES tag"):
        entity_scores([["PER"]], [["O"]], scheme="BIOES")
    with pytest.raises(ValueError, match="Unknown scheme 'IOB1'"):
        entity_scores([["O"]], [["O"]], scheme="IOB1")
    with pytest.raises(TypeError, match=r"predicted_tags\[0\] is a str"):
        entity_scores([["O"]], ["O"])
    with pytest.raises(TypeError, match="the tag 3 is a int"):
        entity_scores([["O"]], [[3]])


def test_no_entities_scores_zero():
    assert entity_scores([["O", "O"]], [["O", "O"]]) == _seqeval(
        [["O", "O"]], [["O", "O"]], "IOB2")
    assert entity_scores([["O"]], [["O"]], by_type=True) == {}
