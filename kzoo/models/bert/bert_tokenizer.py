"""BERT's WordPiece tokenizer."""

from kzoo.api_export import kzoo_export
from kzoo.tokenizers.word_piece_tokenizer import WordPieceTokenizer


@kzoo_export("kzoo.models.BertTokenizer")
class BertTokenizer(WordPieceTokenizer):
    """WordPiece with BERT's basic tokenization and special tokens.

    Lowercases and strips accents when ``lowercase=True`` (the uncased
    checkpoints), splits on whitespace, punctuation and CJK characters, then
    splits words into the longest vocabulary pieces (``##`` continuations).
    The vocabulary must hold ``[PAD] [UNK] [CLS] [SEP] [MASK]``.

    Args:
        vocabulary: list of str or path to a ``vocab.txt``.
        lowercase: bool. True for uncased checkpoints.
        **kwargs: see ``kzoo.tokenizers.WordPieceTokenizer``.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick", "fox"]
    >>> tokenizer = kzoo.models.BertTokenizer(vocabulary=vocab)
    >>> ops.convert_to_numpy(tokenizer("The quick fox!")).tolist()
    [5, 6, 7, 8, 1]
    """

    def __init__(self, vocabulary=None, lowercase=True, **kwargs):
        super().__init__(vocabulary=vocabulary, lowercase=lowercase, **kwargs)
