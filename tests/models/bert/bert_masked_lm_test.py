"""BertMaskedLMPreprocessor and BertMaskedLM (numerics against transformers)."""

import json
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_masked_lm import BertMaskedLM
from kzoo.models.bert.bert_masked_lm_preprocessor import BertMaskedLMPreprocessor
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.presets.errors import PresetError
from kzoo.testing import (
    assert_all_equal,
    assert_allclose,
    run_saving_test,
    to_numpy,
)

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog",
              "sat", "ran", "on", "mat", "a", "big", "red"]
TEXTS = ["the cat sat on the mat", "a dog ran", "the big red dog sat",
         "a cat ran on a mat"]
SPECIAL_IDS = (0, 2, 3)  # [PAD], [CLS], [SEP]


def _tokenizer():
    return BertTokenizer(vocabulary=VOCABULARY)


def _preprocessor(**kwargs):
    kwargs.setdefault("sequence_length", 10)
    return BertMaskedLMPreprocessor(_tokenizer(), **kwargs)


def _backbone(num_layers=2):
    return BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=num_layers,
                        num_heads=2,
                        hidden_dim=8, intermediate_dim=16, max_sequence_length=10)


# === Preprocessor ===
def test_preprocessor_masks_every_real_token_exactly():
    pre = _preprocessor(mask_selection_rate=1.0, mask_token_rate=1.0,
                        random_token_rate=0.0, mask_selection_length=6, seed=3)
    x, y, w = pre((["a dog ran"], ["the cat"]))
    # [CLS] a dog ran [SEP] the cat [SEP]: the 5 words become [MASK].
    assert_all_equal(x["token_ids"], [[2, 4, 4, 4, 3, 4, 4, 3, 0, 0]])
    assert_all_equal(x["segment_ids"], [[0, 0, 0, 0, 0, 1, 1, 1, 0, 0]])
    assert_all_equal(x["padding_mask"], [[1, 1, 1, 1, 1, 1, 1, 1, 0, 0]])
    assert_all_equal(x["mask_positions"], [[1, 2, 3, 5, 6, 0]])
    assert_all_equal(y, [[12, 7, 9, 5, 6, 0]])
    assert_all_equal(w, [[1, 1, 1, 1, 1, 0]])


def _assert_same_batches(a, b, msg=""):
    """Equality of (x, y, sample_weight) tuples (assert_all_equal takes one)."""
    assert len(a) == len(b), msg
    for i, (u, v) in enumerate(zip(a, b)):
        assert_all_equal(u, v, f"{msg} item {i}")


def test_preprocessor_eager_equals_tf_data_and_config():
    kwargs = {"tokenizer": _tokenizer(), "sequence_length": 10, "seed": 7,
              "mask_selection_rate": 0.5}
    x, y, w = BertMaskedLMPreprocessor(**kwargs)(TEXTS)
    in_tf_data = BertMaskedLMPreprocessor(**kwargs)
    ds = tf.data.Dataset.from_tensor_slices(TEXTS).batch(4).map(in_tf_data)
    _assert_same_batches(next(iter(ds)), (x, y, w), "tf.data vs eager")
    pre = BertMaskedLMPreprocessor(**kwargs)
    config = keras.saving.serialize_keras_object(pre)
    assert config["registered_name"] == "kzoo>BertMaskedLMPreprocessor"
    restored = keras.saving.deserialize_keras_object(config)
    restored.tokenizer.set_vocabulary(VOCABULARY)
    _assert_same_batches(restored(TEXTS), (x, y, w), "config round trip")
    ids, positions = to_numpy(x["token_ids"]), to_numpy(x["mask_positions"])
    # Default width: ceil(0.5 * 10); specials and padding are never picked.
    assert positions.shape == (4, 5) and to_numpy(y).shape == (4, 5)
    original = to_numpy(BertMaskedLMPreprocessor(
        **{**kwargs, "mask_selection_rate": 0.0})(TEXTS)[0]["token_ids"])
    real = to_numpy(w).astype(bool)
    for row in range(4):
        picked = positions[row][real[row]]
        assert not np.isin(original[row][picked], SPECIAL_IDS).any()
        assert_all_equal(to_numpy(y)[row][real[row]], original[row][picked])
        # Only picked positions may differ from the original.
        changed = np.flatnonzero(ids[row] != original[row])
        assert set(changed) <= set(picked)
    # Half of the real tokens on average: 15 words in all here.
    assert 3 <= real.sum() <= 12


