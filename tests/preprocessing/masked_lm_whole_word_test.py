"""Whole-word masking (MaskedLMMaskGenerator(whole_word=True)) on both
preprocessing engines: the rules exactly, the random choices by their
statistics, with the words found here independently of the layer."""

import importlib.util

import numpy as np
import pytest

from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.masked_lm_mask_generator import MaskedLMMaskGenerator
from kzoo.preprocessing.preprocessing_layer import numpy_outputs
from kzoo.testing import to_numpy
from kzoo.testing.without_tensorflow import check_without_tensorflow

pytestmark = pytest.mark.without_tensorflow

PAD, CLS, SEP, MASK = 0, 101, 102, 103
SPECIALS = (PAD, CLS, SEP, MASK)
CONTINUATIONS = tuple(range(600, 1000))  # "##" pieces; 104..599 start words
ENGINES = ["python", pytest.param("tensorflow", marks=pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None, reason="needs TensorFlow"))]


def _masker(**kwargs):
    defaults = dict(vocabulary_size=1000, mask_token_id=MASK,
                    unselectable_token_ids=SPECIALS, whole_word=True,
                    continuation_token_ids=CONTINUATIONS, seed=3)
    return MaskedLMMaskGenerator(**dict(defaults, **kwargs))


def _run(masker, inputs, engine):
    with engine_scope(engine), numpy_outputs():
        out = masker(inputs)
    return {key: value if isinstance(value, list) else to_numpy(value)
            for key, value in out.items()}


def _random_rows(rng, num_rows, max_words):
    """`[CLS] words [SEP] words [SEP]` padded with 0; each word one start
    piece and 0-3 continuations. Returns the padded array."""
    rows = []
    for _ in range(num_rows):
        row = [CLS]
        for segment in range(2):
            for _ in range(rng.integers(0, max_words)):
                row += [int(rng.integers(104, 600))]
                row += rng.integers(600, 1000, rng.choice(4, p=[.5, .3, .1, .1])).tolist()
            row += [SEP]
        rows.append(row)
    length = max(len(r) for r in rows)
    return np.array([r + [PAD] * (length - len(r)) for r in rows], "int32")


def _words(row):
    """The words of one row as lists of positions (written out as Google's
    `create_masked_lm_predictions` groups `##` pieces, specials excluded)."""
    words = []
    for i, token in enumerate(row):
        if token in SPECIALS:
            continue
        if token in CONTINUATIONS and words and words[-1][-1] == i - 1:
            words[-1].append(i)
        else:
            words.append([i])
    return words


def _selected_positions(out):
    weights, positions = out["mask_weights"], out["mask_positions"]
    return [set(p[w == 1.0].tolist()) for p, w in zip(positions, weights)]


@pytest.mark.parametrize("engine", ENGINES)
def test_selects_whole_words_at_the_rate_with_80_10_10_per_word(engine):
    rows = _random_rows(np.random.default_rng(0), 200, 60)
    out = _run(_masker(), rows, engine)
    new = out["token_ids"]
    outcomes, num_words = [], 0
    for r, (row, chosen) in enumerate(zip(rows, _selected_positions(out))):
        words = _words(row)
        num_words += len(words)
        covered = set()
        for word in words:
            hit = chosen & set(word)
            assert not hit or hit == set(word), "a word is split"
            if hit:
                covered |= hit
                before, after = row[word], new[r, word]
                if (after == MASK).all():
                    outcomes.append("mask")
                elif (after == before).all():
                    outcomes.append("keep")
                else:
                    outcomes.append("random")
        assert covered == chosen  # specials and padding never chosen
        untouched = [i for i in range(len(row)) if i not in chosen]
        np.testing.assert_array_equal(new[r, untouched], row[untouched])
        real = out["mask_weights"][r] == 1.0
        np.testing.assert_array_equal(out["mask_ids"][r][real],
                                      row[out["mask_positions"][r][real]])
    # Binomial tolerances (4 standard deviations) from the counts.
    n, num_selected = num_words, len(outcomes)
    assert n > 10_000
    assert abs(num_selected / n - 0.15) < 4 * np.sqrt(0.15 * 0.85 / n)
    outcomes = np.array(outcomes)
    m = len(outcomes)
    for name, rate in [("mask", 0.8), ("keep", 0.1), ("random", 0.1)]:
        share = np.mean(outcomes == name)
        assert abs(share - rate) < 4 * np.sqrt(rate * (1 - rate) / m), name


