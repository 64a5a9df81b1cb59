"""ElmoBackbone: shapes, directions, determinism, padding, presets."""

import numpy as np
import pytest

from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.preprocessing import CharacterIds
from kzoo.testing import assert_allclose, run_backbone_test, run_saving_test, to_numpy

TINY = dict(num_layers=2, hidden_dim=8, projection_dim=4, filters=((1, 4), (2, 4)),
            num_highway_layers=1, character_dim=3, max_word_length=10, dropout=0.0)
CHARS = CharacterIds(max_word_length=10, add_sentence_boundaries=True)


def test_backbone_basics():
    run_backbone_test(
        ElmoBackbone, TINY, CHARS(["the river bank", "a bank"]),
        expected_output_shape={"token_output": (2, 5, 4), "lstm_output_1": (2, 5, 8),
                               "lstm_output_2": (2, 5, 8)},
    )


def test_forward_half_sees_the_past_backward_half_the_future():
    backbone = ElmoBackbone(**TINY)
    a = to_numpy(backbone(CHARS(["w x y z"])))
    b = to_numpy(backbone(CHARS(["w x y q"])))  # token 4 (of <S> w x y z </S>) differs
    for key in ("lstm_output_1", "lstm_output_2"):
        fw, bw = slice(0, 4), slice(4, 8)
        np.testing.assert_array_equal(a[key][0, :4, fw], b[key][0, :4, fw])
        assert not np.allclose(a[key][0, 4, fw], b[key][0, 4, fw])
        np.testing.assert_array_equal(a[key][0, 5:, bw], b[key][0, 5:, bw])
        assert not np.allclose(a[key][0, :5, bw], b[key][0, :5, bw])


def test_a_sentence_gets_the_same_vectors_whatever_the_batch():
    backbone = ElmoBackbone(**TINY)
    alone = to_numpy(backbone(CHARS(["a bank"])))
    batch = to_numpy(backbone(CHARS(["a much longer sentence about the river", "a bank"])))
    again = to_numpy(backbone(CHARS(["a bank"])))
    for key in alone:
        assert_allclose(batch[key][1, :4], alone[key][0], atol=1e-6)
        assert np.all(batch[key][1, 4:] == 0)  # padding is zero
        np.testing.assert_array_equal(again[key], alone[key])


def test_call_with_states_continues_from_the_previous_batch():
    backbone = ElmoBackbone(**TINY)
    ids = CHARS(["a b c", "d e"])
    zero, states = backbone.call_with_states(ids)
    assert len(states) == 4 and tuple(states[0][1].shape) == (2, 8)
    assert_allclose(zero["lstm_output_2"], backbone(ids)["lstm_output_2"], atol=1e-6)
    carried, _ = backbone.call_with_states(ids, states)
    assert not np.allclose(to_numpy(carried["lstm_output_1"]), to_numpy(zero["lstm_output_1"]))
    assert_allclose(carried["token_output"], zero["token_output"])  # no state there
    with pytest.raises(ValueError, match="`states` must hold 4"):
        backbone.call_with_states(ids, states[:2])


def test_no_tokens_give_zero_length_outputs():
    backbone = ElmoBackbone(**TINY)
    out = backbone({"character_ids": np.zeros((2, 0, 10), "int32"),
                    "padding_mask": np.zeros((2, 0), "int32")})
    assert tuple(out["lstm_output_2"].shape) == (2, 0, 8)


def test_preset_and_keras_file_round_trips(tmp_path):
    backbone = ElmoBackbone(**TINY)
    ids = CHARS(["one two three"])
    backbone.save_to_preset(str(tmp_path / "preset"))
    restored = ElmoBackbone.from_preset(str(tmp_path / "preset"))
    assert_allclose(restored(ids), backbone(ids), atol=1e-6)
    run_saving_test(backbone, ids, tmp_path)


@pytest.mark.parametrize("bad, match", [
    (dict(num_layers=0), "`num_layers` must be a positive int"),
    (dict(projection_dim=2.5), "`projection_dim` must be a positive int"),
    (dict(num_highway_layers=-1), "`num_highway_layers` must be an int >= 0"),
    (dict(max_word_length=3, filters=((4, 2),)), "widest filter is 4 wide"),
])
def test_bad_arguments(bad, match):
    with pytest.raises(ValueError, match=match):
        ElmoBackbone(**{**TINY, **bad})
