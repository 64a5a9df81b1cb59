"""BERT pretraining (masked LM + next sentence): a WordPiece vocabulary and
a small BERT, from documents of sentences.

Used by ``kzoo pretrain bert`` and ``examples/pretrain_bert.py``.
"""

import keras

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_pretrainer import BertPretrainer
from kzoo.models.bert.bert_pretrainer_preprocessor import BertPretrainerPreprocessor
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.tokenizers import compute_word_piece_vocabulary


def split_sentences(text):
    """Sentences of a text, split on ". " (empty ones dropped)."""
    sentences = [s.strip() for s in text.split(". ")]
    return [s for s in sentences if s]


def train_tokenizer(documents, vocabulary_size):
    """A WordPiece ``BertTokenizer`` learned from the documents' sentences."""
    vocabulary = compute_word_piece_vocabulary(
        [s for d in documents for s in d], vocabulary_size=vocabulary_size)
    return BertTokenizer(vocabulary=vocabulary)


def build_pretrainer(tokenizer, sequence_length, num_layers=2, num_heads=2,
                     hidden_dim=64, intermediate_dim=None, dropout=0.1,
                     learning_rate=1e-3, seed=0):
    """A ``BertPretrainer`` (its preprocessor pairs and masks raw documents)
    compiled with Adam and gradient clipping."""
    preprocessor = BertPretrainerPreprocessor(
        tokenizer, sequence_length=sequence_length, seed=seed)
    backbone = BertBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=num_layers,
        num_heads=num_heads, hidden_dim=hidden_dim,
        intermediate_dim=intermediate_dim or 4 * hidden_dim,
        max_sequence_length=sequence_length, dropout=dropout)
    model = BertPretrainer(backbone, preprocessor=preprocessor)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate, clipnorm=1.0))
    return model
