"""A user's program on raw strings: BERT fine-tuning, GPT training and
generation, ELMo vectors, word2vec. Prints one JSON object of its results.

Run by without_tensorflow_test.py with TensorFlow unimportable and with
TensorFlow preprocessing; the two must agree. Argument: the AllenNLP test
ELMo folder, or "" to leave ELMo out.
"""

import json
import sys

import keras
import numpy as np

import kzoo

results = {"tensorflow_imported_at_start": "tensorflow" in sys.modules}
keras.utils.set_random_seed(0)

# BERT: a real checkpoint, fine-tuned on strings.
texts = ["a gorgeous , witty , seductive movie .", "the plot is a tedious mess .",
         "an utterly charming film .", "boring , slow and far too long ."] * 4
labels = np.array([1, 0, 1, 0] * 4)
classifier = kzoo.BertClassifier.from_preset(
    "minilm_l6_en_uncased", num_classes=2, sequence_length=16)
results["bert_token_ids"] = keras.ops.convert_to_numpy(
    classifier.preprocessor(texts[:2])["token_ids"]).tolist()
history = classifier.fit(texts, labels, batch_size=8, epochs=1, shuffle=False,
                         verbose=0)
results["bert_loss"] = history.history["loss"]
results["bert_predictions"] = classifier.predict(texts[:4], verbose=0).tolist()

# GPT: a tiny causal LM trained on strings, then greedy generation.
corpus = ["the cat sat on the mat", "the dog sat on the log",
          "a cat and a dog", "the mat and the log"]
vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
    corpus * 3, vocabulary_size=290)
keras.utils.set_random_seed(1)
backbone = kzoo.GPTBackbone(vocabulary_size=len(vocabulary), num_layers=2,
                            num_heads=2, hidden_dim=16, intermediate_dim=32,
                            max_sequence_length=24, dropout=0.0)
lm = kzoo.GPTCausalLM(backbone, kzoo.GPTCausalLMPreprocessor(
    kzoo.GPTTokenizer(vocabulary, merges), sequence_length=12))
lm.compile(optimizer=keras.optimizers.Adam(1e-2))
history = lm.fit(corpus, batch_size=4, epochs=3, shuffle=False, verbose=0)
results["gpt_loss"] = history.history["loss"]
results["gpt_generated"] = lm.generate(["the cat", "a dog"], max_length=10)

# ELMo: AllenNLP's test ELMo, vectors for a sentence.
if len(sys.argv) > 1 and sys.argv[1]:
    embedder = kzoo.ElmoEmbedder.from_preset(sys.argv[1])
    vectors = embedder.embed_sentence(["The", "bank", "of", "the", "river"])
    results["elmo_vectors"] = np.asarray(vectors).tolist()

# word2vec: a vocabulary and an epoch on a small corpus.
lines = [" ".join(np.random.default_rng(i).choice(
    "cat dog cow horse hammer saw drill wrench".split(), 10)) for i in range(200)]
keras.utils.set_random_seed(2)
w2v = kzoo.Word2VecSkipGram.from_corpus(lines, hidden_dim=8, min_count=1, seed=3)
history = w2v.fit(lines, epochs=1, batch_size=256, verbose=0)
results["word2vec_vocabulary"] = w2v.preprocessor.tokenizer.get_vocabulary()
results["word2vec_loss_finite"] = bool(np.isfinite(history.history["loss"]).all())
results["word2vec_vector_shape"] = list(np.asarray(w2v.word_vectors()["cat"]).shape)

results["tensorflow_imported"] = "tensorflow" in sys.modules
print("RESULTS " + json.dumps(results))
