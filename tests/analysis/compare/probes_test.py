"""The compare probes against independent computations: scipy's Spearman,
gensim's analogies, scikit-learn's logistic regression and ROC AUC, numpy
means of vectors_at; fine-tuning tiny BERT and GPT presets."""

import os
import zlib

import keras
import numpy as np
import pytest
import scipy.stats

import kzoo
from kzoo.analysis import WordInContext, evaluate_word_in_context, word_in_context
from kzoo.analysis.compare import probes
from kzoo.analysis.compare.probes_classifier import (
    cross_validated_accuracy,
    fit_logistic_regression,
    stratified_folds,
)
from kzoo.analysis.compare.probes_words import cut_window, vectors_in_windows
from kzoo.datasets import evaluation_file
from kzoo.models.family import get_family
from kzoo.testing.without_tensorflow import check_without_tensorflow

pytestmark = pytest.mark.without_tensorflow

WORDNET = os.path.exists("/usr/share/wordnet/data.noun")
BERT_VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "film",
                   "good", "bad", "is", "was", "tiger", "cat", "money", "bank", "of",
                   "river", "and", "very", "plot", "acting", "it", "day", "so", "dog",
                   "sat", "what", "mat", "log", "one"]
TEMPLATES = ["a {} film", "the film is {}", "the acting was {}", "a very {} plot",
             "the {} acting", "a {} plot and {} acting", "the plot is {}", "a {} {} film",
             "the very {} film", "and a {} film", "it was a {} day", "so {}",
             "a {} cat", "the {} dog sat", "what a {} mat", "the log is {}", "a {} one",
             "the {} film was", "very {}", "the cat was {}"]
GOOD = [t.replace("{}", "good") for t in TEMPLATES]
BAD = [t.replace("{}", "bad") for t in TEMPLATES]

class HashWordInContext(WordInContext):
    """Two layers whose vectors depend on the sentence and the span."""

    layer_names = ("first", "second")

    def _embed(self, sentences, spans):
        rows = []
        for sentence, (start, end) in zip(sentences, spans):
            rng = np.random.default_rng(zlib.crc32(f"{start} {end} {sentence}".encode()))
            rows.append(rng.normal(size=(2, 3)))
        return np.asarray(rows, np.float32)


def _tiny_bert_wic():
    keras.utils.set_random_seed(0)
    backbone = kzoo.models.BertBackbone(
        vocabulary_size=len(BERT_VOCABULARY), num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=64)
    return word_in_context(backbone, kzoo.models.BertTokenizer(vocabulary=BERT_VOCABULARY))


