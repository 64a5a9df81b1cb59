"""word2vec pretraining: the recipe of ``kzoo pretrain word2vec``."""

from kzoo.models.word2vec.word2vec_cbow import Word2VecCBOW
from kzoo.models.word2vec.word2vec_skip_gram import Word2VecSkipGram
from kzoo.training.budget import budget_size

#: ``kzoo pretrain word2vec``'s values where the command line gives none
#: (no batch size: ``fit`` picks one for the corpus)
DEFAULTS = {"learning_rate": 0.025, "hidden_dim": 100}


def add_arguments(group):
    """``kzoo pretrain word2vec``'s own options (gensim's names)."""
    group.add_argument("--cbow", action="store_true", help="CBOW (default skip-gram)")
    group.add_argument("--window", type=int, default=5)
    group.add_argument("--negative", type=int, default=5)
    group.add_argument("--min-count", type=int, default=5)


def pretrain(documents, options):
    """``kzoo pretrain word2vec``: skip-gram (or CBOW with
    ``options.cbow``) with negative sampling, ``options.learning_rate``
    the starting alpha, on the corpus's lines streamed in order. Returns
    the model and ``resumable_fit``'s data arguments (one ``fit`` from the
    resumed epoch)."""
    lines = [line for document in documents for line in document]
    cls = Word2VecCBOW if options.cbow else Word2VecSkipGram
    model = cls.from_corpus(lines, hidden_dim=options.hidden_dim,
                            min_count=options.min_count, window=options.window,
                            negative=options.negative, seed=options.seed)
    model.compile(alpha=options.learning_rate)
    print(f"word2vec ({'CBOW' if options.cbow else 'skip-gram'}): "
          f"{model.preprocessor.tokenizer.vocabulary_size():,} words in the vocabulary")
    return model, {"data": lines, "batch_size": options.batch_size}


def budget_options(minutes):
    """The size for a training budget of ``minutes`` (``kzoo compare``):
    vectors as wide as the contextual families' hidden size at that budget
    (``kzoo.training.budget_size``)."""
    return {"hidden_dim": budget_size(minutes)["hidden_dim"]}
