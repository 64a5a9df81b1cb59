"""BertQuestionAnswerer: answer positions and offsets, span decoding, fit."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_question_answerer import BertQuestionAnswerer
from kzoo.models.bert.bert_question_answerer_preprocessor import (
    BertQuestionAnswererPreprocessor,
)
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.question_answerer import best_span
from kzoo.testing import assert_all_equal, assert_allclose, run_saving_test, to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "is",
              "the", "cafe", "?", "le", "est", "a", "pa", "##ris", ".", "uber",
              "北", "京", ",", "city", "what", "big"]
LENGTH = 16
# (question, context, answer): contexts with multi-byte characters, an
# answer inside a multi-piece word, a CJK answer, one cut by truncation.
EXAMPLES = [
    ("Where is the café?", "Le café est à Paris.", "Paris"),
    ("What city?", "Über 北京, the big city.", "北京"),
    ("Where?", "Le café est à Paris.", "café"),
    ("Where?", "the city the city the city the city the city Paris.", "Paris"),
    ("What is big?", "Über 北京, the big city.", "the big city."),
]


def answers(examples=EXAMPLES):
    return {"answer_start": [c.index(a) for _, c, a in examples],
            "text": [a for _, _, a in examples]}


def inputs(examples=EXAMPLES):
    return ([q for q, _, _ in examples], [c for _, c, _ in examples])


def preprocessor():
    return BertQuestionAnswererPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                            sequence_length=LENGTH)


def tiny_model():
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1,
                            num_heads=2, hidden_dim=8, intermediate_dim=16,
                            max_sequence_length=LENGTH)
    return BertQuestionAnswerer(backbone, preprocessor=preprocessor())


def hf_reference(hf, question, context, answer):
    """Hugging Face's tokenizer and run_qa.py's answer-to-token mapping."""
    enc = hf(question, context, truncation="only_second", max_length=LENGTH,
             padding="max_length", return_offsets_mapping=True)
    offsets, sequence = enc["offset_mapping"], enc.sequence_ids()
    in_context = [i for i, s in enumerate(sequence) if s == 1]
    start_char = context.index(answer)
    end_char = start_char + len(answer)
    first, last = in_context[0], in_context[-1]
    if not (offsets[first][0] <= start_char and offsets[last][1] >= end_char):
        positions = (0, 0)
    else:
        i = first
        while i <= last and offsets[i][0] <= start_char:
            i += 1
        j = last
        while j >= first and offsets[j][1] >= end_char:
            j -= 1
        positions = (i - 1, j + 1)
    starts = [offsets[i][0] if s == 1 else -1 for i, s in enumerate(sequence)]
    ends = [offsets[i][1] if s == 1 else -1 for i, s in enumerate(sequence)]
    return enc, positions, starts, ends


def test_positions_and_offsets_match_hugging_face(tmp_path):
    transformers = pytest.importorskip("transformers")
    (tmp_path / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    hf = transformers.BertTokenizer.from_pretrained(str(tmp_path))
    pre = preprocessor()
    x, y = to_numpy(pre(inputs(), answers()))
    offsets = to_numpy(pre.context_offsets(inputs()))
    for row, (question, context, answer) in enumerate(EXAMPLES):
        enc, positions, starts, ends = hf_reference(hf, question, context, answer)
        assert x["token_ids"][row].tolist() == enc["input_ids"], row
        assert x["segment_ids"][row].tolist() == enc["token_type_ids"], row
        assert x["padding_mask"][row].astype(int).tolist() == enc["attention_mask"]
        assert (int(y["start_logits"][row]), int(y["end_logits"][row])) == positions
        assert offsets["start_offsets"][row].tolist() == starts, row
        assert offsets["end_offsets"][row].tolist() == ends, row


def test_hand_made_positions_with_multibyte_characters():
    pre = preprocessor()
    x, y = to_numpy(pre(inputs(), answers()))
    # [CLS] where is the cafe ? [SEP] le cafe est a pa ##ris . [SEP]
    assert x["token_ids"][0].tolist()[:15] == [2, 5, 6, 7, 8, 9, 3, 10, 8, 11, 12,
                                               13, 14, 15, 3]
    assert (y["start_logits"][0], y["end_logits"][0]) == (11, 12)  # pa ##ris
    # [CLS] what city ? [SEP] uber 北 京 , the big city . [SEP]
    assert (y["start_logits"][1], y["end_logits"][1]) == (6, 7)
    assert (y["start_logits"][2], y["end_logits"][2]) == (5, 5)  # café
    assert (y["start_logits"][3], y["end_logits"][3]) == (0, 0)  # truncated
    # [CLS] what is big ? [SEP] uber 北 京 , the big city . [SEP]
    assert (y["start_logits"][4], y["end_logits"][4]) == (10, 13)
    offsets = to_numpy(pre.context_offsets(inputs()))
    context = EXAMPLES[1][1]
    # Character offsets: "Ü" and each ideograph are one character (2 and 3
    # bytes in UTF-8).
    spans = [context[s:e] for s, e in zip(offsets["start_offsets"][1],
                                           offsets["end_offsets"][1]) if s >= 0]
    assert spans == ["Über", "北", "京", ",", "the", "big", "city", "."]
    # Unanswerable (SQuAD 2.0) and empty answers point to [CLS].
    _, y = to_numpy(pre(inputs(EXAMPLES[:2]), {"answer_start": [-1, 3],
                                               "text": ["", ""]}))
    assert y["start_logits"].tolist() == [0, 0] and y["end_logits"].tolist() == [0, 0]


def test_tf_data_matches_eager_and_config():
    pre = preprocessor()
    questions, contexts = inputs()
    ds = tf.data.Dataset.from_tensor_slices(
        ((questions, contexts), answers())).batch(5).map(pre)
    batch = next(iter(ds))
    eager = pre(inputs(), answers())
    assert_all_equal(batch[0], eager[0])
    assert_all_equal(batch[1], eager[1])
    config = pre.get_config()
    assert config["sequence_length"] == LENGTH
    config["tokenizer"] = pre.tokenizer
    restored = BertQuestionAnswererPreprocessor.from_config(config)
    assert_all_equal(restored(inputs()), eager[0])
    serialized = keras.saving.serialize_keras_object(pre)
    assert serialized["registered_name"] == "kzoo>BertQuestionAnswererPreprocessor"


def test_bad_inputs():
    pre = preprocessor()
    with pytest.raises(ValueError, match="`x` must be a tuple `\\(questions, contexts\\)`"):
        pre(["Where?"])
    with pytest.raises(ValueError, match="`y` must be a dict with `answer_start`"):
        pre(inputs(), [3, 4, 5, 6, 7])
    with pytest.raises(ValueError, match="`sequence_length` must be an int >= 4"):
        BertQuestionAnswererPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                         sequence_length=3)


def _brute_force(start, end, mask, max_length):
    best, best_score = (-1, -1), -np.inf
    for i in range(len(start)):
        for j in range(i, min(i + max_length, len(start))):
            if mask[i] and mask[j] and start[i] + end[j] > best_score:
                best, best_score = (i, j), start[i] + end[j]
    if best[0] < 0:
        return best[0], best[1], 0.0
    p_start = np.exp(start[mask]) / np.exp(start[mask]).sum()
    p_end = np.exp(end[mask]) / np.exp(end[mask]).sum()
    index = np.cumsum(mask) - 1
    return best[0], best[1], p_start[index[best[0]]] * p_end[index[best[1]]]


@pytest.mark.parametrize("max_length", [1, 3, 30])
def test_best_span_against_brute_force(max_length):
    rng = np.random.default_rng(max_length)
    start, end = rng.normal(size=(2, 6, 9))
    mask = rng.random((6, 9)) < 0.7
    mask[5] = False  # no allowed position at all
    got = best_span(start, end, max_length, mask=mask)
    for row in range(6):
        expected = _brute_force(start[row], end[row], mask[row], max_length)
        assert (got[0][row], got[1][row]) == expected[:2]
        assert got[2][row] == pytest.approx(expected[2], rel=1e-9)
    # One example (1-D): Python numbers.
    single = best_span(start[0], end[0], max_length, mask=mask[0])
    assert single == (int(got[0][0]), int(got[1][0]), pytest.approx(got[2][0]))
    with pytest.raises(ValueError, match="`max_answer_length` must be a positive"):
        best_span(start, end, 0)


def test_answer_decodes_forced_logits_to_character_spans(monkeypatch):
    model = tiny_model()
    targets = {"pa": "##ris", "北": "京"}
    vocab = {t: i for i, t in enumerate(VOCABULARY)}

    def forced(x):
        # High start logit on one token, high end logit on another.
        ids = to_numpy(x["token_ids"])
        start = np.zeros(ids.shape, "float32")
        end = np.zeros(ids.shape, "float32")
        for first, last in targets.items():
            start += 10 * (ids == vocab[first])
            end += 10 * (ids == vocab[last])
        return {"start_logits": start, "end_logits": end}

    monkeypatch.setattr(model, "predict_on_batch", forced)
    questions, contexts = inputs(EXAMPLES[:2])
    found = model.answer(questions, contexts, batch_size=1)
    assert [a["text"] for a in found] == ["Paris", "北京"]
    for answer, context in zip(found, contexts):
        assert context[answer["start"]:answer["end"]] == answer["text"]
    assert found[1]["start"] == 5 and found[1]["end"] == 7
    assert 0.5 < found[0]["score"] <= 1.0
    # The question's "café" is not a place for an answer: the context's is.
    targets.clear()
    targets["cafe"] = "cafe"
    found = model.answer(["Where is the café?"], ["Le café est à Paris."],
                         max_answer_length=1)
    assert found[0]["text"] == "café" and found[0]["start"] == 3
    # No context piece left after truncation: an empty answer.
    found = model.answer(["what " * 20], ["Paris."])
    assert found == [{"text": "", "start": 0, "end": 0, "score": 0.0}]


def test_model_masks_question_and_padding_and_fits():
    model = tiny_model()
    x, y = model.preprocessor(inputs(), answers())
    out = to_numpy(model.predict_on_batch(x))
    segment = to_numpy(x["segment_ids"])
    real = to_numpy(x["padding_mask"]).astype(bool)
    last_real = real & ~np.pad(real[:, 1:], [[0, 0], [0, 1]])
    allowed = (segment == 1) & real & ~last_real
    allowed[:, 0] = True
    for key in ("start_logits", "end_logits"):
        assert out[key].shape == (5, LENGTH) and out[key].dtype == np.float32
        np.testing.assert_array_equal(out[key] <= -1e8, ~allowed)
    # Start and end are the two columns of the span layer, each its own.
    sequence = to_numpy(model.backbone(x)["sequence_output"])
    spans = sequence @ to_numpy(model.span_dense.kernel) + to_numpy(model.span_dense.bias)
    for column, key in enumerate(("start_logits", "end_logits")):
        assert_allclose(out[key][allowed], spans[..., column][allowed], atol=1e-5)
    # (Raw pairs and SQuAD answers go through tf.data as in
    # test_tf_data_matches_eager_and_config; here the packed tensors.)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    history = model.fit(x, y, batch_size=5, epochs=10, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < 0.8 * losses[0]
    assert {"start_logits_accuracy", "end_logits_accuracy"} <= set(history.history)
    for answer, context in zip(model.answer(*inputs()), inputs()[1]):
        assert context[answer["start"]:answer["end"]] == answer["text"]


def test_keras_file_preset_and_serving(tmp_path):
    model = tiny_model()
    x = model.preprocessor(inputs())
    run_saving_test(model, x, tmp_path)
    model.backbone.save_to_preset(tmp_path / "base")
    model.preprocessor.save_to_preset(tmp_path / "base")
    fresh = BertQuestionAnswerer.from_preset(str(tmp_path / "base"))
    assert fresh.preprocessor.sequence_length == LENGTH
    assert_allclose(fresh.backbone.get_weights()[0], model.backbone.get_weights()[0])
    model.save_to_preset(tmp_path / "task")
    restored = BertQuestionAnswerer.from_preset(str(tmp_path / "task"))
    assert_allclose(restored.predict_on_batch(x), model.predict_on_batch(x), atol=1e-6)
    assert model.serving_input_names() == ("question", "context")
    outputs = model.serving_outputs(model(x))
    assert set(outputs) == {"start_logits", "end_logits"}


@pytest.mark.large
@pytest.mark.requires_saved_model_export
def test_saved_model_takes_question_and_context(tmp_path):
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

    from kzoo.export.saved_model import saved_model

    model = tiny_model()
    saved_model(model, tmp_path / "qa")
    serve = tf.saved_model.load(str(tmp_path / "qa")).signatures["serving_default"]
    questions, contexts = inputs()
    out = serve(question=tf.constant(questions), context=tf.constant(contexts))
    expected = model.predict_on_batch(model.preprocessor(inputs()))
    assert_allclose({k: out[k].numpy() for k in expected}, expected, atol=1e-5)
