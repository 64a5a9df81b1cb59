"""A kzoo preprocessor as a Hugging Face ``tokenizers`` ``tokenizer.json``.

``tokenizer_json(preprocessor)`` builds a ``tokenizers.Tokenizer`` that gives
the ids kzoo's preprocessor gives: the same normalization and splitting
(BERT's basic tokenizer, WordPiece with the preprocessor's unknown token),
the preprocessor's special tokens around the text (``[CLS] a [SEP]``, a
pair ``[CLS] a [SEP] b [SEP]`` with segment ids 0 then 1), truncated and
padded to its sequence length. Its ``Encoding`` then holds what an
exported graph takes: ``ids`` (``token_ids``), ``type_ids``
(``segment_ids``) and ``attention_mask`` (``padding_mask``).
"""

from kzoo.tokenizers.word_piece_tokenizer import WordPieceTokenizer


def tokenizer_json(preprocessor, sequence_length=None):
    """The ``tokenizers.Tokenizer`` equal to ``preprocessor`` on strings.

    Args:
        preprocessor: a kzoo preprocessor holding a WordPiece tokenizer and
            packing ``start_token`` / ``sep_token`` / ``end_token`` around
            one or two segments.
        sequence_length: int or None. Pad and truncate to this length
            (default the preprocessor's).

    Returns:
        A ``tokenizers.Tokenizer``; ``.save(path)`` writes ``tokenizer.json``.
    """
    tokenizer = getattr(preprocessor, "tokenizer", None)
    if not isinstance(tokenizer, WordPieceTokenizer):
        raise TypeError(
            f"A tokenizer.json is written for a WordPiece tokenizer, got "
            f"{type(tokenizer).__name__} in {type(preprocessor).__name__}.")
    if tokenizer.vocabulary is None:
        raise ValueError("The tokenizer has no vocabulary yet: set it before export.")
    if sequence_length is None:
        sequence_length = getattr(preprocessor, "sequence_length", None)
    built = _word_piece(tokenizer)
    _add_template(built, preprocessor, tokenizer)
    if sequence_length is not None:
        built.enable_truncation(max_length=int(sequence_length))
        pad = tokenizer.pad_token_id or 0
        built.enable_padding(length=int(sequence_length), pad_id=pad,
                             pad_token=tokenizer.vocabulary[pad])
    return built


def _word_piece(tokenizer):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    vocabulary = {token: i for i, token in enumerate(tokenizer.vocabulary)}
    built = Tokenizer(models.WordPiece(
        vocabulary, unk_token=tokenizer.oov_token,
        max_input_chars_per_word=tokenizer.max_input_chars_per_word))
    strip_accents = tokenizer.strip_accents
    if strip_accents is None:  # kzoo's default, as BERT's: follow lowercase
        strip_accents = tokenizer.lowercase
    built.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True,
        strip_accents=bool(strip_accents), lowercase=bool(tokenizer.lowercase))
    if tokenizer.split_on_punctuation:
        built.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    else:
        built.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    built.decoder = decoders.WordPiece()
    if tokenizer.special_tokens_in_strings:
        built.add_special_tokens(
            [t for t in tokenizer.special_tokens if t in vocabulary])
    return built


def _add_template(built, preprocessor, tokenizer):
    from tokenizers import processors

    start, sep, end = (getattr(preprocessor, name, None)
                       for name in ("start_token", "sep_token", "end_token"))
    special = [t for t in (start, sep, end) if t is not None]
    ids = {token: preprocessor.special_token_id(token) for token in special}
    first = ([start] if start else []) + ["$A:0"] + ([end] if end else [])
    if sep is not None:
        second = ([start] if start else []) + ["$A:0", sep, "$B:1"] + (
            [f"{end}:1"] if end else [])
    else:
        second = None
    built.post_processor = processors.TemplateProcessing(
        single=" ".join(first), pair=" ".join(second) if second else None,
        special_tokens=list(ids.items()))
