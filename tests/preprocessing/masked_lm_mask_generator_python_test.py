"""MaskedLMMaskGenerator's Python implementation: every deterministic rule
equal to the TensorFlow path's, the random ones by their statistics."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.masked_lm_mask_generator import MaskedLMMaskGenerator
from kzoo.preprocessing.preprocessing_layer import numpy_outputs
from kzoo.testing import to_numpy
from kzoo.testing.without_tensorflow import check_without_tensorflow

PAD, CLS, SEP, MASK = 0, 101, 102, 103
SPECIALS = (PAD, CLS, SEP, MASK)
VOCABULARY_SIZE = 1000
ROW = st.lists(st.one_of(st.sampled_from(SPECIALS), st.integers(104, 999)),
               max_size=20)


def _python(masker, inputs):
    with engine_scope("python"), numpy_outputs():
        return masker(inputs)


def _tensorflow(masker, inputs):
    with engine_scope("tensorflow"):
        out = masker(inputs)
    return {key: (value if isinstance(value, list) else to_numpy(value))
            for key, value in out.items()}


def _assert_same(python, tensorflow):
    assert python.keys() == tensorflow.keys()
    for key, expected in tensorflow.items():
        actual = python[key]
        if isinstance(expected, list):  # ragged token ids
            assert isinstance(actual, list), key
            assert actual == expected, key
            continue
        assert actual.shape == expected.shape, key
        assert actual.dtype == expected.dtype, key
        np.testing.assert_array_equal(actual, expected, err_msg=key)


@st.composite
def inputs(draw):
    form = draw(st.sampled_from(["ragged", "dense", "unbatched"]))
    if form == "unbatched":
        return draw(ROW)
    rows = draw(st.lists(ROW, min_size=1, max_size=6))
    if form == "ragged":
        if len({len(r) for r in rows}) == 1:
            rows[0] = rows[0] + [PAD]  # keep it ragged
        return rows
    length = max(len(r) for r in rows)
    return np.array([r + [PAD] * (length - len(r)) for r in rows], "int32")


@settings(max_examples=100)
@given(inputs(), st.sampled_from([0.0, 1.0]),
       st.sampled_from([(1.0, 0.0), (0.0, 0.0)]),
       st.sampled_from([None, 25]))
def test_deterministic_settings_match_tensorflow(
        ids, selection_rate, rates, selection_length):
    """Rate 0 or 1 and all-mask or all-keep corruption draw nothing that
    shows: both engines must give the same outputs, shapes and dtypes."""
    kwargs = dict(vocabulary_size=VOCABULARY_SIZE, mask_token_id=MASK,
                  unselectable_token_ids=SPECIALS,
                  mask_selection_rate=selection_rate,
                  mask_token_rate=rates[0], random_token_rate=rates[1],
                  mask_selection_length=selection_length, seed=1)
    python = _python(MaskedLMMaskGenerator(**kwargs), ids)
    _assert_same(python, _tensorflow(MaskedLMMaskGenerator(**kwargs), ids))


@settings(max_examples=60)
@given(inputs(), st.integers(1, 6), st.integers(0, 2**31))
def test_capped_selection_keeps_every_rule(ids, selection_length, seed):
    """Selection rate 1 with a cap: the count (min(k, cap)) and the layout
    are fixed, the positions random among the selectable ones."""
    kwargs = dict(vocabulary_size=VOCABULARY_SIZE, mask_token_id=MASK,
                  unselectable_token_ids=SPECIALS, mask_selection_rate=1.0,
                  mask_selection_length=selection_length, seed=seed)
    python = _python(MaskedLMMaskGenerator(**kwargs), ids)
    tensorflow = _tensorflow(MaskedLMMaskGenerator(**kwargs), ids)
    for key in ("mask_positions", "mask_ids", "mask_weights"):
        assert python[key].shape == tensorflow[key].shape, key
        assert python[key].dtype == tensorflow[key].dtype, key
    np.testing.assert_array_equal(python["mask_weights"],
                                  tensorflow["mask_weights"])
    unbatched = isinstance(ids, list) and all(isinstance(v, int) for v in ids)
    rows = [ids] if unbatched else list(ids)
    batched = {k: np.atleast_2d(v) for k, v in python.items()
               if k != "token_ids"}
    new_rows = python["token_ids"]
    if isinstance(new_rows, np.ndarray):
        new_rows = [new_rows] if new_rows.ndim == 1 else list(new_rows)
    for row, new, positions, mask_ids, weights in zip(
            rows, new_rows, batched["mask_positions"], batched["mask_ids"],
            batched["mask_weights"]):
        row, new = np.asarray(row, "int64"), np.asarray(new)
        real = positions[weights == 1.0]
        assert np.all(np.diff(real) > 0)  # ascending, unique
        assert not np.isin(row[real], SPECIALS).any()
        np.testing.assert_array_equal(mask_ids[weights == 1.0], row[real])
        assert np.all(positions[weights == 0.0] == 0)
        assert np.all(mask_ids[weights == 0.0] == 0)
        untouched = np.ones(len(row), bool)
        untouched[real] = False
        np.testing.assert_array_equal(new[untouched], row[untouched])
        assert np.all((new[real] >= 0) & (new[real] < VOCABULARY_SIZE))


def test_selection_rate_and_count_rounding():
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 40, 4000)
    rows = [[CLS] + rng.integers(104, 1000, n).tolist() + [SEP, PAD]
            for n in lengths]
    for rate in (0.15, 0.4):
        masker = MaskedLMMaskGenerator(
            VOCABULARY_SIZE, MASK, mask_selection_rate=rate,
            unselectable_token_ids=SPECIALS, seed=3)
        counts = _python(masker, rows)["mask_weights"].sum(axis=1)
        # Stochastic rounding: floor(rate * k) or the next integer, with the
        # expected count exactly rate * k.
        low = np.floor(rate * lengths)
        assert np.all((counts == low) | (counts == low + 1))
        fraction = rate * lengths - low
        spread = np.sqrt(np.sum(fraction * (1 - fraction)))
        assert abs(counts.sum() - rate * lengths.sum()) < 4 * spread + 1


def test_each_selectable_position_is_equally_likely():
    rows = np.full((5000, 22), 500, "int32")
    rows[:, 0], rows[:, -1] = CLS, SEP
    masker = MaskedLMMaskGenerator(VOCABULARY_SIZE, MASK,
                                   unselectable_token_ids=SPECIALS, seed=4)
    out = _python(masker, rows)
    chosen = np.zeros(22)
    weights = out["mask_weights"] == 1.0
    np.add.at(chosen, out["mask_positions"][weights], 1)
    assert chosen[0] == chosen[-1] == 0
    frequency = chosen[1:-1] / len(rows)  # 20 selectable: 3 chosen, 0.15 each
    standard_error = np.sqrt(0.15 * 0.85 / len(rows))
    assert np.abs(frequency - 0.15).max() < 5 * standard_error


def test_mask_random_keep_split():
    rng = np.random.default_rng(5)
    rows = rng.integers(104, 1000, (1000, 120)).astype("int32")
    masker = MaskedLMMaskGenerator(VOCABULARY_SIZE, MASK,
                                   unselectable_token_ids=SPECIALS, seed=6)
    out = _python(masker, rows)
    real = out["mask_weights"] == 1.0
    row_index = np.nonzero(real)[0]
    before = rows[row_index, out["mask_positions"][real]]
    after = out["token_ids"][row_index, out["mask_positions"][real]]
    n = len(before)
    assert n == 18_000  # 0.15 * 120 selectable per row, exactly
    masked = np.mean(after == MASK)
    kept = np.mean(after == before)
    replaced = 1 - masked - kept
    for observed, expected in [(masked, 0.8), (kept, 0.1), (replaced, 0.1)]:
        assert abs(observed - expected) < 4 * np.sqrt(expected * (1 - expected) / n)
    untouched = np.ones(rows.shape, bool)
    untouched[row_index, out["mask_positions"][real]] = False
    np.testing.assert_array_equal(out["token_ids"][untouched], rows[untouched])


def test_random_replacements_are_uniform():
    masker = MaskedLMMaskGenerator(
        vocabulary_size=10, mask_token_id=3, mask_selection_rate=1.0,
        mask_token_rate=0.0, random_token_rate=1.0, seed=3)
    ids = _python(masker, [[7] * 100] * 200)["token_ids"]
    counts = np.bincount(ids.ravel(), minlength=10)
    assert counts.size == 10
    assert np.abs(counts / 2000 - 1).max() < 0.1  # 2000 expected, ~4.5 sigma


def test_seeded_stream():
    rows = np.random.default_rng(7).integers(104, 1000, (16, 30)).tolist()
    kwargs = dict(vocabulary_size=VOCABULARY_SIZE, mask_token_id=MASK,
                  unselectable_token_ids=SPECIALS)
    masker = MaskedLMMaskGenerator(seed=5, **kwargs)
    a, b = _python(masker, rows), _python(masker, rows)
    again = MaskedLMMaskGenerator(seed=5, **kwargs)
    np.testing.assert_array_equal(_python(again, rows)["mask_positions"],
                                  a["mask_positions"])
    np.testing.assert_array_equal(_python(again, rows)["mask_positions"],
                                  b["mask_positions"])
    assert a["mask_positions"].tolist() != b["mask_positions"].tolist()
    other = _python(MaskedLMMaskGenerator(seed=6, **kwargs), rows)
    assert other["mask_positions"].tolist() != a["mask_positions"].tolist()
    masker.reset_seed()
    np.testing.assert_array_equal(_python(masker, rows)["mask_positions"],
                                  a["mask_positions"])


def test_empty_inputs_match_tensorflow():
    kwargs = dict(vocabulary_size=VOCABULARY_SIZE, mask_token_id=MASK,
                  mask_token_rate=1.0, random_token_rate=0.0, seed=1)
    for ids in ([], np.zeros((0, 4), "int32"), np.zeros((3, 0), "int32"),
                [[], [5, 6]]):
        for length in (None, 3):
            masker = MaskedLMMaskGenerator(mask_selection_length=length,
                                           mask_selection_rate=1.0, **kwargs)
            _assert_same(_python(masker, ids), _tensorflow(masker, ids))


@pytest.mark.parametrize("ids, error, match", [
    (np.zeros((1, 2, 3), "int32"), ValueError, "rank 3"),
    (np.array([1.5]), TypeError, "integer token ids"),
])
def test_errors_match(ids, error, match):
    masker = MaskedLMMaskGenerator(vocabulary_size=10, mask_token_id=3)
    for name in ("tensorflow", "python"):
        with engine_scope(name), pytest.raises(error, match=match):
            masker(ids)


def test_python_engine_rejects_ragged_floats():
    masker = MaskedLMMaskGenerator(vocabulary_size=10, mask_token_id=3)
    with engine_scope("python"), pytest.raises(TypeError, match="integer"):
        masker([[1.5, 2.0], [3.0]])


def test_runs_without_tensorflow():
    out = check_without_tensorflow("""
        from kzoo.preprocessing import MaskedLMMaskGenerator
        from kzoo.testing import to_numpy
        masker = MaskedLMMaskGenerator(
            vocabulary_size=10, mask_token_id=9, mask_selection_rate=1.0,
            mask_token_rate=1.0, random_token_rate=0.0,
            unselectable_token_ids=(0, 1, 2), seed=42)
        out = masker([[1, 5, 6, 2, 0], [1, 7, 2, 0, 0]])
        print(to_numpy(out["token_ids"]).tolist())
        print(to_numpy(out["mask_positions"]).tolist())
    """)
    assert out.split("\n")[:2] == ["[[1, 9, 9, 2, 0], [1, 9, 2, 0, 0]]",
                                    "[[1, 2], [1, 0]]"]
