"""word2vec from token shards: ``kzoo prepare word2vec`` and ``kzoo pretrain
word2vec --data``.

Preparation counts every word of every line (word2vec's vocabulary needs
exact counts: subsampling and negative sampling read them; no sample), as
``Word2VecPreprocessor.from_corpus`` counts a text, and writes each line's
word ids (the out-of-vocabulary token's id for the other words). Training
streams the lines' ids in corpus order through the preprocessor's numpy
pipeline (``Word2VecTask.fit`` takes the ``TokenShards``), in the chunks of
lines that it tokenizes from text: with the same seed, the same vectors as
training on the text of those lines.
"""

from kzoo.data import Preparation
from kzoo.data.shards import ids_dtype
from kzoo.models.word2vec.word2vec_cbow import Word2VecCBOW
from kzoo.models.word2vec.word2vec_preprocessor import Word2VecPreprocessor
from kzoo.models.word2vec.word2vec_skip_gram import Word2VecSkipGram

MIN_COUNT = 5


def _learn(texts, options):
    return Word2VecPreprocessor.tokenizer_from_corpus(
        texts, min_count=options.min_count)


def _encode(tokenizer, lines):
    return tokenizer(lines)


def _add_arguments(group):
    group.add_argument("--min-count", type=int, default=None,
                       help=f"word2vec: the fewest times a word occurs to be in "
                            f"the vocabulary (default {MIN_COUNT})")


PREPARATION = Preparation(
    units=list,
    learn=_learn,
    encode=_encode,
    dtype=lambda tokenizer: ids_dtype(tokenizer.vocabulary_size()),
    sample=False,
    defaults={"min_count": MIN_COUNT},
    options=("min_count",),
    add_arguments=_add_arguments,
    what="lines",
)


def from_shards(shards, options):
    """``kzoo pretrain word2vec --data``: skip-gram (or CBOW with
    ``options.cbow``) on the shards' vocabulary, ``options.learning_rate``
    the starting alpha, trained on their lines streamed in order. Returns
    the model and ``resumable_fit``'s data arguments (one ``fit`` from the
    resumed epoch)."""
    cls = Word2VecCBOW if options.cbow else Word2VecSkipGram
    model = cls.from_tokenizer(shards.tokenizer(), hidden_dim=options.hidden_dim,
                               window=options.window, negative=options.negative,
                               seed=options.seed)
    model.compile(alpha=options.learning_rate)
    print(f"word2vec ({'CBOW' if options.cbow else 'skip-gram'}): "
          f"{model.preprocessor.tokenizer.vocabulary_size():,} words in the "
          f"vocabulary; {shards.num_tokens:,} training words in "
          f"{shards.num_units:,} lines", flush=True)
    return model, {"data": shards, "batch_size": options.batch_size}
