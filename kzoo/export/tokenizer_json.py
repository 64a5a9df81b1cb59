"""A kzoo preprocessor as a Hugging Face ``tokenizers`` ``tokenizer.json``.

``tokenizer_json(preprocessor)`` builds a ``tokenizers.Tokenizer`` that gives
the ids kzoo's preprocessor gives: the same normalization and splitting
(BERT's basic tokenizer and WordPiece with the preprocessor's unknown
token, or GPT-2's byte-level BPE), and the same special tokens. A packing
preprocessor's ``[CLS] a [SEP]`` (a pair ``[CLS] a [SEP] b [SEP]``, segment
ids 0 then 1) is truncated as its packer truncates (a question answerer's
context only) and padded to its sequence length; a causal
LM's prompt is its start token and the text (``generate``'s prompt),
padded on the right to the longest of the batch. A masked LM's reads the
mask token written in the text as the mask, as its ``fill_mask`` does. Its
``Encoding`` then holds what an exported graph takes: ``ids``
(``token_ids``), ``type_ids`` (``segment_ids``) and ``attention_mask``
(``padding_mask``).
"""

import warnings

from kzoo.models.causal_lm_preprocessor import CausalLMPreprocessor
from kzoo.models.masked_lm_preprocessor import MaskedLMPreprocessor
from kzoo.models.question_answerer_preprocessor import QuestionAnswererPreprocessor
from kzoo.tokenizers.byte_pair_tokenizer import (
    BytePairTokenizer,
    merge_order_is_local,
    unique_merges,
)
from kzoo.tokenizers.word_piece_tokenizer import WordPieceTokenizer


def tokenizer_json(preprocessor, sequence_length=None):
    """The ``tokenizers.Tokenizer`` equal to ``preprocessor`` on strings.

    Args:
        preprocessor: a kzoo preprocessor holding a WordPiece or byte-pair
            tokenizer: one that packs ``start_token`` / ``sep_token`` /
            ``end_token`` around one or two segments, or a causal LM's.
        sequence_length: int or None. Pad and truncate to this length
            (default the preprocessor's); a causal LM's prompts are padded
            to the longest of their batch.

    Returns:
        A ``tokenizers.Tokenizer``; ``.save(path)`` writes ``tokenizer.json``.
    """
    tokenizer = getattr(preprocessor, "tokenizer", None)
    if isinstance(tokenizer, (WordPieceTokenizer, BytePairTokenizer)):
        if tokenizer.vocabulary is None:
            raise ValueError("The tokenizer has no vocabulary yet: set it before export.")
        if isinstance(preprocessor, MaskedLMPreprocessor):
            # Fill-mask's: the mask token written in the text is the mask.
            tokenizer = preprocessor.fill_mask_tokenizer()
    if isinstance(tokenizer, WordPieceTokenizer):
        built = _word_piece(tokenizer)
    elif isinstance(tokenizer, BytePairTokenizer):
        built = _byte_pair(tokenizer)
    else:
        raise TypeError(
            f"A tokenizer.json is written for a WordPiece or byte-pair tokenizer, "
            f"got {type(tokenizer).__name__} in {type(preprocessor).__name__}.")
    pad = tokenizer.pad_token_id or 0
    pad_token = tokenizer.id_to_token(pad)
    if isinstance(preprocessor, CausalLMPreprocessor):
        _add_prompt_template(built, preprocessor)
        built.enable_padding(pad_id=pad, pad_token=pad_token)
        return built
    if sequence_length is None:
        sequence_length = getattr(preprocessor, "sequence_length", None)
    _add_template(built, preprocessor)
    if sequence_length is not None:
        strategy = _truncation_strategy(preprocessor)
        if strategy == "longest_first":
            _warn_on_odd_pair_budget(preprocessor, int(sequence_length))
        built.enable_truncation(max_length=int(sequence_length), strategy=strategy)
        built.enable_padding(length=int(sequence_length), pad_id=pad,
                             pad_token=pad_token)
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


def _byte_pair(tokenizer):
    from tokenizers import decoders

    merges = unique_merges(tokenizer.merges)
    if not merge_order_is_local(merges, getattr(tokenizer, "unk_token", None)):
        raise ValueError(
            "These merges are applied in an order that Hugging Face's BPE does "
            "not reproduce (see kzoo.tokenizers.byte_pair_tokenizer."
            "merge_order_is_local): tokenizer.json would give other ids. "
            "Merges learned in order (compute_byte_pair_merges, GPT-2's) work.")
    built = tokenizer._python_hf_tokenizer(merges)
    built.decoder = decoders.ByteLevel()
    return built


def _add_prompt_template(built, preprocessor):
    from tokenizers import processors

    if not preprocessor.add_start_token:
        return
    start = preprocessor.tokenizer.start_token_id
    token = preprocessor.tokenizer.id_to_token(start)
    built.post_processor = processors.TemplateProcessing(
        single=f"{token} $A", special_tokens=[(token, start)])


def _add_template(built, preprocessor):
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


def _truncation_strategy(preprocessor):
    """The packer's truncation of a pair in ``tokenizers``' words: a
    waterfall (a question answerer's, whose question is kept whole) cuts
    the second text only; round robin cuts the longer text first."""
    if (isinstance(preprocessor, QuestionAnswererPreprocessor)
            or getattr(preprocessor, "truncate", None) == "waterfall"):
        return "only_second"
    return "longest_first"


def _warn_on_odd_pair_budget(preprocessor, sequence_length):
    """Round robin and ``tokenizers``' longest-first cut a pair alike but
    for one token: when both texts are longer than half an odd budget, the
    packer gives the extra token to the first text and ``tokenizers`` to
    the longer (the second on a tie)."""
    if getattr(preprocessor, "num_segments", 1) != 2:
        return
    special = sum(getattr(preprocessor, name, None) is not None
                  for name in ("start_token", "sep_token", "end_token"))
    budget = sequence_length - special
    if budget % 2:
        warnings.warn(
            f"tokenizer.json cuts a long pair one token differently from "
            f"{type(preprocessor).__name__}: with {budget} tokens for the two "
            "texts (odd), when both are longer than half of it the packer keeps "
            "the extra token in the first text and `tokenizers` in the longer "
            "(the second on a tie). "
            f"A sequence_length that leaves an even number (e.g. "
            f"{sequence_length + 1}) for the preprocessor and the export gives "
            "the same ids on every pair.",
            stacklevel=3)
