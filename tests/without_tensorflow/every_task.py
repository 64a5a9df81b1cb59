"""Every task on raw strings: tiny models fit one epoch (in order) and
predict. Prints one JSON object; every_task_test.py runs it with and without
TensorFlow and compares."""

import json
import sys

import keras
import numpy as np

import kzoo

BERT_VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",
                   "dog", "sat", "ran", "on", "a", "mat", "log", "where", "is",
                   "?", ".", "pa", "##ris", "cafe", "le", "est", "john", "in"]
results = {}


def numbers(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64").tolist()


def bert_backbone(length=16):
    keras.utils.set_random_seed(0)
    return kzoo.BertBackbone(vocabulary_size=len(BERT_VOCABULARY), num_layers=1,
                             num_heads=2, hidden_dim=8, intermediate_dim=16,
                             max_sequence_length=length, dropout=0.0)


def tokenizer():
    return kzoo.BertTokenizer(BERT_VOCABULARY)


def fit_and_predict(name, model, x, y=None, predict_x=None):
    history = model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
    results[f"{name}_loss"] = history.history["loss"]
    results[f"{name}_predict"] = keras.tree.map_structure(
        numbers, model.predict(predict_x if predict_x is not None else x, verbose=0))


texts = ["the cat sat on the mat .", "a dog ran", "where is the cafe ?", "le cafe"]
labels = np.array([0, 1, 1, 0])

model = kzoo.BertClassifier(bert_backbone(), num_classes=2, dropout=0.0,
                            preprocessor=kzoo.BertClassifierPreprocessor(
                                tokenizer(), sequence_length=16))
fit_and_predict("classifier", model, texts, labels)
model = kzoo.BertClassifier(bert_backbone(), num_classes=2, dropout=0.0,
                            preprocessor=kzoo.BertClassifierPreprocessor(
                                tokenizer(), sequence_length=16, num_segments=2))
fit_and_predict("pair_classifier", model, (texts, texts[::-1]), labels)

words = [["John", "sat", "in", "Paris"], ["the", "cat", "ran"], ["a", "dog"], []]
tags = [[1, 0, 0, 2], [0, 1, 0], [0, 1], []]
model = kzoo.BertTokenClassifier(bert_backbone(), num_classes=3, dropout=0.0,
                                 preprocessor=kzoo.BertTokenClassifierPreprocessor(
                                     tokenizer(), sequence_length=12))
fit_and_predict("token_classifier", model, words, tags)

questions = ["Where is the cafe?", "Where?", "the cat?", "a log?"]
contexts = ["Le cafe est a Paris.", "the cat sat on the mat.", "the cat ran.",
            "a dog sat on a log."]
spans = ["Paris", "mat", "cat", "log"]
model = kzoo.BertQuestionAnswerer(bert_backbone(), dropout=0.0,
                                  preprocessor=kzoo.BertQuestionAnswererPreprocessor(
                                      tokenizer(), sequence_length=16))
fit_and_predict("question_answerer", model, (questions, contexts),
                {"answer_start": [c.index(a) for c, a in zip(contexts, spans)],
                 "text": spans})
results["answers"] = model.answer(questions, contexts)

choices = [["sat down", "ran", "is a cat"], ["ran", "sat", "on a mat"],
           ["the mat", "a log", "a dog"], ["is", "sat", "ran"]]
model = kzoo.BertMultipleChoice(bert_backbone(), num_choices=3, dropout=0.0,
                                preprocessor=kzoo.BertMultipleChoicePreprocessor(
                                    tokenizer(), sequence_length=12))
fit_and_predict("multiple_choice", model, (texts, choices), np.array([0, 1, 2, 0]))

model = kzoo.BertMaskedLM(bert_backbone(), preprocessor=kzoo.BertMaskedLMPreprocessor(
    tokenizer(), sequence_length=16, seed=1))
history = model.fit(texts, batch_size=2, epochs=1, verbose=0)
results["masked_lm_loss_finite"] = bool(np.isfinite(history.history["loss"]).all())
results["fill_mask"] = model.fill_mask(["the [MASK] sat on the mat ."], top_k=2)

embedder = kzoo.BertTextEmbedder(bert_backbone(), kzoo.BertClassifierPreprocessor(
    tokenizer(), sequence_length=16))
results["embeddings"] = numbers(embedder.predict(texts, verbose=0))
results["similarity"] = numbers(embedder.similarity(texts[:1], texts))

corpus = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"]
vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(corpus * 3,
                                                              vocabulary_size=290)
keras.utils.set_random_seed(0)
gpt_backbone = kzoo.GPTBackbone(vocabulary_size=len(vocabulary), num_layers=1,
                                num_heads=2, hidden_dim=8, intermediate_dim=16,
                                max_sequence_length=32, dropout=0.0)
gpt_backbone, gpt_tokenizer = kzoo.models.gpt.add_fine_tuning_tokens(
    gpt_backbone, kzoo.GPTTokenizer(vocabulary, merges), seed=0)
model = kzoo.GPTClassifier(gpt_backbone, 2, dropout=0.0,
                           preprocessor=kzoo.GPTClassifierPreprocessor(
                               gpt_tokenizer, sequence_length=12))
fit_and_predict("gpt_classifier", model, corpus + ["a log"], np.array([0, 1, 0, 1]))
model = kzoo.GPTMultipleChoice(gpt_backbone, dropout=0.0,
                               preprocessor=kzoo.GPTMultipleChoicePreprocessor(
                                   gpt_tokenizer, sequence_length=12))
results["gpt_multiple_choice"] = numbers(model.predict(
    (["the cat sat on"], [["the mat", "a dog", "a log"]]), verbose=0))

results["tensorflow_imported"] = "tensorflow" in sys.modules
print("RESULTS " + json.dumps(results))
