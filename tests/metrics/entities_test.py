"""`kzoo.metrics.entity_scores` against seqeval 1.2.2: its default mode
(conlleval's counting, which seqeval's own tests check against conlleval.pl)
and its strict mode (`mode="strict", scheme=...`), on seqeval's documented
examples, on every short tag sequence (a superset of the sequences of
seqeval's tests/test_scheme.py) and on thousands of seeded random tag
sequences, ill-formed ones included."""

import itertools
import warnings

import numpy as np
import pytest

from kzoo.metrics import entity_scores

pytestmark = pytest.mark.without_tensorflow

seqeval_metrics = pytest.importorskip("seqeval.metrics")
seqeval_scheme = pytest.importorskip("seqeval.scheme")

SCHEMES = {"IOB2": seqeval_scheme.IOB2, "IOB1": seqeval_scheme.IOB1,
           "BIOES": seqeval_scheme.IOBES}
PREFIXES = {"IOB2": "BIO", "IOB1": "BIO", "BIOES": "BIOES"}
MODES = ["conlleval", "strict"]
TYPES = ["PER", "LOC", "MISC"]

# The inputs of seqeval's docstring examples (seqeval/metrics/sequence_labeling.py),
# of its README's strict-mode example, and the first sentences of its
# tests/data/ground_truth.txt (CoNLL-2000 chunks, a tagger's IOB1-style output).
DOCUMENTED_IOB2 = [
    ([["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]],
     [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]),
    ([["O", "O", "B-MISC", "I-MISC", "B-MISC", "O", "O"], ["B-PER", "I-PER", "O"]],
     [["O", "O", "B-MISC", "I-MISC", "B-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]),
    ([["O", "O", "O", "B-MISC", "I-MISC", "O", "B-ORG"], ["B-PER", "I-PER", "O", "B-PER"]],
     [["O", "O", "B-MISC", "I-MISC", "I-MISC", "O", "O"], ["B-PER", "I-PER", "O", "B-MISC"]]),
    ([["B-NP", "I-NP", "O"]], [["I-NP", "I-NP", "O"]]),
    ([["B-NP", "I-NP", "I-NP", "B-NP", "I-NP", "I-NP", "B-VP", "B-NP", "B-VP",
       "B-NP", "I-NP", "I-NP", "B-VP", "B-NP", "I-NP", "B-PP", "B-NP", "I-NP",
       "B-VP", "I-VP", "B-NP", "I-NP", "B-PP", "B-NP", "B-NP", "I-NP", "I-NP", "O"],
      ["B-NP", "B-VP", "B-NP", "I-NP", "B-VP", "B-SBAR", "B-NP", "B-VP", "I-VP",
       "B-NP", "I-NP", "I-NP", "I-NP", "B-PP", "B-NP", "I-NP", "O"]],
     [["I-NP", "I-NP", "I-NP", "B-NP", "I-NP", "I-NP", "B-VP", "B-NP", "B-VP",
       "B-NP", "I-NP", "I-NP", "B-VP", "B-NP", "I-NP", "B-PP", "I-NP", "I-NP",
       "B-PP", "I-VP", "I-NP", "I-NP", "B-PP", "I-NP", "B-NP", "I-NP", "I-NP", "O"],
      ["I-NP", "B-VP", "B-NP", "I-NP", "B-VP", "B-PP", "B-NP", "B-PP", "I-VP",
       "I-NP", "B-NP", "I-NP", "I-NP", "B-PP", "B-NP", "I-NP", "O"]]),
]


def _kwargs(mode, scheme):
    return {} if mode == "conlleval" else {"mode": "strict", "scheme": SCHEMES[scheme]}


def _seqeval(true, predicted, scheme, mode):
    kwargs = _kwargs(mode, scheme)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero divisions: seqeval warns, gives 0
        return {
            "precision": float(seqeval_metrics.precision_score(true, predicted, **kwargs)),
            "recall": float(seqeval_metrics.recall_score(true, predicted, **kwargs)),
            "f1": float(seqeval_metrics.f1_score(true, predicted, **kwargs)),
        }


def _seqeval_by_type(true, predicted, scheme, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = seqeval_metrics.classification_report(
            true, predicted, output_dict=True, **_kwargs(mode, scheme))
    return {name: {"precision": row["precision"], "recall": row["recall"],
                   "f1": row["f1-score"], "support": int(row["support"])}
            for name, row in report.items() if not name.endswith(" avg")}


def _assert_same(true, predicted, scheme, mode):
    ours = entity_scores(true, predicted, scheme=scheme, mode=mode)
    assert ours == pytest.approx(_seqeval(true, predicted, scheme, mode), abs=1e-12), (
        true, predicted)
    ours = entity_scores(true, predicted, scheme=scheme, by_type=True, mode=mode)
    reference = _seqeval_by_type(true, predicted, scheme, mode)
    assert list(ours) == sorted(reference), (true, predicted)
    for name, row in reference.items():
        assert ours[name] == pytest.approx(row, abs=1e-12), (name, true, predicted)


def _well_formed(rng, length, scheme):
    """Random entities written correctly in IOB2 or BIOES."""
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


def _random_tag(rng, scheme, types=TYPES):
    prefix = rng.choice(list(PREFIXES[scheme]))
    return "O" if prefix == "O" else f"{prefix}-{rng.choice(types)}"


def _case(rng, scheme):
    """A few sentences: true tags well-formed or random (ill-formed), the
    predictions a copy with some tags replaced by random ones."""
    true, predicted = [], []
    for _ in range(rng.integers(1, 5)):
        length = int(rng.integers(0, 12))
        if rng.random() < 0.6 and scheme != "IOB1":
            sentence = _well_formed(rng, length, scheme)
        else:
            sentence = [_random_tag(rng, scheme) for _ in range(length)]
        noise = rng.random() * 0.5
        true.append(sentence)
        predicted.append([_random_tag(rng, scheme) if rng.random() < noise else tag
                          for tag in sentence])
    return true, predicted


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("true, predicted", DOCUMENTED_IOB2)
def test_seqeval_documented_examples(true, predicted, mode):
    _assert_same(true, predicted, "IOB2", mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_every_short_sequence_matches_seqeval(scheme, mode):
    # Every sequence of up to 3 tags over two types, scored against itself
    # and against the others of its length: the entities' types, starts and
    # ends all agree with seqeval's.
    alphabet = ["O"] + [f"{p}-{t}" for p in PREFIXES[scheme] if p != "O"
                        for t in ("PER", "ORG")]
    for length in (1, 2, 3):
        sequences = [list(s) for s in itertools.product(alphabet, repeat=length)]
        for shift in range(len(alphabet)):
            _assert_same(sequences, sequences[shift:] + sequences[:shift], scheme, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_random_tags_match_seqeval(scheme, mode):
    rng = np.random.default_rng(sum(map(ord, scheme + mode)))
    ill_formed = 0
    for _ in range(400):
        true, predicted = _case(rng, scheme)
        _assert_same(true, predicted, scheme, mode)
        ill_formed += any(
            tag[0] == "I" and (i == 0 or sentence[i - 1][2:] != tag[2:])
            for sentence in predicted for i, tag in enumerate(sentence))
    assert ill_formed > 100  # the cases exercise stray I- tags


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("num_types", [2, 3])
def test_random_ill_formed_iob_sequences_match_seqeval(num_types, mode):
    # Independent random B-/I-/O tags: most sequences are ill-formed IOB2.
    rng = np.random.default_rng(num_types + 10 * len(mode))
    types = TYPES[:num_types]
    for _ in range(1500):
        sentences = [int(rng.integers(1, 10)) for _ in range(rng.integers(1, 4))]
        true = [[_random_tag(rng, "IOB2", types) for _ in range(n)] for n in sentences]
        predicted = [[_random_tag(rng, "IOB2", types) if rng.random() < 0.5 else tag
                      for tag in sentence] for sentence in true]
        _assert_same(true, predicted, "IOB2", mode)


def test_modes_differ_where_conlleval_repairs():
    # conlleval opens an entity at a stray I- tag; strict mode ignores it.
    true, predicted = [["B-PER", "I-PER", "O"]], [["I-PER", "I-PER", "O"]]
    assert entity_scores(true, predicted)["f1"] == 1.0
    assert entity_scores(true, predicted, mode="strict")["f1"] == 0.0


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="`true_tags` has 2 sentences but `predicted_tags` has 1"):
        entity_scores([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="Sentence 1 has 2 true tags but 1 predicted"):
        entity_scores([["O"], ["B-PER", "O"]], [["O"], ["B-PER"]])
    with pytest.raises(ValueError, match="empty"):
        entity_scores([], [])
    with pytest.raises(ValueError, match=r"Sentence 0, position 1: 'E-PER' is not a IOB2 tag"):
        entity_scores([["B-PER", "E-PER"]], [["O", "O"]])
    with pytest.raises(ValueError, match="'S-PER' is not a IOB1 tag"):
        entity_scores([["S-PER"]], [["O"]], scheme="IOB1", mode="strict")
    with pytest.raises(ValueError, match="'PER' is not a BIOES tag"):
        entity_scores([["PER"]], [["O"]], scheme="BIOES")
    with pytest.raises(ValueError, match="Unknown scheme 'IOE2'"):
        entity_scores([["O"]], [["O"]], scheme="IOE2")
    with pytest.raises(ValueError, match="Unknown mode 'loose'.*'conlleval'.*'strict'"):
        entity_scores([["O"]], [["O"]], mode="loose")
    with pytest.raises(TypeError, match=r"predicted_tags\[0\] is a str"):
        entity_scores([["O"]], ["O"])
    with pytest.raises(TypeError, match="the tag 3 is a int"):
        entity_scores([["O"]], [[3]])


@pytest.mark.parametrize("mode", MODES)
def test_no_entities_scores_zero(mode):
    assert entity_scores([["O", "O"]], [["O", "O"]], mode=mode) == _seqeval(
        [["O", "O"]], [["O", "O"]], "IOB2", mode)
    assert entity_scores([["O"]], [["O"]], by_type=True, mode=mode) == {}
