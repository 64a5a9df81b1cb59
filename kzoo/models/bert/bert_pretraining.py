"""BERT pretraining (masked LM + next sentence): a WordPiece vocabulary and
a small BERT, from documents of sentences.

The recipe of ``kzoo pretrain bert`` (``pretrain``) and
``examples/pretrain_bert.py``.
"""

import keras
import numpy as np

from kzoo.data.corpus import split_sentences
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_pretrainer import BertPretrainer
from kzoo.models.bert.bert_pretrainer_preprocessor import BertPretrainerPreprocessor
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.tokenizers import compute_word_piece_vocabulary
from kzoo.training.budget import budget_size

#: ``kzoo pretrain bert``'s sizes where the command line gives none
DEFAULTS = {"batch_size": 32, "learning_rate": 1e-3, "vocabulary_size": 3000,
            "sequence_length": 64, "hidden_dim": 64, "num_layers": 2,
            "num_heads": 2}


def train_tokenizer(documents, vocabulary_size):
    """A WordPiece ``BertTokenizer`` learned from the documents' sentences."""
    vocabulary = compute_word_piece_vocabulary(
        [s for d in documents for s in d], vocabulary_size=vocabulary_size)
    return BertTokenizer(vocabulary=vocabulary)


def build_pretrainer(tokenizer, sequence_length, num_layers=2, num_heads=2,
                     hidden_dim=64, intermediate_dim=None, dropout=0.1,
                     learning_rate=1e-3, seed=0, whole_word_masking=False):
    """A ``BertPretrainer`` (its preprocessor pairs and masks raw documents,
    whole words with ``whole_word_masking``) compiled with Adam and gradient
    clipping."""
    preprocessor = BertPretrainerPreprocessor(
        tokenizer, sequence_length=sequence_length, seed=seed,
        whole_word_masking=whole_word_masking)
    backbone = BertBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=num_layers,
        num_heads=num_heads, hidden_dim=hidden_dim,
        intermediate_dim=intermediate_dim or 4 * hidden_dim,
        max_sequence_length=sequence_length, dropout=dropout)
    model = BertPretrainer(backbone, preprocessor=preprocessor)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate, clipnorm=1.0))
    return model


def pretrainer_from_options(tokenizer, options):
    """``build_pretrainer`` with ``kzoo pretrain bert``'s options."""
    return build_pretrainer(
        tokenizer, options.sequence_length, num_layers=options.num_layers,
        num_heads=options.num_heads, hidden_dim=options.hidden_dim,
        dropout=options.dropout, learning_rate=options.learning_rate,
        seed=options.seed,
        whole_word_masking=getattr(options, "whole_word_masking", False))


def add_arguments(group):
    """``kzoo pretrain bert``'s own options."""
    group.add_argument("--whole-word-masking", action="store_true",
                       help="mask all the word pieces of a chosen word together")


def pretrain(documents, options):
    """``kzoo pretrain bert``: the documents' lines split into sentences, a
    WordPiece vocabulary learned from them, masked LM + next sentence on
    pairs the preprocessor draws; each epoch's document order set by
    ``(options.seed, epoch)``. Returns the model and ``resumable_fit``'s
    data arguments."""
    documents = [[s for line in d for s in split_sentences(line)] for d in documents]
    documents = [d for d in documents if len(d) > 1]
    if not documents:
        raise ValueError("BERT's next-sentence task needs documents of two or more "
                         "sentences; the corpus has none.")
    tokenizer = train_tokenizer(documents, options.vocabulary_size)
    model = pretrainer_from_options(tokenizer, options)
    print(f"BERT: {tokenizer.vocabulary_size():,} word pieces; {len(documents):,} "
          f"documents, {sum(len(d) for d in documents):,} sentences")

    def data_for_epoch(epoch):
        order = np.random.default_rng([options.seed, epoch]).permutation(len(documents))
        return model.preprocessor.dataset_from_documents(
            [documents[i] for i in order], batch_size=options.batch_size, shuffle=False)

    return model, {"data_for_epoch": data_for_epoch}


def held_out(model, documents, batch_size, seed=0):
    """Held-out measures of a ``BertPretrainer`` on the documents (their
    lines split into sentences, documents of one sentence left out, as in
    training): ``model.evaluate``'s numbers (the loss, the masked-LM and
    next-sentence losses and accuracies) on pairs drawn and masked with
    ``seed`` (the same for every model), and ``documents``. The
    preprocessor's seed is given back afterwards."""
    documents = [[s for line in d for s in split_sentences(line)] for d in documents]
    documents = [d for d in documents if len(d) > 1]
    if not documents:
        raise ValueError("the held-out documents have no document of two or more "
                         "sentences, which BERT's next-sentence task needs.")
    preprocessor = model.preprocessor
    saved = preprocessor.seed
    preprocessor.reset_seed(seed)
    try:
        data = preprocessor.dataset_from_documents(documents, batch_size=batch_size,
                                                   shuffle=False)
        result = model.evaluate(data, verbose=0, return_dict=True)
    finally:
        preprocessor.seed = saved
        preprocessor.reset_seed()
    result = {key: float(value) for key, value in result.items()}
    result["documents"] = float(len(documents))
    return result


def budget_options(minutes):
    """The sizes for a training budget of ``minutes`` on a 2-core CPU
    (``kzoo compare``): ``kzoo.training.budget_size``'s, as they are."""
    return budget_size(minutes)
