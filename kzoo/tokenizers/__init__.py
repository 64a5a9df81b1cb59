"""Tokenizers shared by every family: WordPiece, byte-level BPE, word level."""

from kzoo.tokenizers.byte_pair_merges import compute_byte_pair_merges  # noqa: F401
from kzoo.tokenizers.byte_pair_tokenizer import BytePairTokenizer  # noqa: F401
from kzoo.tokenizers.tokenizer import Tokenizer  # noqa: F401
from kzoo.tokenizers.word_piece_tokenizer import WordPieceTokenizer  # noqa: F401
from kzoo.tokenizers.word_piece_vocabulary import compute_word_piece_vocabulary  # noqa: F401
from kzoo.tokenizers.word_tokenizer import WordTokenizer  # noqa: F401
from kzoo.tokenizers.word_vocabulary import compute_word_vocabulary  # noqa: F401
