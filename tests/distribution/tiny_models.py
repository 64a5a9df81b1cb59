"""Tiny seeded tasks and data for the distribution tests (also run by the
tests' worker processes). Dropout is off so that runs compare exactly."""

import keras
import numpy as np

import kzoo
from kzoo.tokenizers import WordTokenizer

BERT_VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "bad",
                   "film", "movie", "great", "awful", "plot", "the", "is", "##s"]
TEXTS = ["a good film", "a great movie", "a bad film", "an awful plot",
         "the film is good", "the plot is bad", "good", "bad film"] * 3
LABELS = np.array([1, 1, 0, 0, 1, 0, 1, 0] * 3)
# Texts that fill the GPT window (8 tokens): every position is a real token.
LM_TEXTS = [" ".join(TEXTS[i:i + 4]) for i in range(len(TEXTS))]
ELMO_VOCABULARY = ["<UNK>", "<S>", "</S>", "the", "river", "bank", "money", "a"]
ELMO_TEXTS = ["the river bank", "a bank", "the money bank river", "a river",
              "the bank", "money money", "a river bank", "the money"] * 2


def bert_classifier(num_heads=4, learning_rate=1e-2):
    """A 2-layer BERT classifier (hidden 8, 4 heads) with Adam."""
    keras.utils.set_random_seed(0)
    backbone = kzoo.BertBackbone(
        vocabulary_size=len(BERT_VOCABULARY), num_layers=2, num_heads=num_heads,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=16, dropout=0.0)
    preprocessor = kzoo.BertClassifierPreprocessor(
        kzoo.BertTokenizer(vocabulary=BERT_VOCABULARY), sequence_length=8)
    model = kzoo.BertClassifier(backbone, 2, preprocessor=preprocessor, dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate))
    return model


def gpt_causal_lm():
    """A 2-layer GPT-2 style LM (hidden 8, 4 heads) on a word vocabulary."""
    keras.utils.set_random_seed(0)
    vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
        TEXTS, vocabulary_size=280)
    backbone = kzoo.GPTBackbone(
        vocabulary_size=len(vocabulary), num_layers=2,
        num_heads=4, hidden_dim=8, intermediate_dim=16, max_sequence_length=16,
        dropout=0.0)
    preprocessor = kzoo.GPTCausalLMPreprocessor(
        kzoo.GPTTokenizer(vocabulary, merges), sequence_length=8)
    model = kzoo.GPTCausalLM(backbone, preprocessor)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    return model


def elmo_language_model():
    """A 2-layer biLM (8 cells, projection 4, two filter widths)."""
    keras.utils.set_random_seed(0)
    backbone = kzoo.ElmoBackbone(
        num_layers=2, hidden_dim=8, projection_dim=4, filters=((1, 4), (2, 4)),
        character_dim=4, max_word_length=10, dropout=0.0)
    preprocessor = kzoo.ElmoLanguageModelPreprocessor(
        WordTokenizer(vocabulary=ELMO_VOCABULARY, oov_token="<UNK>"),
        sequence_length=6, max_word_length=10)
    model = kzoo.ElmoLanguageModel(backbone, preprocessor=preprocessor, seed=0)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    return model


class StepLosses(keras.callbacks.Callback):
    """Records the loss Keras reports after each training step."""

    def __init__(self):
        super().__init__()
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))