@pytest.mark.parametrize("engine", ENGINES)
def test_cap_skips_a_word_that_does_not_fit_and_fills_with_later_ones(engine):
    rows = _random_rows(np.random.default_rng(1), 300, 6)
    cap = 3  # words of 4 pieces never fit
    out = _run(_masker(mask_selection_rate=1.0, mask_selection_length=cap),
               rows, engine)
    assert out["mask_positions"].shape == (300, cap)
    skipped_then_filled = 0
    for row, chosen in zip(rows, _selected_positions(out)):
        words = _words(row)
        taken = [w for w in words if set(w) <= chosen]
        assert sum(map(len, taken)) == len(chosen) <= cap
        room = cap - len(chosen)
        # Every word left out was too long for the room left when its turn
        # came (the room only shrinks): none fits now.
        left_out = [w for w in words if not set(w) <= chosen]
        assert all(len(w) > room for w in left_out)
        if any(len(w) > cap for w in words) and taken:
            skipped_then_filled += 1
    assert skipped_then_filled > 10  # the skip-and-continue case occurred


@pytest.mark.parametrize("engine", ENGINES)
def test_exact_rules(engine):
    # Continuation pieces after a special or at the start begin a word.
    rows = [[CLS, 104, 600, 601, 105, SEP, 700, 106, SEP],
            [600, 601, 107, SEP, 0, 0, 0, 0, 0]]
    everything = _masker(mask_selection_rate=1.0, mask_token_rate=1.0,
                         random_token_rate=0.0)
    out = _run(everything, np.array(rows, "int32"), engine)
    np.testing.assert_array_equal(out["token_ids"], [
        [CLS, MASK, MASK, MASK, MASK, SEP, MASK, MASK, SEP],
        [MASK, MASK, MASK, SEP, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(out["mask_positions"],
                                  [[1, 2, 3, 4, 6, 7], [0, 1, 2, 0, 0, 0]])
    # One sequence, ragged rows, an empty row, nothing selectable.
    single = _run(everything, [CLS, 104, 600, SEP], engine)
    np.testing.assert_array_equal(single["mask_positions"], [1, 2])
    ragged = _run(everything, [[CLS, SEP], [], [105, 601]], engine)
    assert [list(r) for r in ragged["token_ids"]] == [[CLS, SEP], [], [MASK, MASK]]
    np.testing.assert_array_equal(ragged["mask_weights"],
                                  [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    none = _run(_masker(mask_selection_rate=0.0), np.array(rows, "int32"), engine)
    np.testing.assert_array_equal(none["token_ids"], rows)
    assert none["mask_positions"].shape == (2, 0)


@pytest.mark.parametrize("engine", ENGINES)
def test_same_seed_same_masks(engine):
    rows = _random_rows(np.random.default_rng(2), 16, 20)
    first = _run(_masker(seed=5), rows, engine)
    again = _run(_masker(seed=5), rows, engine)
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    other = _run(_masker(seed=6), rows, engine)
    assert not np.array_equal(first["token_ids"], other["token_ids"])


def test_config_and_errors():
    masker = _masker(mask_selection_length=7)
    restored = MaskedLMMaskGenerator.from_config(masker.get_config())
    assert restored.whole_word and restored.continuation_token_ids == CONTINUATIONS
    with pytest.raises(ValueError, match="continuation_token_ids"):
        MaskedLMMaskGenerator(vocabulary_size=10, mask_token_id=9, whole_word=True)
    with pytest.raises(ValueError, match="vocabulary_size"):
        MaskedLMMaskGenerator(vocabulary_size=10, mask_token_id=9, whole_word=True,
                              continuation_token_ids=(3, 12))
    with pytest.raises(TypeError, match="whole_word"):
        MaskedLMMaskGenerator(vocabulary_size=10, mask_token_id=9, whole_word="yes",
                              continuation_token_ids=(3,))


def test_runs_without_tensorflow():
    out = check_without_tensorflow("""
        from kzoo.preprocessing import MaskedLMMaskGenerator
        from kzoo.testing import to_numpy
        masker = MaskedLMMaskGenerator(
            vocabulary_size=10, mask_token_id=9, mask_selection_rate=1.0,
            mask_selection_length=2, mask_token_rate=1.0, random_token_rate=0.0,
            unselectable_token_ids=(0, 1, 2), whole_word=True,
            continuation_token_ids=(7, 8), seed=1)
        out = masker([[1, 5, 7, 8, 6, 2], [1, 6, 7, 2, 0, 0]])
        print(to_numpy(out["token_ids"]).tolist())
    """)
    assert out.split("\n")[0] == "[[1, 5, 7, 8, 9, 2], [1, 9, 9, 2, 0, 0]]"
