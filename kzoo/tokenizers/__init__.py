"""Tokenizers shared by every family: WordPiece, byte-level BPE, word level."""

from kzoo.tokenizers.tokenizer import Tokenizer  # noqa: F401
from kzoo.tokenizers.word_tokenizer import WordTokenizer  # noqa: F401
from kzoo.tokenizers.word_vocabulary import compute_word_vocabulary  # noqa: F401