def test_preprocessor_seeds_and_empty_text():
    a = _preprocessor(seed=11)(TEXTS)
    _assert_same_batches(_preprocessor(seed=11)(TEXTS), a, "same seed")
    other = _preprocessor(seed=12)(TEXTS)
    assert not np.array_equal(to_numpy(other[0]["token_ids"]),
                              to_numpy(a[0]["token_ids"]))
    x, y, w = _preprocessor(seed=11)(["", "the"])
    assert_all_equal(x["token_ids"][0], [2, 3] + [0] * 8)
    assert float(to_numpy(w)[0].sum()) == 0.0
    assert to_numpy(x["mask_positions"]).shape == (2, 2)  # ceil(0.15 * 10)


def test_preprocessor_errors():
    with pytest.raises(ValueError, match="makes its own targets"):
        _preprocessor()(TEXTS, y=[1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"no '\[MASK\]'"):
        BertMaskedLMPreprocessor(BertTokenizer(vocabulary=VOCABULARY[:4] + ["x"]))
    with pytest.raises(ValueError, match="mask_token_rate"):
        _preprocessor(mask_token_rate=0.9, random_token_rate=0.2)
    with pytest.raises(TypeError, match="mask_selection_length"):
        _preprocessor(mask_selection_length=2.5)


# === Task ===
def test_fit_on_raw_strings_lowers_the_loss():
    keras.utils.set_random_seed(0)
    model = BertMaskedLM(_backbone(num_layers=1), preprocessor=_preprocessor(
        seed=1, mask_selection_rate=0.5))
    model.compile(optimizer=keras.optimizers.Adam(0.02))
    history = model.fit(TEXTS * 6, batch_size=4, epochs=2, verbose=0).history
    assert set(history) == {"loss", "accuracy"}
    assert history["loss"][1] < history["loss"][0] - 0.05, history["loss"]


def test_default_loss_is_bert_s():
    model = BertMaskedLM(_backbone(), preprocessor=_preprocessor(seed=1))
    x, y, w = model.preprocessor(TEXTS)
    logits = to_numpy(model(x)).astype("float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    ce = -np.take_along_axis(log_probs, to_numpy(y)[..., None], -1)[..., 0]
    # Mean cross-entropy over the real masked tokens (padding weighs 0).
    expected = (ce * to_numpy(w)).sum() / to_numpy(w).sum()
    assert_allclose(model.loss(y, model(x), w), expected, atol=1e-5)
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    assert np.isclose(float(to_numpy(model.optimizer.learning_rate)), 5e-5, rtol=1e-6)


def test_ids_past_the_tokenizer_are_never_predicted():
    from kzoo.models.bert.bert_pretrainer import BertPretrainer
    from kzoo.models.bert.bert_pretrainer_preprocessor import BertPretrainerPreprocessor

    keras.utils.set_random_seed(0)
    size = len(VOCABULARY)
    backbone = BertBackbone(vocabulary_size=size + 9, num_layers=1, num_heads=2,
                            hidden_dim=8, intermediate_dim=16, max_sequence_length=10)
    with pytest.warns(UserWarning, match=f"ids {size} to {size + 8} have no text"):
        model = BertMaskedLM(backbone, preprocessor=_preprocessor(seed=1))
    # The extra ids' output bias makes them the most likely everywhere.
    bias = np.zeros(size + 9, "float32")
    bias[size:] = 100.0
    model.masked_lm_head.output_bias.assign(bias)
    x, y, w = model.preprocessor(TEXTS)
    inputs = {k: x[k] for k in backbone.input}
    unmasked = to_numpy(model.masked_lm_head(
        backbone(inputs)["sequence_output"], x["mask_positions"]))
    assert (unmasked.argmax(-1) >= size).all()
    logits = to_numpy(model(x))
    assert (logits[..., size:] == -1e9).all()
    assert_allclose(logits[..., :size], unmasked[..., :size], atol=0)
    assert (to_numpy(model.predict(TEXTS, verbose=0)).argmax(-1) < size).all()
    # The loss is the cross-entropy over the tokenizer's ids only.
    log_probs = logits[..., :size].astype("float64")
    log_probs = log_probs - np.log(np.exp(log_probs).sum(-1, keepdims=True))
    ce = -np.take_along_axis(log_probs, to_numpy(y)[..., None], -1)[..., 0]
    expected = (ce * to_numpy(w)).sum() / to_numpy(w).sum()
    assert_allclose(model.loss(y, model(x), w), expected, atol=1e-4)
    # BertPretrainer's masked LM output follows the same rule.
    pretrainer_preprocessor = BertPretrainerPreprocessor(_tokenizer(), sequence_length=10)
    with pytest.warns(UserWarning, match="have no text"):
        pretrainer = BertPretrainer(backbone, preprocessor=pretrainer_preprocessor)
    pretrainer.masked_lm_head.output_bias.assign(bias)
    assert (to_numpy(pretrainer(x)["mlm_logits"])[..., size:] == -1e9).all()


def test_backbone_with_fewer_ids_than_the_tokenizer_is_refused():
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY) - 2, num_layers=1,
                            num_heads=2, hidden_dim=8, intermediate_dim=16,
                            max_sequence_length=10)
    with pytest.raises(ValueError, match="would have no embedding"):
        BertMaskedLM(backbone, preprocessor=_preprocessor())


