import numpy as np
import pytest
import tensorflow as tf

from kzoo.preprocessing.masked_lm_mask_generator import MaskedLMMaskGenerator
from kzoo.preprocessing.multi_segment_packer import MultiSegmentPacker
from kzoo.testing.test_case import assert_all_equal
from kzoo.testing.test_case import run_preprocessing_layer_test
from kzoo.testing.test_case import to_numpy

SPECIALS = (0, 101, 102, 103)  # [PAD] [CLS] [SEP] [MASK]
ALL_MASK = dict(vocabulary_size=1000, mask_token_id=103, mask_selection_rate=1.0,
                mask_token_rate=1.0, random_token_rate=0.0,
                unselectable_token_ids=SPECIALS, seed=1)


def _random_batch(rng, batch_size, max_length):
    """Rows `[CLS] words [SEP]` of random length, ids outside SPECIALS."""
    return [[101] + rng.integers(104, 1000, rng.integers(0, max_length)).tolist()
            + [102] for _ in range(batch_size)]


def _padded(rows, length):
    return np.array([row + [0] * (length - len(row)) for row in rows], "int32")


def test_layer_basics_eager_tf_data_and_serialization():
    rows = _random_batch(np.random.default_rng(0), 6, 12)
    kwargs = dict(vocabulary_size=1000, mask_token_id=103,
                  unselectable_token_ids=SPECIALS, mask_selection_rate=0.3,
                  seed=7)
    run_preprocessing_layer_test(MaskedLMMaskGenerator, kwargs, rows, random=True)
    run_preprocessing_layer_test(MaskedLMMaskGenerator, kwargs,
                                 _padded(rows, 14), random=True)
    run_preprocessing_layer_test(
        MaskedLMMaskGenerator, dict(kwargs, mask_selection_length=3),
        rows, random=True)


