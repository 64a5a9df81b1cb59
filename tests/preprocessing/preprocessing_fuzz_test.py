"""Property tests (hypothesis) of the packer, the MLM masker and CharacterIds.

The examples are the same in every run (``derandomize``, see conftest.py).
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.preprocessing import CharacterIds, MaskedLMMaskGenerator, MultiSegmentPacker
from kzoo.testing import to_numpy

CLS, SEP, PAD, MASK = 101, 102, 0, 103
SEGMENT = st.lists(st.integers(1, 99), max_size=30)  # ids of real tokens


@settings(max_examples=200)
@given(st.lists(st.lists(SEGMENT, min_size=1, max_size=4), min_size=1, max_size=3)
       .filter(lambda rows: len({len(r) for r in rows}) == 1),
       st.integers(1, 40), st.sampled_from(["round_robin", "waterfall"]),
       st.sampled_from(["right", "left"]))
def test_packer_never_exceeds_the_length_nor_drops_special_tokens(
        rows, sequence_length, truncate, padding_side):
    num_segments = len(rows[0])
    sequence_length = max(sequence_length, num_segments + 1)  # room for specials
    packer = MultiSegmentPacker(sequence_length, start_value=CLS, end_value=SEP,
                                truncate=truncate, padding_side=padding_side)
    segments = tuple([row[i] for row in rows] for i in range(num_segments))
    out = packer(*segments)
    ids = to_numpy(out["token_ids"])
    mask = to_numpy(out["padding_mask"])
    assert ids.shape == (len(rows), sequence_length)
    for row, row_ids, row_mask in zip(rows, ids.tolist(), mask.tolist()):
        real = [t for t, m in zip(row_ids, row_mask) if m]
        assert real[0] == CLS and real[-1] == SEP
        assert real.count(CLS) == 1 and real.count(SEP) == num_segments
        assert all(t == PAD for t, m in zip(row_ids, row_mask) if not m)
        # Each segment is a prefix of its input, as long as the budget allows.
        budget = sequence_length - num_segments - 1
        kept = [len(s) for s in _split(real[1:], SEP)]
        assert sum(kept) == min(budget, sum(len(s) for s in row))
        for piece, segment in zip(_split(real[1:], SEP), row):
            assert piece == segment[:len(piece)]


def _split(ids, sep):
    pieces, piece = [], []
    for t in ids:
        if t == sep:
            pieces.append(piece)
            piece = []
        else:
            piece.append(t)
    return pieces


SPECIAL = (PAD, CLS, SEP)


@settings(max_examples=200)
@given(st.lists(st.lists(st.sampled_from([PAD, CLS, SEP, 1, 2, 50, 99]), max_size=20),
                min_size=1, max_size=4),
       st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.integers(0, 2**31 - 1))
def test_masker_never_selects_special_or_padding_ids(rows, selection_rate, mask_rate,
                                                     seed):
    masker = MaskedLMMaskGenerator(
        vocabulary_size=110, mask_token_id=MASK, mask_selection_rate=selection_rate,
        mask_token_rate=mask_rate, random_token_rate=1.0 - mask_rate,
        unselectable_token_ids=SPECIAL, seed=seed)
    out = masker(rows)
    positions = to_numpy(out["mask_positions"]).tolist()
    weights = to_numpy(out["mask_weights"]).tolist()
    mask_ids = to_numpy(out["mask_ids"]).tolist()
    token_ids = out["token_ids"]
    token_ids = token_ids if isinstance(token_ids, list) else to_numpy(token_ids).tolist()
    for row, new, row_positions, row_weights, row_ids in zip(
            rows, token_ids, positions, weights, mask_ids):
        chosen = [p for p, w in zip(row_positions, row_weights) if w == 1.0]
        assert all(row[p] not in SPECIAL for p in chosen)
        assert [row[p] for p in chosen] == [i for i, w in zip(row_ids, row_weights)
                                            if w == 1.0]
        # Special and padding tokens are never changed; nothing unchosen is.
        assert all(new[p] == t for p, t in enumerate(row) if p not in chosen)
        assert len(new) == len(row)


@settings(max_examples=200)
@given(st.lists(st.lists(st.text(max_size=60).map(
    lambda t: t.encode("utf-8", "backslashreplace").decode()), max_size=5),
    min_size=1, max_size=3), st.integers(3, 60))
def test_character_ids_handle_any_word(sentences, max_word_length):
    out = CharacterIds(max_word_length=max_word_length)(sentences)
    ids = to_numpy(out["character_ids"])
    longest = max(len(s) for s in sentences)
    assert ids.shape == (len(sentences), longest, max_word_length)
    for sentence, rows in zip(sentences, ids.tolist()):
        for i, word in enumerate(sentence):
            assert rows[i] == _reference(word, max_word_length)
        assert all(r == [0] * max_word_length for r in rows[len(sentence):])


def test_character_ids_10k_character_word():
    word = "\u00e9" * 10000
    ids = to_numpy(CharacterIds()([[word, "a"]])["character_ids"])
    assert ids.shape == (1, 2, 50)
    assert ids[0, 0].tolist() == _reference(word, 50)


def _reference(word, length):
    """bilm-tf's encoding in Python: begin, bytes (cut), end, padding; +1."""
    if word in ("<S>", "</S>"):
        middle = [256 if word == "<S>" else 257]
    else:
        middle = list(word.encode("utf-8"))[:length - 2]
    ids = [258] + middle + [259]
    return [i + 1 for i in ids + [260] * (length - len(ids))]