def test_fill_mask_reads_the_mask_token_in_text():
    keras.utils.set_random_seed(0)
    model = BertMaskedLM(_backbone(1), preprocessor=_preprocessor(
        mask_selection_length=3))
    texts = ["the [MASK] sat on the [MASK]", "a dog ran", "[MASK]"]
    x, weights = model.preprocessor.fill_mask_inputs(texts)
    # [CLS] the [MASK] sat on the [MASK] [SEP]: the masks at 2 and 6.
    assert_all_equal(x["token_ids"][0], [2, 5, 4, 8, 10, 5, 4, 3, 0, 0])
    assert_all_equal(x["mask_positions"], [[2, 6, 0], [0, 0, 0], [1, 0, 0]])
    assert_all_equal(weights, [[1, 1, 0], [0, 0, 0], [1, 0, 0]])

    # The scores are the softmax of the model's logits at those positions,
    # computed here by hand from a batch built without the fill-mask path.
    results = model.fill_mask(texts, top_k=3)
    assert [len(r) for r in results] == [2, 0, 1]
    ids = np.array([[2, 5, 4, 8, 10, 5, 4, 3, 0, 0]])
    logits = to_numpy(model.predict_on_batch({
        "token_ids": ids, "segment_ids": np.zeros_like(ids),
        "padding_mask": ids != 0, "mask_positions": np.array([[2, 6, 0]])}))[0]
    for mask, row in zip(results[0], logits):
        probabilities = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
        best = np.argsort(-probabilities)[:3]
        assert [p["token_id"] for p in mask] == best.tolist()
        assert [p["token"] for p in mask] == [VOCABULARY[i] for i in best]
        assert_allclose([p["score"] for p in mask], probabilities[best], atol=1e-6)

    with pytest.raises(Exception, match="more \\[MASK\\] tokens than the 3"):
        model.fill_mask(["[MASK] [MASK] [MASK] [MASK]"])
    with pytest.raises(ValueError, match="`top_k` must be a positive int"):
        model.fill_mask(texts, top_k=0)