def test_select_and_mask_everything():
    rows = [[101, 5, 6, 102, 7, 102], [101, 8, 102]]
    out = MaskedLMMaskGenerator(**ALL_MASK)(rows)
    assert_all_equal(out["token_ids"], [[101, 103, 103, 102, 103, 102],
                                        [101, 103, 102]])
    assert_all_equal(out["mask_positions"], [[1, 2, 4], [1, 0, 0]])
    assert_all_equal(out["mask_ids"], [[5, 6, 7], [8, 0, 0]])
    assert_all_equal(out["mask_weights"], [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    out = MaskedLMMaskGenerator(**ALL_MASK)(_padded(rows, 8))  # dense, padded
    assert_all_equal(out["token_ids"], [[101, 103, 103, 102, 103, 102, 0, 0],
                                        [101, 103, 102, 0, 0, 0, 0, 0]])
    assert_all_equal(out["mask_positions"], [[1, 2, 4], [1, 0, 0]])
    out = MaskedLMMaskGenerator(**ALL_MASK)([101, 5, 102])  # unbatched
    assert_all_equal(out["token_ids"], [101, 103, 102])
    assert_all_equal(out["mask_positions"], [1])


def test_select_everything_random_or_unchanged():
    rows = _random_batch(np.random.default_rng(1), 8, 20)
    out = MaskedLMMaskGenerator(**dict(ALL_MASK, mask_token_rate=0.0))(rows)
    assert_all_equal(out["token_ids"], rows)  # selected but kept
    assert_all_equal(out["mask_ids"], _padded([r[1:-1] for r in rows], 19)[
        :, :to_numpy(out["mask_ids"]).shape[1]])
    out = MaskedLMMaskGenerator(**dict(
        ALL_MASK, mask_token_rate=0.0, random_token_rate=1.0))(rows)
    flat = np.concatenate([np.array(r[1:-1]) for r in out["token_ids"]])
    original = np.concatenate([np.array(r[1:-1]) for r in rows])
    assert flat.min() >= 0 and flat.max() < 1000
    assert np.mean(flat != original) > 0.95  # 1/1000 chance to draw the same


def test_select_nothing():
    rows = [[101, 5, 6, 102], [101, 102]]
    out = MaskedLMMaskGenerator(**dict(ALL_MASK, mask_selection_rate=0.0))(rows)
    assert_all_equal(out["token_ids"], rows)
    assert to_numpy(out["mask_positions"]).shape == (2, 0)
    out = MaskedLMMaskGenerator(**dict(
        ALL_MASK, mask_selection_rate=0.0, mask_selection_length=4))(rows)
    assert_all_equal(out["mask_positions"], np.zeros((2, 4), "int32"))
    assert_all_equal(out["mask_weights"], np.zeros((2, 4), "float32"))


def test_unselectable_never_selected_and_cap():
    rng = np.random.default_rng(2)
    rows = [[101] + rng.choice([0, 5, 101, 102, 103, 6], 30).tolist()
            for _ in range(20)]
    out = MaskedLMMaskGenerator(**dict(ALL_MASK, mask_selection_length=4))(
        _padded(rows, 40))
    positions = to_numpy(out["mask_positions"])
    weights = to_numpy(out["mask_weights"])
    assert positions.shape == (20, 4)
    for row, pos, w in zip(rows, positions, weights):
        selectable = [i for i, t in enumerate(row) if t in (5, 6)]
        real = pos[w == 1.0]
        assert len(real) == min(4, len(selectable))
        assert set(real) <= set(selectable)
        assert list(real) == sorted(real)


def test_stochastic_rounding_of_the_count():
    rows = [[101] + [7] * 10 + [102]] * 2000  # 10 selectable: n is 1 or 2
    out = MaskedLMMaskGenerator(**dict(ALL_MASK, mask_selection_rate=0.15))(rows)
    counts = to_numpy(out["mask_weights"]).sum(axis=1)
    assert set(counts.tolist()) == {1.0, 2.0}
    assert abs(counts.mean() - 1.5) < 0.05


def test_same_seed_same_output_different_seed_differs():
    rows = _random_batch(np.random.default_rng(3), 16, 30)
    kwargs = dict(vocabulary_size=1000, mask_token_id=103,
                  unselectable_token_ids=SPECIALS)
    a = MaskedLMMaskGenerator(seed=5, **kwargs)(rows)
    assert_all_equal(MaskedLMMaskGenerator(seed=5, **kwargs)(rows), a)
    b = MaskedLMMaskGenerator(seed=6, **kwargs)(rows)
    assert to_numpy(a["mask_positions"]).tolist() != to_numpy(
        b["mask_positions"]).tolist()


def test_statistics():
    rng = np.random.default_rng(4)
    rows = _random_batch(rng, 400, 600)  # ~120k selectable tokens
    masker = MaskedLMMaskGenerator(vocabulary_size=1000, mask_token_id=103,
                                   unselectable_token_ids=SPECIALS, seed=11)
    out = masker(_padded(rows, 601))
    original = _padded(rows, 601)
    new = to_numpy(out["token_ids"])
    num_selectable = np.isin(original, SPECIALS, invert=True).sum()
    assert num_selectable > 100_000
    weights = to_numpy(out["mask_weights"])
    positions = to_numpy(out["mask_positions"])
    num_selected = weights.sum()
    assert abs(num_selected / num_selectable - 0.15) < 0.005
    row_index = np.repeat(np.arange(len(rows))[:, None], positions.shape[1], 1)
    real = weights == 1.0
    before = original[row_index[real], positions[real]]
    after = new[row_index[real], positions[real]]
    assert_all_equal(to_numpy(out["mask_ids"])[real], before)
    assert not np.isin(before, SPECIALS).any()  # padding, specials never chosen
    untouched = np.ones_like(original, bool)
    untouched[row_index[real], positions[real]] = False
    assert_all_equal(new[untouched], original[untouched])
    masked = np.mean(after == 103)
    unchanged = np.mean(after == before)
    assert abs(masked - 0.8) < 0.015
    assert abs(unchanged - 0.1) < 0.015
    assert abs(1 - masked - unchanged - 0.1) < 0.015


def test_random_replacements_are_uniform():
    rows = [[7] * 100] * 200
    masker = MaskedLMMaskGenerator(
        vocabulary_size=10, mask_token_id=3, mask_selection_rate=1.0,
        mask_token_rate=0.0, random_token_rate=1.0, seed=3)
    counts = np.bincount(to_numpy(masker(rows)["token_ids"]).ravel(),
                         minlength=10)
    assert counts.size == 10
    assert np.abs(counts / 2000 - 1).max() < 0.1  # 2000 expected, ~4.5 sigma


def test_in_tf_data_after_the_packer():
    packer = MultiSegmentPacker(10, start_value=101, end_value=102)
    masker = MaskedLMMaskGenerator(**dict(ALL_MASK, mask_selection_length=5))
    a = tf.ragged.constant([[5, 6], [7, 8, 9]])
    b = tf.ragged.constant([[20], [21, 22]])
    ds = tf.data.Dataset.from_tensor_slices((a, b)).batch(2).map(packer)
    ds = ds.map(lambda x: {**x, **masker(x["token_ids"])})
    out = next(iter(ds))
    assert_all_equal(out["token_ids"], [[101, 103, 103, 102, 103, 102, 0, 0, 0, 0],
                                        [101, 103, 103, 103, 102, 103, 103, 102, 0, 0]])
    assert_all_equal(out["mask_positions"], [[1, 2, 4, 0, 0], [1, 2, 3, 5, 6]])
    assert_all_equal(out["mask_weights"], [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])


def test_bad_arguments():
    kwargs = dict(vocabulary_size=10, mask_token_id=3)
    with pytest.raises(ValueError, match="mask_token_rate \\+ random_token_rate"):
        MaskedLMMaskGenerator(mask_token_rate=0.9, random_token_rate=0.2, **kwargs)
    with pytest.raises(ValueError, match="mask_selection_rate"):
        MaskedLMMaskGenerator(mask_selection_rate=1.5, **kwargs)
    with pytest.raises(ValueError, match="random_token_rate"):
        MaskedLMMaskGenerator(random_token_rate=-0.1, **kwargs)
    with pytest.raises(ValueError, match="mask_token_id"):
        MaskedLMMaskGenerator(vocabulary_size=10, mask_token_id=10)
    with pytest.raises(ValueError, match="mask_selection_length"):
        MaskedLMMaskGenerator(mask_selection_length=0, **kwargs)
    with pytest.raises(TypeError, match="unselectable_token_ids"):
        MaskedLMMaskGenerator(unselectable_token_ids=("[PAD]",), **kwargs)
    with pytest.raises(ValueError, match="rank 3"):
        MaskedLMMaskGenerator(**kwargs)(np.zeros((1, 2, 3), "int32"))
