"""Training byte-level BPE merges (GPT-2's) from a corpus."""

import collections
import heapq
import json
import re

from kzoo.preprocessing.engine import engine, is_tensorflow_value, tf
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.preprocessing_layer import check_type
from kzoo.tokenizers.byte_pair_tokenizer import bytes_to_unicode, split_words
from kzoo.tokenizers.tokenizer import write_lines
from kzoo.tokenizers.word_piece_vocabulary import (
    count_words,
    python_texts,
    text_batches,
)


def _merge_word(word, a, b, merged):
    """``word`` (a tuple of symbols) with each ``a b`` pair, left to right, merged."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == a and word[i + 1] == b:
            out.append(merged)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def learn_merges(word_counts, min_frequency=2):
    """Yields byte-pair merges learned from ``{tuple of symbols: count}``.

    Repeatedly merges the most frequent adjacent pair, counting each distinct
    word once with its frequency, until no pair occurs ``min_frequency``
    times. Ties go to the smallest ``(first, second)`` pair in string order.
    Pair counts are updated only for the words that contain the merged pair,
    and a heap (with stale entries skipped) finds the next best pair.

    >>> list(learn_merges({("l", "o", "w"): 5, ("l", "o", "t"): 2}))
    [('l', 'o'), ('lo', 'w'), ('lo', 't')]
    """
    words = [list(w) for w in word_counts]
    freqs = list(word_counts.values())
    counts = collections.Counter()
    where = collections.defaultdict(set)
    for i, (word, freq) in enumerate(zip(words, freqs)):
        for pair in zip(word, word[1:]):
            counts[pair] += freq
            where[pair].add(i)
    heap = [(-c, a, b) for (a, b), c in counts.items()]
    heapq.heapify(heap)
    while heap:
        count, a, b = heapq.heappop(heap)
        if -count != counts.get((a, b), 0):
            continue  # stale entry
        if -count < min_frequency:
            return
        yield a, b
        delta = collections.Counter()
        for i in where.pop((a, b)):
            word, freq = words[i], freqs[i]
            new = _merge_word(word, a, b, a + b)
            if len(new) == len(word):
                continue
            for pair in zip(word, word[1:]):
                delta[pair] -= freq
            for pair in zip(new, new[1:]):
                delta[pair] += freq
                where[pair].add(i)
            words[i] = new
        for pair, change in delta.items():
            if change:
                counts[pair] += change
                if counts[pair] > 0:
                    heapq.heappush(heap, (-counts[pair], *pair))
        del counts[(a, b)]



def _python_word_counts(data, special_tokens):
    """``{byte-mapped word: count}`` of GPT-2's pre-tokenization of ``data``
    (Hugging Face's ``ByteLevel`` pre-tokenizer, which ``BytePairTokenizer``'s
    Python implementation uses), ``special_tokens`` cut out."""
    from tokenizers import pre_tokenizers

    pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    special = None
    if special_tokens:
        special = re.compile("|".join(
            re.escape(t) for t in sorted(special_tokens, key=len, reverse=True)))
    counts = collections.Counter()
    for text in python_texts(data):
        for piece in special.split(text) if special is not None else [text]:
            if piece:
                counts.update(w for w, _ in pre_tokenizer.pre_tokenize_str(piece))
    return counts


@kzoo_export("kzoo.tokenizers.compute_byte_pair_merges")
def compute_byte_pair_merges(
    data,
    vocabulary_size,
    min_frequency=2,
    special_tokens=("<|endoftext|>",),
    vocabulary_output_file=None,
    merges_output_file=None,
):
    """Trains a byte-level BPE vocabulary and merges (GPT-2's) from a corpus.

    The text is split into words with GPT-2's pre-tokenization regex (as
    ``BytePairTokenizer`` does; ``special_tokens`` in the text are cut out
    and not learned from), each word's UTF-8 bytes become symbols of GPT-2's
    256-character byte alphabet, and the most frequent adjacent pair is
    merged until the vocabulary has ``vocabulary_size`` tokens or no pair
    occurs ``min_frequency`` times (see ``learn_merges`` for the counting and
    the tie break: the smallest pair in string order).

    The vocabulary lists the special tokens, then the 256 byte symbols in
    byte order, then each merge result in merge order.

    The words are counted with TensorFlow ops, or, on the Python engine
    (``kzoo.preprocessing.engine``; not for a ``tf.data.Dataset``), with
    Hugging Face ``tokenizers``' pre-tokenizer: the same counts and merges.

    Args:
        data: a list of str, a ``tf.data.Dataset`` of strings, or the path of
            a UTF-8 text file.
        vocabulary_size: int. The vocabulary size to reach, at least
            ``256 + len(special_tokens)``.
        min_frequency: int. Pairs seen fewer times are never merged.
        special_tokens: tuple of str. Tokens placed first in the vocabulary.
        vocabulary_output_file: str or None. Also write the vocabulary there
            as JSON (a ``vocab.json``).
        merges_output_file: str or None. Also write the merges there (a
            ``merges.txt`` with a ``#version: 0.2`` first line).

    Returns:
        ``(vocabulary, merges)``: a dict of token to id and a list of
        ``"a b"`` strings, as ``BytePairTokenizer`` takes them.

    Example:
    >>> vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
    ...     ["hug hugs pug"] * 5, vocabulary_size=260, special_tokens=())
    >>> merges
    ['u g', 'h ug', 'hug s', 'p ug']
    >>> len(vocabulary), vocabulary["hugs"]
    (260, 258)
    """
    check_type("vocabulary_size", vocabulary_size, int, "an int")
    check_type("min_frequency", min_frequency, int, "a positive int")
    special_tokens = tuple(check_type("special_tokens", special_tokens,
                                      (list, tuple), "a tuple of str"))
    byte_symbols = list(bytes_to_unicode().values())
    base = list(dict.fromkeys(list(special_tokens) + byte_symbols))
    if vocabulary_size < len(base):
        raise ValueError(f"`vocabulary_size` must be at least {len(base)} (256 bytes "
                         f"+ special tokens), got {vocabulary_size}.")

    word_counts = collections.Counter()
    if engine() == "python" and not is_tensorflow_value(data):
        for word, count in _python_word_counts(data, special_tokens).items():
            word_counts[tuple(word)] += count
    else:
        def split(text):
            words, is_special = split_words(text, special_tokens)
            return tf.ragged.boolean_mask(words, ~is_special)

        counts = count_words(text_batches(data), split)
        byte_map = bytes_to_unicode()
        for word, count in counts.items():
            word_counts[tuple(byte_map[b] for b in word)] += count

    vocabulary = {token: i for i, token in enumerate(base)}
    merges = []
    for a, b in learn_merges(word_counts, min_frequency):
        if len(vocabulary) == vocabulary_size:
            break
        merges.append(f"{a} {b}")
        # A merge may rebuild an existing token ("a bc" after "ab c").
        vocabulary.setdefault(a + b, len(vocabulary))
    if vocabulary_output_file is not None:
        with open(vocabulary_output_file, "w", encoding="utf-8") as f:
            json.dump(vocabulary, f, ensure_ascii=False)
    if merges_output_file is not None:
        write_lines(merges_output_file, ["#version: 0.2"] + merges)
    return vocabulary, merges

