"""BertPretrainerPreprocessor and BertPretrainer (heads against transformers)."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_pretrainer import BertPretrainer
from kzoo.models.bert.bert_pretrainer_preprocessor import BertPretrainerPreprocessor
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.testing import assert_all_equal, assert_allclose, run_saving_test, to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    f"w{i}" for i in range(20)]
# Word ids are 5 + i for "wi"; each document uses its own words, so that a
# random next sentence is recognisable (and learnable).
DOCUMENTS = [
    ["w0 w1 w2", "w1 w2 w3", "w2 w3 w0"],
    ["w5 w6", "w6 w7 w5", "w7 w5 w6"],
    ["w10 w11 w12", "w11 w12 w10", "w12 w10 w11"],
    ["w15 w16", "w16 w17", "w17 w15 w16"],
]  # 8 pairs


def _preprocessor(**kwargs):
    kwargs.setdefault("sequence_length", 10)
    return BertPretrainerPreprocessor(BertTokenizer(vocabulary=VOCABULARY), **kwargs)


def _backbone(num_layers=2):
    return BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=num_layers,
                        num_heads=2, hidden_dim=8, intermediate_dim=16,
                        max_sequence_length=10)


def _same(a, b, msg=""):
    for i, (u, v) in enumerate(zip(a, b)):
        assert_all_equal(u, v, f"{msg} item {i}")


# === Preprocessor ===
def test_documents_to_packed_pairs():
    pre = _preprocessor(random_next_rate=0.0, mask_selection_rate=0.0, seed=1)
    x, y, w = pre(DOCUMENTS[:2])
    # [CLS] a [SEP] b [SEP], one row per sentence but each document's last.
    assert_all_equal(x["token_ids"][:2], [[2, 5, 6, 7, 3, 6, 7, 8, 3, 0],
                                          [2, 6, 7, 8, 3, 7, 8, 5, 3, 0]])
    assert_all_equal(x["segment_ids"][0], [0, 0, 0, 0, 0, 1, 1, 1, 1, 0])
    assert_all_equal(y["nsp_logits"], [0, 0, 0, 0])
    assert_all_equal(w["nsp_logits"], [1.0] * 4)
    assert float(to_numpy(w["mlm_logits"]).sum()) == 0.0
    assert to_numpy(x["mask_positions"]).shape == (4, 1)  # at least one column


def test_random_next_sentences_come_from_other_documents():
    pre = _preprocessor(random_next_rate=1.0, mask_selection_rate=0.0, seed=2)
    x, y, _ = pre(DOCUMENTS)
    assert_all_equal(y["nsp_logits"], [1] * 8)
    ids, segments = to_numpy(x["token_ids"]), to_numpy(x["segment_ids"])
    document_of = lambda i: (i - 5) // 5  # noqa: E731 (word id -> document)
    for row in range(8):
        a = ids[row][(segments[row] == 0) & (ids[row] >= 5)]
        b = ids[row][(segments[row] == 1) & (ids[row] >= 5)]
        assert document_of(a[0]) != document_of(b[0])


def test_masking_pairs_and_errors():
    pre = _preprocessor(mask_selection_rate=1.0, mask_token_rate=1.0,
                        random_token_rate=0.0, mask_selection_length=8, seed=3)
    x, y, w = pre((["w0 w1", "w2"], ["w3", "w4 w5 w6"]), [0, 1])
    assert_all_equal(x["token_ids"], [[2, 4, 4, 3, 4, 3, 0, 0, 0, 0],
                                      [2, 4, 3, 4, 4, 4, 3, 0, 0, 0]])
    assert_all_equal(y["mlm_logits"], [[5, 6, 8, 0, 0, 0, 0, 0],
                                       [7, 9, 10, 11, 0, 0, 0, 0]])
    assert_all_equal(y["nsp_logits"], [0, 1])
    with pytest.raises(ValueError, match="need their next-sentence labels"):
        pre((["w0"], ["w1"]))
    with pytest.raises(ValueError, match="labels are made here"):
        pre(DOCUMENTS, y=[0, 1])
    with pytest.raises(ValueError, match="batch of documents"):
        pre(["w0 w1", "w2"])


def test_eager_equals_tf_data_and_config():
    kwargs = {"seed": 4, "mask_selection_rate": 0.3}
    eager = _preprocessor(**kwargs)(DOCUMENTS)
    # All documents in one group, all pairs in one batch, same seed: the
    # tf.data pipeline draws the same random numbers in the same order.
    ds = _preprocessor(**kwargs).dataset_from_documents(
        DOCUMENTS, batch_size=8, documents_per_batch=4, shuffle=False)
    assert int(ds.cardinality()) == 1
    _same(next(iter(ds)), eager, "dataset_from_documents vs eager")

    pre = _preprocessor(**kwargs)
    config = keras.saving.serialize_keras_object(pre)
    assert config["registered_name"] == "kzoo>BertPretrainerPreprocessor"
    assert config["config"]["random_next_rate"] == 0.5
    restored = keras.saving.deserialize_keras_object(config)
    restored.tokenizer.set_vocabulary(VOCABULARY)
    _same(restored(DOCUMENTS), eager, "config round trip")

    x, y, w = _preprocessor()([])  # no documents: no pairs, well shaped
    assert to_numpy(x["token_ids"]).shape == (0, 10)
    assert to_numpy(y["mlm_logits"]).shape == (0, 2)


# === Task ===
def test_fit_on_raw_documents_lowers_the_loss():
    keras.utils.set_random_seed(0)
    model = BertPretrainer(_backbone(num_layers=1),
                           preprocessor=_preprocessor(seed=5, mask_selection_rate=0.5))
    model.compile(optimizer=keras.optimizers.Adam(0.02))
    # A list of documents for training, a tf.data.Dataset of single
    # documents for validation (8 pairs a batch).
    documents = tf.data.Dataset.from_tensor_slices(tf.ragged.constant(DOCUMENTS))
    history = model.fit(DOCUMENTS * 3, batch_size=8, epochs=2, verbose=0,
                        validation_data=documents).history
    assert {"loss", "mlm_logits_loss", "nsp_logits_loss", "mlm_logits_accuracy",
            "nsp_logits_accuracy", "val_nsp_logits_accuracy"} <= set(history)
    assert history["loss"][1] < history["loss"][0] - 0.05, history["loss"]
    # The total is the sum of the two losses (known cardinality, all backends).
    total = history["mlm_logits_loss"][1] + history["nsp_logits_loss"][1]
    assert abs(history["loss"][1] - total) < 1e-3


def test_keras_file_and_preset_round_trips(tmp_path):
    model = BertPretrainer(_backbone(), preprocessor=_preprocessor(seed=6))
    x, _, _ = model.preprocessor(DOCUMENTS)
    run_saving_test(model, x, tmp_path)
    model.save_to_preset(tmp_path / "preset")
    loaded = BertPretrainer.from_preset(str(tmp_path / "preset"))
    assert_allclose(loaded.predict_on_batch(x), model.predict_on_batch(x), atol=1e-6)


# === Hugging Face ===
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def test_heads_match_transformers_bert_for_pretraining(tmp_path):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(VOCABULARY), hidden_size=8, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=16, max_position_embeddings=10)
    hf = transformers.BertForPreTraining(config).eval()
    with torch.no_grad():  # non-trivial biases and layer norms
        for p in hf.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    hf.save_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))

    model = BertPretrainer.from_preset(str(tmp_path), sequence_length=10)
    x, _, _ = model.preprocessor(DOCUMENTS)
    with torch.no_grad():
        out = hf(input_ids=torch.tensor(to_numpy(x["token_ids"]), dtype=torch.long),
                 token_type_ids=torch.tensor(to_numpy(x["segment_ids"]), dtype=torch.long),
                 attention_mask=torch.tensor(to_numpy(x["padding_mask"]), dtype=torch.long))
    positions = to_numpy(x["mask_positions"])
    outputs = model(x)
    assert_allclose(outputs["nsp_logits"], out.seq_relationship_logits.numpy(),
                    atol=1e-4, rtol=0)
    mlm = np.take_along_axis(out.prediction_logits.numpy(), positions[..., None], 1)
    assert_allclose(outputs["mlm_logits"], mlm, atol=1e-4, rtol=0)


# === Whole-word masking ===
WORD_PIECES = VOCABULARY + ["un", "##aff", "##able", "cat"]


def test_whole_word_masking_masks_every_piece_of_a_word():
    tokenizer = BertTokenizer(vocabulary=WORD_PIECES)
    assert tokenizer.continuation_token_ids() == (26, 27)
    pre = BertPretrainerPreprocessor(
        tokenizer, sequence_length=12, mask_selection_rate=1.0,
        mask_selection_length=3, mask_token_rate=1.0, random_token_rate=0.0,
        whole_word_masking=True, seed=7)
    # [CLS] un ##aff ##able cat [SEP] cat [SEP]: the words are 1-3, 4 and 6.
    x, y, w = pre((["unaffable cat"] * 16, ["cat"] * 16), [0] * 16)
    ids = to_numpy(x["token_ids"])
    assert (ids[:, [0, 5, 7]] == [2, 3, 3]).all()
    positions = to_numpy(x["mask_positions"])
    seen = set()
    for row, p, weights in zip(ids, positions, to_numpy(w["mlm_logits"])):
        chosen = tuple(p[weights == 1.0])
        # All pieces of a chosen word, never a part; a 3-piece word is
        # skipped when a shorter one took room first.
        assert chosen in {(1, 2, 3), (4, 6), (4,), (6,)}, chosen
        assert (row[list(chosen)] == 4).all()
        seen.add(chosen)
    assert (1, 2, 3) in seen and (4, 6) in seen
    restored = BertPretrainerPreprocessor.from_config(pre.get_config())
    assert restored.whole_word_masking is True


def test_pretrain_bert_whole_word_masking_option():
    import argparse

    from kzoo.cli import pretrain as pretrain_command
    from kzoo.models.bert import bert_pretraining

    parser = argparse.ArgumentParser()
    pretrain_command.add_arguments(parser)
    documents = [["The unaffable cat sat. The cat sat on the mat"],
                 ["A dog sat. The dog is not a cat. A cat is not a dog"]]
    for flag, expected in [([], False), (["--whole-word-masking"], True)]:
        options = parser.parse_args(["bert", "--corpus", "c.txt", "--output", "o"]
                                    + flag)
        for name, value in bert_pretraining.DEFAULTS.items():
            setattr(options, name, value if getattr(options, name) is None
                    else getattr(options, name))
        options.vocabulary_size, options.num_layers, options.hidden_dim = 60, 1, 8
        model, _ = bert_pretraining.pretrain(documents, options)
        assert model.preprocessor.whole_word_masking is expected
        assert model.preprocessor.masker.whole_word is expected
        if expected:
            assert model.preprocessor.masker.continuation_token_ids == (
                model.preprocessor.tokenizer.continuation_token_ids())
    # A byte-level BPE marks no word continuations: a clear error.
    from kzoo.models.gpt import GPTTokenizer
    from kzoo.models.masked_lm_preprocessor import MaskedLMPreprocessor
    from kzoo.tokenizers import compute_byte_pair_merges

    tokenizer = GPTTokenizer(*compute_byte_pair_merges(["a cat"], vocabulary_size=262))
    with pytest.raises(ValueError, match="whole_word_masking=True.*GPTTokenizer"):
        MaskedLMPreprocessor(tokenizer, whole_word_masking=True)
