"""word2vec's adapters for ``kzoo.analysis`` and the ``kzoo`` command."""

from kzoo.analysis.static_word_in_context import StaticWordInContext
from kzoo.models.word2vec.word2vec_task import Word2VecTask
from kzoo.models.word2vec.word_vectors import WordVectors


def word_vectors(model):
    """A ``WordVectors`` from a preset (a word2vec / GloVe file, a
    registered name, a ``kzoo pretrain word2vec`` folder), a word2vec task
    or a ``WordVectors``."""
    if isinstance(model, WordVectors):
        return model
    if isinstance(model, Word2VecTask):
        return model.word_vectors()
    if isinstance(model, str):
        return WordVectors.from_preset(model)
    raise TypeError(f"No word vectors in a {type(model).__name__}: pass word "
                    "vectors, a word2vec task or a preset.")


def word_in_context(model, tokenizer=None, batch_size=1024):
    """A ``StaticWordInContext`` (one layer: the word's vector in every
    context) for anything ``word_vectors`` takes."""
    return StaticWordInContext(word_vectors(model), batch_size=batch_size)