def _wordsim_words(count):
    words = []
    with open(evaluation_file("wordsim353.tsv"), encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                words += [w.lower() for w in line.split("\t")[:2]]
    return sorted(set(words))[:count]


# --- vocabulary and contexts ---

def test_evaluation_vocabulary_counts_whole_words_case_ignored():
    texts = ["The tiger and the cat.", "A Tiger, a tiger-cat, tigers.",
             "cat zzzq zzzq zzzq", "TIGER"]
    # "tiger" x3 (not in "tiger-cat" or "tigers"), "cat" x2; zzzq in no set
    assert probes.evaluation_vocabulary(texts, min_count=2) == ["cat", "tiger"]
    assert probes.evaluation_vocabulary(texts, min_count=3) == ["tiger"]
    with pytest.raises(ValueError, match="min_count"):
        probes.evaluation_vocabulary(texts, min_count=0)


def test_word_contexts_sample_whole_words_in_a_window():
    texts = [f"w{i} " * 30 + f"the cat number {i} sat " + "x " * 30 for i in range(20)]
    texts.append("a Cat.")
    found = probes.word_contexts(texts, ["cat", "dog"], max_contexts=5, window=3, seed=1)
    assert set(found) == {"cat"}
    assert len(found["cat"]) == 5
    for context, (start, end) in found["cat"]:
        assert context[start:end].lower() == "cat"
        assert len(context.split()) <= 7
    assert found == probes.word_contexts(texts, ["cat"], max_contexts=5, window=3,
                                         seed=1)
    other = probes.word_contexts(texts, ["cat"], max_contexts=5, window=3, seed=2)
    assert other != found
    everything = probes.word_contexts(texts, ["cat"], max_contexts=50, window=3)
    assert len(everything["cat"]) == 21
    assert cut_window("a b c d e", 4, 5, 1) == ("b c d", (2, 3))


@pytest.mark.parametrize("make_wic", [lambda: HashWordInContext(batch_size=3),
                                      _tiny_bert_wic])
def test_context_averaging_equals_the_numpy_mean_of_vectors_at(make_wic):
    wic = make_wic()
    texts = ["the tiger and the cat", "a cat of the river", "money of the bank",
             "the bank of the river", "the cat and the tiger and the cat"]
    contexts = probes.word_contexts(texts, ["cat", "tiger", "bank"], max_contexts=3)
    words, vectors, counts = probes.context_word_vectors(wic, contexts)
    assert words == ["bank", "cat", "tiger"]
    assert vectors.shape[:2] == (len(wic.layer_names), 3)
    for j, word in enumerate(words):
        found = wic.vectors_at([c for c, _ in contexts[word]],
                               [s for _, s in contexts[word]])
        np.testing.assert_allclose(vectors[:, j], found.mean(axis=0), rtol=1e-6,
                                   atol=1e-7)
        assert (counts[:, j] == len(contexts[word])).all()
    assert counts[0].tolist() == [2, 3, 2]  # "cat" capped at 3 of 4


class ShortWordInContext(HashWordInContext):
    """Refuses a text of more than 5 words, as a model refuses one longer
    than its sequence length."""

    def _embed(self, sentences, spans):
        if max(len(s.split()) for s in sentences) > 5:
            raise ValueError("too long for this model")
        return super()._embed(sentences, spans)


def test_contexts_too_long_for_the_model_are_cut_shorter():
    wic = ShortWordInContext()
    contexts = [("a b c d e f g h i", (8, 9)), ("x y", (0, 1))]
    vectors, used = vectors_in_windows(wic, contexts, window=4)
    assert used == 2  # 9 words refused, then 5
    expected = wic.vectors_at(["c d e f g", "x y"], [(4, 5), (0, 1)])
    np.testing.assert_allclose(vectors, expected)
    texts = ["one two three four five six seven eight tiger nine ten"]
    result = probes.word_similarity(wic, texts, ["tiger"], window=16)
    assert (result["window"], result["smallest_window"]) == (16, 2)


def test_word_similarity_matches_scipy_and_gensim_on_a_static_model():
    words = _wordsim_words(120)
    rng = np.random.default_rng(0)
    table = rng.normal(size=(len(words) - 1, 12))  # the last word has no vector
    wv = kzoo.models.WordVectors(table, words[:-1])
    texts = [f"here is {w} again" for w in words]
    result = probes.word_similarity(word_in_context(wv), texts, words)

    gold, model, covered = [], [], 0
    with open(evaluation_file("wordsim353.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            a, b, score = line.strip().split("\t")
            a, b = a.lower(), b.lower()
            covered += a in words and b in words
            if a in words[:-1] and b in words[:-1]:
                u, v = table[words.index(a)], table[words.index(b)]
                gold.append(float(score))
                model.append(u @ v / np.linalg.norm(u) / np.linalg.norm(v))
    assert result["layers"] == ["static vector"]
    assert result["wordsim353"][0] == pytest.approx(
        scipy.stats.spearmanr(gold, model).statistic, abs=1e-6)
    assert result["pairs_scored"][0]["wordsim353"] == len(gold)
    assert result["pairs_covered"]["wordsim353"] == covered
    assert result["words"] == len(words)
    assert result["words_with_vector"] == [len(words) - 1]

    from gensim.models import KeyedVectors

    kv = KeyedVectors(12)
    kv.add_vectors(words[:-1], table.astype(np.float32))
    accuracy, sections = kv.evaluate_word_analogies(evaluation_file("questions-words.txt"))
    answered = len(sections[-1]["correct"]) + len(sections[-1]["incorrect"])
    assert result["questions_scored"] == [answered]
    if answered:
        assert result["analogy"][0] == pytest.approx(accuracy)
    else:
        assert result["analogy"] == [None]


def test_word_similarity_of_a_contextual_model_has_a_score_per_layer():
    texts = ["the tiger and the cat", "a cat of the river", "money of the bank",
             "the bank of the river", "the cat and the tiger"]
    result = probes.word_similarity(_tiny_bert_wic(), texts, ["bank", "cat", "money",
                                                              "river", "tiger"])
    assert result["layers"] == ["embeddings", "layer 1", "layer 2"]
    for name in ("wordsim353", "simlex999", "analogy", "pairs_scored"):
        assert len(result[name]) == 3
    with pytest.raises(ValueError, match="vocabulary"):
        probes.word_similarity(_tiny_bert_wic(), texts, [])


# --- the classifier ---

@pytest.mark.parametrize("C", [0.05, 1.0, 20.0])
def test_logistic_regression_equals_scikit_learn(C):
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(int(C * 100))
    x = rng.normal(size=(80, 6))
    y = (x @ rng.normal(size=6) + 0.8 * rng.normal(size=80) > 0.3).astype(int)
    weights, intercept = fit_logistic_regression(x, y, C=C)
    theirs = sklearn.LogisticRegression(C=C, tol=1e-12, max_iter=100000).fit(x, y)
    np.testing.assert_allclose(weights, theirs.coef_[0], rtol=1e-4, atol=1e-5)
    assert intercept == pytest.approx(theirs.intercept_[0], rel=1e-4, abs=1e-5)
    mine = (x @ weights + intercept > 0).astype(int)
    assert (mine == theirs.predict(x)).all()
    with pytest.raises(ValueError, match="0 and 1"):
        fit_logistic_regression(x, y + 1)


def test_folds_are_stratified_and_cover_every_example():
    labels = np.array([0] * 12 + [1] * 8)
    folds = stratified_folds(labels, 4, seed=3)
    assert sorted(i for f in folds for i in f) == list(range(20))
    assert [int(labels[f].sum()) for f in folds] == [2, 2, 2, 2]
    with pytest.raises(ValueError, match="at least 5 examples of each class"):
        cross_validated_accuracy(np.zeros((6, 2)), [0, 0, 0, 0, 1, 1], folds=5)


def test_sentiment_splits_are_stratified_disjoint_and_seeded():
    labels = [0] * 30 + [1] * 20
    splits = probes.sentiment_splits(50, labels, seeds=5, test_fraction=0.2)
    assert [s["seed"] for s in splits] == list(range(5))
    for split in splits:
        assert sorted(split["train"] + split["test"]) == list(range(50))
        assert sum(labels[i] for i in split["test"]) == 4 and len(split["test"]) == 10
    assert splits == probes.sentiment_splits(50, labels, seeds=5)
    assert len({tuple(s["test"]) for s in splits}) == 5
    with pytest.raises(ValueError, match="labels"):
        probes.sentiment_splits(49, labels)


# --- the probes on sentences ---

class SentimentWordInContext(WordInContext):
    """Layer "noise": a random vector per occurrence; layer "sentiment":
    +1 / -1 for good / bad words in its first dimension, plus that noise."""

    layer_names = ("noise", "sentiment")

    def _embed(self, sentences, spans):
        rows = []
        for sentence, (start, end) in zip(sentences, spans):
            word = sentence[start:end].lower()
            rng = np.random.default_rng(zlib.crc32(f"{start} {sentence}".encode()))
            noise = rng.normal(size=4)
            sign = {"good": 1.0, "great": 1.0, "bad": -1.0, "awful": -1.0}.get(word, 0.0)
            rows.append([noise, 0.1 * noise + np.array([sign, 0, 0, 0])])
        return np.asarray(rows, np.float32)


def test_sentence_features_are_the_mean_of_the_words_vectors():
    wic = HashWordInContext()
    sentences = ["a good film, really.", "bad"]
    features, used = probes.sentence_features(wic, sentences, window=16)
    assert used == 16
    spans = [(0, 1), (2, 6), (7, 11), (13, 19)]
    expected = wic.vectors_at([sentences[0]] * 4, spans).mean(axis=0)
    np.testing.assert_allclose(features[0], expected, rtol=1e-6)
    np.testing.assert_allclose(features[1], wic.vectors_at(["bad"], [(0, 3)])[0])


def test_feature_probe_chooses_the_informative_layer_on_the_training_part():
    sentences, labels = GOOD + BAD, [1] * len(GOOD) + [0] * len(BAD)
    splits = probes.sentiment_splits(len(labels), labels, seeds=3, test_fraction=0.2)
    result = probes.feature_probe(SentimentWordInContext(), sentences, labels, splits,
                                  folds=2)
    assert result["layer"] == "sentiment"
    assert result["layers_chosen"] == ["sentiment"] * 3
    assert result["accuracies"] == [1.0, 1.0, 1.0]
    assert (result["mean"], result["std"]) == (1.0, 0.0)
    assert set(result["per_layer"]) == {"noise", "sentiment", "all layers"}
    for name, row in result["per_layer"].items():
        assert len(row["cv_accuracies"]) == len(row["accuracies"]) == 3
        assert row["mean"] == pytest.approx(np.mean(row["accuracies"]))
    assert result == probes.feature_probe(SentimentWordInContext(), sentences, labels,
                                          splits, folds=2)
    with pytest.raises(ValueError, match="one label per sentence"):
        probes.feature_probe(SentimentWordInContext(), sentences, labels[:-1], splits)
    with pytest.raises(ValueError, match="positions below 40"):
        probes.feature_probe(SentimentWordInContext(), sentences, labels,
                             [{"seed": 0, "train": [0, 40], "test": [1]}])


# --- polysemy ---

@pytest.mark.skipif(not WORDNET,
                    reason="WordNet 3.0 is not installed: apt-get install -y wordnet-base")
def test_polysemy_auc_equals_scikit_learn_on_capped_pairs():
    metrics = pytest.importorskip("sklearn.metrics")
    pairs = probes.wordnet_pairs(max_pairs=60, seed=1)
    for split in (pairs.dev, pairs.test):
        assert 0 < len(split) <= 30
        assert sum(p.label for p in split) * 2 == len(split)
    full = probes.wordnet_pairs(seed=1)
    assert pairs.test == full.test[:len(pairs.test)]

    wic = _tiny_bert_wic()
    result = probes.polysemy(wic, pairs)
    assert result["layers"] == list(wic.layer_names)
    first = wic.vectors_at([p.first.sentence for p in pairs.test],
                           [(p.first.start, p.first.end) for p in pairs.test])
    second = wic.vectors_at([p.second.sentence for p in pairs.test],
                            [(p.second.start, p.second.end) for p in pairs.test])
    labels = [p.label for p in pairs.test]
    for i in range(len(wic.layer_names)):
        a, b = first[:, i].astype(np.float64), second[:, i].astype(np.float64)
        cosines = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        assert result["test_auc"][i] == pytest.approx(
            metrics.roc_auc_score(labels, np.round(cosines, 6)), abs=1e-9)
    assert result["test_pairs"] == [len(pairs.test)] * 3
    rows = evaluate_word_in_context(wic, pairs, "tiny")
    assert result["dev_auc"] == [r.dev_auc for r in rows]
    assert result["test_accuracy"] == [r.accuracy for r in rows]
    with pytest.raises(ValueError, match="max_pairs"):
        probes.wordnet_pairs(max_pairs=2)


@pytest.mark.skipif(not WORDNET,
                    reason="WordNet 3.0 is not installed: apt-get install -y wordnet-base")
def test_polysemy_of_a_layer_without_the_words_is_none():
    pairs = probes.wordnet_pairs(max_pairs=20)
    wv = kzoo.models.WordVectors(np.eye(2), ["zzzq", "qqqz"])
    result = probes.polysemy(word_in_context(wv), pairs)
    assert result["test_auc"] == result["dev_auc"] == [None]
    assert result["test_pairs"] == [0]


@pytest.mark.skipif(not WORDNET,
                    reason="WordNet 3.0 is not installed: apt-get install -y wordnet-base")
def test_polysemy_cuts_only_the_sentences_a_model_refuses():
    pairs = probes.wordnet_pairs(max_pairs=40)
    whole = probes.polysemy(HashWordInContext(), pairs)
    assert whole["window"] is None
    assert whole["test_auc"] == [r.auc for r in
                                 evaluate_word_in_context(HashWordInContext(), pairs, "x")]
    short = probes.polysemy(ShortWordInContext(), pairs)
    assert short["window"] is not None and short["window"] <= 2
    # the scores are those of every sentence cut to that window (one chunk)
    metrics = pytest.importorskip("sklearn.metrics")
    cut = [[cut_window(e.sentence, e.start, e.end, short["window"])
            for e in (q.first, q.second)] for q in pairs.test]
    assert all(len(text.split()) <= 5 for row in cut for text, _ in row)
    vectors = [HashWordInContext().vectors_at([row[k][0] for row in cut],
                                              [row[k][1] for row in cut]).astype(np.float64)
               for k in (0, 1)]
    labels = [q.label for q in pairs.test]
    for i in range(2):
        a, b = vectors[0][:, i], vectors[1][:, i]
        cosines = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        assert short["test_auc"][i] == pytest.approx(
            metrics.roc_auc_score(labels, np.round(cosines, 6)), abs=1e-9)


# --- fine-tuning ---

def _bert_preset(path):
    keras.utils.set_random_seed(0)
    backbone = kzoo.models.BertBackbone(
        vocabulary_size=len(BERT_VOCABULARY), num_layers=1, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=16)
    preprocessor = kzoo.models.BertMaskedLMPreprocessor(
        kzoo.models.BertTokenizer(vocabulary=BERT_VOCABULARY), sequence_length=12)
    kzoo.models.BertMaskedLM(backbone, preprocessor=preprocessor).save_to_preset(path)
    return str(path)


def _gpt_preset(path):
    keras.utils.set_random_seed(0)
    vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
        (GOOD + BAD) * 3, vocabulary_size=300)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=len(vocabulary), num_layers=1, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=24, dropout=0.0)
    preprocessor = kzoo.models.GPTCausalLMPreprocessor(
        kzoo.models.GPTTokenizer(vocabulary, merges), sequence_length=16)
    kzoo.models.GPTCausalLM(backbone, preprocessor).save_to_preset(path)
    return str(path)


@pytest.mark.parametrize("name, make_preset", [("bert", _bert_preset),
                                               ("gpt", _gpt_preset)])
def test_fine_tuning_learns_a_separable_task_and_repeats(tmp_path, name, make_preset):
    preset = make_preset(tmp_path / name)
    sentences, labels = GOOD + BAD, [1] * len(GOOD) + [0] * len(BAD)
    splits = probes.sentiment_splits(len(labels), labels, seeds=4, test_fraction=0.2)
    kwargs = dict(seed=0, epochs=8, learning_rate=1e-2, batch_size=8)
    family = get_family(name)
    result = probes.fine_tuning(family, preset, sentences, labels, splits, **kwargs)
    assert result["task"] == family.task(kzoo.models.TextClassifier).__name__
    assert len(result["accuracies"]) == 4
    # 8 test sentences a split: chance is 0.5, a model that learnt the word 1.0
    assert result["mean"] >= 0.75 and min(result["accuracies"]) >= 0.5
    assert result["mean"] == pytest.approx(np.mean(result["accuracies"]))
    assert result["std"] == pytest.approx(np.std(result["accuracies"], ddof=1))
    assert result["epochs"] == 8 and result["learning_rate"] == 1e-2
    # A rerun with the same seed repeats the figures exactly.
    weak = dict(seed=0, epochs=1, learning_rate=1e-3, batch_size=8)
    first = probes.fine_tuning(family, preset, sentences, labels, splits[:1], **weak)
    assert first == probes.fine_tuning(family, preset, sentences, labels, splits[:1],
                                       **weak)


def test_a_family_without_a_text_classifier_is_not_fine_tuned():
    assert probes.fine_tuning(get_family("word2vec"), "unused", ["a"], [0],
                              [{"seed": 0, "train": [0], "test": [0]}]) is None


def test_the_probes_run_without_tensorflow(tmp_path):
    code = f"""
import keras, kzoo
from kzoo.analysis import load_word_in_context
from kzoo.analysis.compare import probes
from kzoo.models.family import get_family
keras.utils.set_random_seed(0)
vocabulary = {BERT_VOCABULARY!r}
backbone = kzoo.models.BertBackbone(
    vocabulary_size=len(vocabulary), num_layers=1, num_heads=2, hidden_dim=8,
    intermediate_dim=16, max_sequence_length=16)
preprocessor = kzoo.models.BertMaskedLMPreprocessor(
    kzoo.models.BertTokenizer(vocabulary=vocabulary), sequence_length=12)
kzoo.models.BertMaskedLM(backbone, preprocessor=preprocessor).save_to_preset({str(tmp_path)!r})
wic = load_word_in_context({str(tmp_path)!r})
sentences, labels = {GOOD + BAD!r}, [1] * 20 + [0] * 20
splits = probes.sentiment_splits(40, labels, seeds=2)
print(probes.word_similarity(wic, sentences, ["film", "plot"])["layers"])
print(probes.feature_probe(wic, sentences, labels, splits, folds=2)["layer"])
print(probes.fine_tuning(get_family("bert"), {str(tmp_path)!r}, sentences, labels,
                         splits[:1], epochs=1)["task"])
"""
    out = check_without_tensorflow(code)
    assert "['embeddings', 'layer 1']" in out and "BertClassifier" in out
