"""ELMo pretraining (forward + backward LM): a word vocabulary for the
softmax and a small character biLM, from sentences.

The recipe of ``kzoo pretrain elmo`` (``pretrain``, ``evaluate``) and
``examples/pretrain_elmo.py``.
"""

import keras
import numpy as np

from kzoo.data.corpus import split_sentences
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_language_model import ElmoLanguageModel
from kzoo.models.elmo.elmo_language_model_preprocessor import ElmoLanguageModelPreprocessor
from kzoo.preprocessing.batches import shuffled_epoch
from kzoo.tokenizers import WordTokenizer, compute_word_vocabulary
from kzoo.training.budget import budget_size

SMALL_FILTERS = ((1, 16), (2, 16), (3, 32), (4, 64), (5, 128))
#: ``kzoo pretrain elmo``'s sizes where the command line gives none
DEFAULTS = {"batch_size": 32, "learning_rate": 2e-3, "vocabulary_size": 20000,
            "sequence_length": 32, "hidden_dim": 512, "num_layers": 2}


def sentences_of(articles, max_words):
    """Lines split into sentences (``kzoo.data.split_sentences``); those of
    3 words or more, cut to ``max_words``."""
    out = []
    for article in articles:
        for line in article.split("\n"):
            for sentence in split_sentences(line):
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


def language_model_from_options(tokenizer, options):
    """``build_language_model`` with ``kzoo pretrain elmo``'s options."""
    return build_language_model(
        tokenizer, options.sequence_length, num_layers=options.num_layers,
        hidden_dim=options.hidden_dim, projection_dim=options.projection_dim,
        dropout=options.dropout, learning_rate=options.learning_rate,
        seed=options.seed)


def add_arguments(group):
    """``kzoo pretrain elmo``'s own options."""
    group.add_argument("--projection-dim", type=int, default=128,
                       help="the LSTMs' projection (the vectors are twice this)")


def pretrain(documents, options):
    """``kzoo pretrain elmo``: sentences of 3 words or more (cut to
    ``options.sequence_length - 2`` words), the softmax's vocabulary, a
    small character biLM; each epoch's sentences shuffled by
    ``(options.seed, epoch)``. Returns the model and ``resumable_fit``'s
    data arguments."""
    sentences = sentences_of(["\n".join(d) for d in documents],
                             options.sequence_length - 2)
    if not sentences:
        raise ValueError("the corpus has no sentence of 3 words or more.")
    tokenizer = train_tokenizer(sentences, options.vocabulary_size)
    model = language_model_from_options(tokenizer, options)
    print(f"ELMo: {tokenizer.vocabulary_size():,} words in the softmax; "
          f"{len(sentences):,} sentences")
    sentences = np.asarray(sentences, dtype=object)
    return model, {"data_for_epoch": lambda epoch: shuffled_epoch(
        sentences, epoch, options.batch_size, options.seed)}


def held_out(model, documents, batch_size):
    """Held-out measures of an ``ElmoLanguageModel`` on the documents'
    sentences, cut as in training: ``model.evaluate``'s numbers (the loss,
    ``forward_perplexity``, ``backward_perplexity``) and ``sentences``."""
    sentences = sentences_of(["\n".join(d) for d in documents],
                             model.preprocessor.sequence_length - 2)
    result = model.evaluate(sentences, batch_size=batch_size, verbose=0,
                            return_dict=True)
    result = {key: float(value) for key, value in result.items()}
    result["sentences"] = float(len(sentences))
    return result


def evaluate(model, documents, batch_size):
    """Held-out forward and backward perplexity of an ``ElmoLanguageModel``
    on the documents' sentences, cut as in training (``kzoo evaluate
    --corpus``)."""
    result = held_out(model, documents, batch_size)
    return (f"perplexity forward {result['forward_perplexity']:.2f}, backward "
            f"{result['backward_perplexity']:.2f} ({int(result['sentences']):,} "
            "sentences)")


def budget_options(minutes):
    """The sizes for a training budget of ``minutes`` on a 2-core CPU
    (``kzoo compare``), from ``kzoo.training.budget_size``: vectors as wide
    as the others' hidden size (the projection is half of it, the forward
    and backward halves side by side), LSTM cells twice that wide, ELMo's
    two layers whatever the budget. A step reads every character of its
    words, which costs more than the others' steps: up to 10 minutes, the
    batches are of 16 sentences cut to 20 words (else 32 of 32), so that
    a minute makes enough steps for the loss to fall."""
    size = budget_size(minutes)
    short = minutes <= 10
    return {"hidden_dim": 2 * size["hidden_dim"],
            "projection_dim": size["hidden_dim"] // 2, "num_layers": 2,
            "batch_size": 16 if short else 32, "sequence_length": 20 if short else 32,
            "vocabulary_size": size["vocabulary_size"]}
