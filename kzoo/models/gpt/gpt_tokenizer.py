"""GPT's byte-level BPE tokenizer with its special tokens."""

from kzoo.api_export import kzoo_export
from kzoo.tokenizers.byte_pair_tokenizer import BytePairTokenizer

END_TOKEN = "<|endoftext|>"
#: GPT-1's fine-tuning tokens (added to a vocabulary by GPTClassifier users)
START_TOKEN = "<|start|>"
DELIMITER_TOKEN = "<|delim|>"
EXTRACT_TOKEN = "<|extract|>"
SPECIAL_TOKENS = (END_TOKEN, START_TOKEN, DELIMITER_TOKEN, EXTRACT_TOKEN)


@kzoo_export("kzoo.models.GPTTokenizer")
class GPTTokenizer(BytePairTokenizer):
    """GPT-2's byte-level BPE with ``<|endoftext|>``.

    ``<|endoftext|>`` is GPT-2's only special token: it separates documents,
    starts a generation prompt and ends a generated text. It must be in the
    vocabulary. GPT-1-style fine-tuning uses three more, ``<|start|>``,
    ``<|delim|>`` and ``<|extract|>``; those present in the vocabulary are
    kept whole when they appear in text, like ``<|endoftext|>``. The ids of
    Hugging Face's ``GPT2Tokenizer`` on the same ``vocab.json`` and
    ``merges.txt`` (no prefix space).

    Args:
        vocabulary: dict of token to id or a ``vocab.json`` path.
        merges: list of ``"a b"`` rules or a ``merges.txt`` path.
        **kwargs: see ``kzoo.tokenizers.BytePairTokenizer``.

    Example:
    >>> vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
    ...     ["a cat sat"] * 3, vocabulary_size=262)
    >>> tokenizer = kzoo.models.GPTTokenizer(vocabulary, merges)
    >>> ids = tokenizer("a cat<|endoftext|>")
    >>> ops.convert_to_numpy(ids).tolist(), tokenizer.end_token_id
    ([98, 260, 0], 0)
    """

    def __init__(self, vocabulary=None, merges=None, **kwargs):
        # Plain attribute (set before Layer.__init__, kept out of tracking).
        object.__setattr__(self, "_explicit_unsplittable",
                           kwargs.get("unsplittable_tokens"))
        super().__init__(vocabulary=vocabulary, merges=merges, **kwargs)

    def set_vocabulary_and_merges(self, vocabulary, merges):
        super().set_vocabulary_and_merges(vocabulary, merges)
        if self.vocabulary is None:
            return
        if END_TOKEN not in self.vocabulary:
            raise ValueError(
                f"A GPTTokenizer vocabulary must hold {END_TOKEN!r} (GPT-2's "
                "document separator, start and end token); "
                "`compute_byte_pair_merges` adds it by default.")
        if self._explicit_unsplittable is None:
            self.unsplittable_tokens = tuple(
                t for t in SPECIAL_TOKENS if t in self.vocabulary)
            self._functions.clear()

    def _special_id(self, token):
        if self.vocabulary is None or token not in self.vocabulary:
            return None
        return self.vocabulary[token]

    @property
    def end_token_id(self):
        """Id of ``<|endoftext|>``."""
        return self._special_id(END_TOKEN)

    @property
    def start_token_id(self):
        """GPT-2 starts a text with ``<|endoftext|>`` too."""
        return self._special_id(END_TOKEN)

    @property
    def pad_token_id(self):
        """GPT-2 has no padding token: ``<|endoftext|>`` (masked out)."""
        return self._special_id(END_TOKEN)

    def get_config(self):
        config = super().get_config()
        config["unsplittable_tokens"] = self._explicit_unsplittable
        return config
