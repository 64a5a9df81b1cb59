"""ELMo pretraining (forward + backward LM): a word vocabulary for the
softmax and a small character biLM, from sentences.

Used by ``kzoo pretrain elmo`` and ``examples/pretrain_elmo.py``.
"""

import re

import keras

from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_language_model import ElmoLanguageModel
from kzoo.models.elmo.elmo_language_model_preprocessor import ElmoLanguageModelPreprocessor
from kzoo.tokenizers import WordTokenizer, compute_word_vocabulary

SMALL_FILTERS = ((1, 16), (2, 16), (3, 32), (4, 64), (5, 128))


def sentences_of(articles, max_words):
    """Lines split into sentences on '. ', '? ', '! '; those of 3 words or
    more, cut to ``max_words``."""
    out = []
    for article in articles:
        for line in article.split("\n"):
            for sentence in re.split(r"(?<=[.?!])\s+", line):
                words = sentence.split()
                if 3 <= len(words):
                    out.append(" ".join(words[:max_words]))
    return out


def train_tokenizer(sentences, vocabulary_size):
    """The softmax's word vocabulary (``<UNK>``, ``<S>``, ``</S>`` first)."""
    vocabulary, counts = compute_word_vocabulary(
        sentences, max_size=vocabulary_size,
        special_tokens=("<UNK>", "<S>", "</S>"), oov_token="<UNK>")
    return WordTokenizer(vocabulary=vocabulary, counts=counts, oov_token="<UNK>")


def build_language_model(tokenizer, sequence_length, num_layers=2, hidden_dim=512,
                         projection_dim=128, filters=SMALL_FILTERS, dropout=0.1,
                         num_sampled=None, learning_rate=2e-3, seed=0):
    """An ``ElmoLanguageModel`` on a small ``ElmoBackbone``; with the full
    softmax compiled with Adam, with ``num_sampled`` the model's own default
    (bilm-tf's Adagrad)."""
    backbone = ElmoBackbone(
        num_layers=num_layers, hidden_dim=hidden_dim, projection_dim=projection_dim,
        filters=filters, num_highway_layers=1, character_dim=16, dropout=dropout)
    preprocessor = ElmoLanguageModelPreprocessor(tokenizer,
                                                 sequence_length=sequence_length)
    model = ElmoLanguageModel(backbone, preprocessor=preprocessor,
                              num_sampled=num_sampled, seed=seed)
    if not num_sampled:
        model.compile(optimizer=keras.optimizers.Adam(learning_rate, clipnorm=10.0))
    return model
