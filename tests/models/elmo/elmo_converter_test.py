"""AllenNLP ELMo folders: exact reference activations, clear errors."""

import json
import shutil

import h5py
import keras
import numpy as np
import pytest

from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.preprocessing import CharacterIds
from kzoo.presets.errors import PresetError
from kzoo.testing import assert_allclose, to_numpy


def test_config_comes_from_options_json(allennlp_elmo):
    backbone = ElmoBackbone.from_preset(str(allennlp_elmo), load_weights=False)
    assert (backbone.num_layers, backbone.hidden_dim, backbone.projection_dim) == (2, 64, 16)
    assert backbone.filters == ((1, 4), (2, 8), (3, 16), (4, 32), (5, 64))
    assert (backbone.cell_clip, backbone.projection_clip, backbone.activation) == (3.0, 3.0, "relu")
    assert backbone.use_skip_connections and backbone.num_highway_layers == 2


def test_token_layer_matches_bilm_tf(allennlp_elmo):
    # elmo_token_embeddings.hdf5: bilm-tf's token layer of each vocabulary
    # word (a one-word batch; no LSTM, so no state).
    backbone = ElmoBackbone.from_preset(str(allennlp_elmo))
    words = (allennlp_elmo / "vocab_test.txt").read_text().strip().split("\n")
    with h5py.File(allennlp_elmo / "elmo_token_embeddings.hdf5", "r") as f:
        expected = f["embedding"][...]
    ids = CharacterIds()([[w] for w in words])
    out = to_numpy(backbone(ids)["token_output"])[:, 0]
    assert out.shape == expected.shape == (len(words), 16)
    assert_allclose(out, expected, atol=1e-5, rtol=0)


def check_top_layer(allennlp_elmo, allennlp_reference, num_batches):
    """The reference ran stateful LSTMs (AllenNLP's test does the same): row
    k of batch i starts where row k of batch i-1 ended."""
    sentences, top = allennlp_reference
    backbone = ElmoBackbone.from_preset(str(allennlp_elmo))
    # One padded length for every batch: JAX compiles the scan once.
    chars = CharacterIds(add_sentence_boundaries=True, sequence_length=56)
    states, worst = None, 0.0
    for i in range(num_batches):
        batch = [sentences[k][i] for k in range(3)]
        outputs, states = backbone.call_with_states(chars(batch), states)
        out = to_numpy(outputs["lstm_output_2"])
        if i == 0:  # from zero states: the deterministic call is the same
            assert_allclose(backbone(chars(batch))["lstm_output_2"], out, atol=1e-6)
        for k, sentence in enumerate(batch):
            n = len(sentence.split())
            expected = top[k][i]
            assert expected.shape == (n, 32)
            worst = max(worst, float(np.abs(out[k, 1:n + 1] - expected).max()))
            assert np.all(out[k, n + 2:] == 0)
    assert worst <= 1e-5, worst


def test_top_layer_matches_bilm_tf_batch_after_batch(allennlp_elmo, allennlp_reference):
    # 3 of the 10 batches: from zero states, then two with carried states
    # (all 10 in the large test below).
    check_top_layer(allennlp_elmo, allennlp_reference, num_batches=3)


@pytest.mark.large
def test_top_layer_matches_bilm_tf_on_all_30_sentences(allennlp_elmo, allennlp_reference):
    check_top_layer(allennlp_elmo, allennlp_reference, num_batches=10)


def _copy(src, dst, options=None):
    dst.mkdir()
    for name in ("options.json", "lm_weights.hdf5"):
        shutil.copy(src / name, dst / name)
    if options is not None:
        (dst / "options.json").write_text(json.dumps(options))
    return dst


def test_options_that_do_not_match_the_weights_name_the_dataset(allennlp_elmo, tmp_path):
    options = json.loads((allennlp_elmo / "options.json").read_text())
    options["lstm"]["projection_dim"] = 8
    folder = _copy(allennlp_elmo, tmp_path / "bad", options)
    with pytest.raises(PresetError, match=r"CNN_proj/W_proj has shape \(124, 16\) but "
                       r"the options ask for \(124, 8\)"):
        ElmoBackbone.from_preset(str(folder))


def test_missing_or_ambiguous_files(allennlp_elmo, tmp_path):
    folder = _copy(allennlp_elmo, tmp_path / "two")
    shutil.copy(folder / "lm_weights.hdf5", folder / "copy.hdf5")
    with pytest.raises(PresetError, match="several ELMo weights files"):
        ElmoBackbone.from_preset(str(folder))
    (folder / "copy.hdf5").unlink()
    (folder / "lm_weights.hdf5").unlink()
    with pytest.raises(PresetError, match="no ELMo weights file"):
        ElmoBackbone.from_preset(str(folder))
    assert ElmoBackbone.from_preset(str(folder), load_weights=False).hidden_dim == 64
    with h5py.File(tmp_path / "two" / "w.hdf5", "w") as f:
        f["char_embed"] = np.zeros((261, 4), "float32")
        f.create_group("RNN_0")
    with pytest.raises(PresetError, match="dataset CNN/W_cnn_0 is missing"):
        ElmoBackbone.from_preset(str(folder))


def test_bfloat16_keeps_every_layer_of_the_reference_elmo(allennlp_elmo, allennlp_reference):
    # The bound that makes a bf16 ELMo usable: every real token's
    # vector at every layer within cosine 0.999 of float32's, on the 30
    # fixture sentences. The orthogonal initializer's QR once made a bf16
    # ELMo impossible to build on PyTorch ("geqrf_cpu" not implemented).
    sentences = [s for row in allennlp_reference[0] for s in row]
    ids = CharacterIds(add_sentence_boundaries=True, sequence_length=56)(sentences)
    reference = ElmoBackbone.from_preset(str(allennlp_elmo))(ids)
    # (mixed_bfloat16 computed the same vectors here: one policy is tested.)
    backbone = ElmoBackbone.from_preset(str(allennlp_elmo), dtype="bfloat16")
    outputs = backbone(ids)
    mask = to_numpy(ids["padding_mask"]).astype(bool)
    assert mask.sum() == sum(len(s.split()) + 2 for s in sentences)
    for name in ("token_output", "lstm_output_1", "lstm_output_2"):
        assert keras.backend.standardize_dtype(outputs[name].dtype) == "bfloat16"
        a = to_numpy(reference[name])[mask]
        b = to_numpy(keras.ops.cast(outputs[name], "float32"))[mask]
        cosine = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        assert cosine.min() >= 0.999, (name, cosine.min())
        assert not np.array_equal(a, b)  # it did run in bfloat16