def test_keras_file_and_preset_round_trips(tmp_path):
    model = BertMaskedLM(_backbone(), preprocessor=_preprocessor(seed=2))
    x, _, _ = model.preprocessor(TEXTS)
    restored = run_saving_test(model, x, tmp_path)
    assert restored.masked_lm_head.token_embedding is restored.backbone.token_embedding
    for key in ("sequence_length", "seed", "mask_selection_rate"):
        assert restored.preprocessor.get_config()[key] == \
            model.preprocessor.get_config()[key]

    model.save_to_preset(tmp_path / "preset")
    loaded = BertMaskedLM.from_preset(str(tmp_path / "preset"))
    assert_allclose(loaded.predict_on_batch(x), model.predict_on_batch(x), atol=1e-6)
    assert loaded.preprocessor.seed == 2


# === Hugging Face ===
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOKEN_IDS = np.array([[2, 5, 6, 8, 10, 5, 11, 3, 0, 0],
                      [2, 12, 7, 9, 3, 5, 13, 14, 7, 3]], "int32")
SEGMENT_IDS = np.array([[0] * 10, [0] * 5 + [1] * 5], "int32")
PADDING_MASK = (TOKEN_IDS != 0).astype("int32")
POSITIONS = np.array([[1, 3, 6], [2, 7, 0]], "int32")


def _hf_folder(root, model_cls, tie=True):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(VOCABULARY), hidden_size=8, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=16, max_position_embeddings=10,
        tie_word_embeddings=tie)
    model = model_cls(config).eval()
    with torch.no_grad():  # non-trivial biases and layer norms
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    model.save_pretrained(root)
    (root / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    (root / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    with torch.no_grad():
        out = model(input_ids=torch.tensor(TOKEN_IDS, dtype=torch.long),
                    token_type_ids=torch.tensor(SEGMENT_IDS, dtype=torch.long),
                    attention_mask=torch.tensor(PADDING_MASK, dtype=torch.long))
    return out


def _inputs():
    return {"token_ids": TOKEN_IDS, "segment_ids": SEGMENT_IDS,
            "padding_mask": PADDING_MASK, "mask_positions": POSITIONS}


def test_matches_transformers_bert_for_masked_lm(tmp_path):
    out = _hf_folder(tmp_path, transformers.BertForMaskedLM)
    expected = np.take_along_axis(out.logits.numpy(), POSITIONS[..., None], axis=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = BertMaskedLM.from_preset(str(tmp_path), sequence_length=10)
    # BertForMaskedLM has no pooler (warned about); the head was loaded.
    messages = " ".join(str(w.message) for w in caught)
    assert "no pooler" in messages and "no masked LM head" not in messages
    assert_allclose(model(_inputs()), expected, atol=1e-4, rtol=0)
    assert isinstance(model.preprocessor, BertMaskedLMPreprocessor)


def test_checkpoint_without_head_warns(tmp_path):
    _hf_folder(tmp_path, transformers.BertModel)
    with pytest.warns(UserWarning, match="no masked LM head"):
        BertMaskedLM.from_preset(str(tmp_path))


def test_untied_decoder_is_refused(tmp_path):
    _hf_folder(tmp_path, transformers.BertForMaskedLM, tie=False)
    with pytest.raises(PresetError, match="not tied"):
        BertMaskedLM.from_preset(str(tmp_path))


def test_int8_predictions_stay_close_to_float32():
    # The tied MLM head reads the int8 embedding with its per-row scales.
    keras.utils.set_random_seed(4)
    model = BertMaskedLM(_backbone(), preprocessor=_preprocessor(seed=1))
    x = keras.tree.map_structure(to_numpy, model.preprocessor(TEXTS)[0])
    expected = to_numpy(model(x))
    model.backbone.quantize("int8")
    found = to_numpy(model(x))
    assert np.abs(found - expected).max() < 0.05 * np.abs(expected).max()
    assert not np.array_equal(found, expected)
