"""Learning a WordPiece vocabulary from word counts (numpy only).

The algorithm is tensorflow-text's WordPiece learner
(``bert_vocab_from_dataset``): for a count threshold, count every substring
of every word, keep the substrings whose count, less the counts of their
one-character-longer extensions, reaches the threshold, and repeat with
counts taken only from the segmentation points a greedy longest-match split
with the kept tokens gives. A binary search over the threshold finds the
token set whose size is closest to the target.

Here each distinct substring of the words gets an integer id once, and every
pass is a numpy reduction over the (word, start, end) triples, so the search
costs a few array passes per threshold.
"""

import collections
import itertools

import numpy as np


class _Substrings:
    """Every substring of the words, as ids: each (word, start, end) triple,
    in word order, then start order, then end order."""

    def __init__(self, words, counts, include_joiner_token, joiner):
        starts = collections.defaultdict(itertools.count().__next__)
        suffixes = (collections.defaultdict(itertools.count().__next__)
                    if include_joiner_token else starts)
        # Ids of starts and suffixes are numbered apart, then joined.
        start_ids, suffix_ids = [], []
        start_flags = []
        row_lengths, row_words, word_rows = [], [], []
        for index, word in enumerate(words):
            size = len(word)
            word_rows.append(len(row_lengths))
            for start in range(size):
                table = starts if start == 0 else suffixes
                ids = [table[word[start:end]] for end in range(start + 1, size + 1)]
                if start == 0 or not include_joiner_token:
                    start_ids.extend(ids)
                    suffix_ids.extend([-1] * len(ids))
                else:
                    start_ids.extend([-1] * len(ids))
                    suffix_ids.extend(ids)
                start_flags.append(start)
                row_lengths.append(size - start)
                row_words.append(index)
        start_ids = np.asarray(start_ids, np.int64)
        suffix_ids = np.asarray(suffix_ids, np.int64)
        offset = len(starts)
        self.ids = np.where(start_ids >= 0, start_ids, suffix_ids + offset)
        start_pieces = sorted(starts, key=starts.__getitem__)
        suffix_pieces = (sorted(suffixes, key=suffixes.__getitem__)
                         if include_joiner_token else [])
        self.tokens = start_pieces + [joiner + p for p in suffix_pieces]
        self.size = len(self.tokens)
        # Tokens as strings: a start piece equal to a joined suffix is one token.
        names = {}
        self.token_names = np.fromiter(
            (names.setdefault(t, len(names)) for t in self.tokens), np.int64, self.size)
        self.names = list(names)

        self.row_lengths = np.asarray(row_lengths, np.int64)
        self.row_starts = np.concatenate([[0], np.cumsum(self.row_lengths)[:-1]])
        self.row_offsets = np.asarray(start_flags, np.int64)  # start in the word
        self.row_words = np.asarray(row_words, np.int64)
        self.word_rows = np.asarray(word_rows, np.int64)
        self.word_lengths = np.fromiter(map(len, words), np.int64, len(words))
        self.counts = np.asarray(counts, np.int64)
        self.triple_rows = np.repeat(np.arange(len(row_lengths)), self.row_lengths)
        self.triple_ends = (np.arange(len(self.ids))
                            - self.row_starts[self.triple_rows]
                            + self.row_offsets[self.triple_rows] + 1)
        # Each token's prefix one character shorter (the previous triple of
        # its row), -1 for single characters.
        first = np.zeros(len(self.ids), bool)
        first[self.row_starts] = True
        self.parents = np.full(self.size, -1, np.int64)
        inner = np.flatnonzero(~first)
        self.parents[self.ids[inner]] = self.ids[inner - 1]
        self.lengths = np.zeros(self.size, np.int64)
        self.lengths[self.ids] = self.triple_ends - self.row_offsets[self.triple_rows]

    def counts_of_rows(self, row_weights):
        """Each token's count when each row (a word's start) counts
        ``row_weights`` times for every end."""
        weights = row_weights[self.triple_rows].astype(np.float64)
        return np.rint(np.bincount(self.ids, weights, self.size)).astype(np.int64)

    def split_rows(self, known_names):
        """The rows where a greedy longest-match split of each word with the
        tokens named ``known_names`` (bool per name) starts a piece, as the
        words' count per row (0 elsewhere); words that cannot be split count
        nowhere."""
        known = known_names[self.token_names[self.ids]]
        ends = np.where(known, self.triple_ends, -1)
        longest = np.maximum.reduceat(ends, self.row_starts)
        num_words = len(self.word_rows)
        weights = np.zeros(len(self.row_lengths), np.int64)
        position = np.zeros(num_words, np.int64)
        active = np.arange(num_words)
        failed = np.zeros(num_words, bool)
        chosen_rows, chosen_words = [], []
        while len(active):
            rows = self.word_rows[active] + position[active]
            chosen_rows.append(rows)
            chosen_words.append(active)
            end = longest[rows]
            failed[active[end < 0]] = True
            position[active] = end
            active = active[(end >= 0) & (end < self.word_lengths[active])]
        rows = np.concatenate(chosen_rows)
        words = np.concatenate(chosen_words)
        keep = ~failed[words]
        weights[rows[keep]] = self.counts[words[keep]]
        return weights


def _kept_tokens(substrings, counts, threshold):
    """``{token: count}`` of the tokens kept at ``threshold``: a token's
    count less the counts of its one-character-longer extensions."""
    has_parent = substrings.parents >= 0
    extended = np.bincount(substrings.parents[has_parent], counts[has_parent],
                           substrings.size)
    own = counts - np.rint(extended).astype(np.int64)
    kept = np.flatnonzero((counts > 0) & (own >= threshold))
    # A token written the same as a longer one (a start piece beginning with
    # the joiner) takes the count of the shorter one.
    kept = kept[np.lexsort((-substrings.lengths[kept],))]
    tokens = {}
    for token in kept.tolist():
        tokens[substrings.tokens[token]] = int(own[token])
    return tokens, kept


def _learn_at(substrings, base, base_names, threshold, num_iterations):
    """The ``{token: count}`` learned at one count threshold, from the
    tokens always kept (``base``, count 1 unless learned; ``base_names``
    their indices in ``substrings.names``)."""
    all_rows = substrings.counts[substrings.row_words]
    tokens, kept = {}, None
    for iteration in range(num_iterations):
        if iteration == 0:
            counts = substrings.counts_of_rows(all_rows)
        else:
            known = np.zeros(len(substrings.names), bool)
            known[base_names] = True
            known[substrings.token_names[kept]] = True
            counts = substrings.counts_of_rows(substrings.split_rows(known))
        learned, kept = _kept_tokens(substrings, counts, threshold)
        tokens = {**base, **learned}
    return tokens


def learn_word_piece(
    word_counts,
    vocabulary_size,
    reserved_tokens=(),
    upper_threshold=10_000_000,
    lower_threshold=10,
    num_iterations=4,
    max_input_words=5_000_000,
    max_token_length=50,
    max_unique_characters=1000,
    slack_ratio=0.05,
    include_joiner_token=True,
    joiner="##",
):
    """A WordPiece vocabulary learned from word counts.

    The algorithm of tensorflow-text's ``bert_vocab_from_dataset``, with the
    same arguments and result: words longer than ``max_token_length`` or
    equal to a reserved token are dropped; only words made of the
    ``max_unique_characters`` most frequent characters are kept (at most
    ``max_input_words`` of them, the most frequent); a binary search between
    ``lower_threshold`` and ``upper_threshold`` (clipped to the word counts)
    looks for the count threshold whose vocabulary size lies within
    ``slack_ratio`` below ``vocabulary_size``. Ties are broken by the words
    themselves, never by input order, so equal counts give equal results.

    Args:
        word_counts: dict or iterable of ``(word, count)`` pairs.
        vocabulary_size: int. The target size, reserved tokens included (the
            result may be larger when no threshold reaches it).
        reserved_tokens: sequence of str placed first.
        include_joiner_token: bool. Suffix pieces start with ``joiner``.
        (the others as described above).

    Returns:
        A list of str: the reserved tokens, every kept character (sorted),
        then the learned tokens by decreasing count, then alphabetically.

    Example:
    >>> learn_word_piece({"low": 5, "lower": 2, "newest": 6}, 20, ["[UNK]"],
    ...                  lower_threshold=1)[:6]
    ['[UNK]', 'e', 'l', 'n', 'o', 'r']
    """
    if isinstance(word_counts, dict):
        word_counts = word_counts.items()
    word_counts = [(str(w), int(c)) for w, c in word_counts]
    reserved_tokens = list(reserved_tokens)
    if not word_counts:
        return list(dict.fromkeys(reserved_tokens))
    all_counts = [c for _, c in word_counts]
    upper = max(all_counts) if upper_threshold is None else min(
        max(all_counts), upper_threshold)
    lower = min(all_counts) if lower_threshold is None else max(
        min(all_counts), lower_threshold)

    reserved = set(reserved_tokens)
    word_counts = [(w, c) for w, c in word_counts
                   if len(w) <= max_token_length and w not in reserved]
    character_counts = collections.Counter()
    for word, count in word_counts:
        for character in word:
            character_counts[character] += count
    allowed = {c for c, _ in sorted(character_counts.items(),
                                    key=lambda item: (-item[1], item[0]))
               [:max_unique_characters]}
    word_counts.sort(key=lambda item: (-item[1], item[0]))
    kept_words = []
    for word, count in word_counts:
        if max_input_words not in (None, -1) and len(kept_words) >= max_input_words:
            break
        if allowed.issuperset(word):
            kept_words.append((word, count))
    words = [w for w, _ in kept_words]
    if not words:
        return list(dict.fromkeys(reserved_tokens))
    characters = sorted(set().union(*map(set, words)))
    substrings = _Substrings(words, [c for _, c in kept_words],
                             include_joiner_token, joiner)
    slack = max(slack_ratio * vocabulary_size, 0)
    base = {c: 1 for c in characters}
    if include_joiner_token:
        base.update({joiner + c: 1 for c in characters})
    base_names = [i for i, n in enumerate(substrings.names) if n in base]

    def vocabulary_at(threshold):
        tokens = _learn_at(substrings, base, base_names, threshold,
                           num_iterations)
        ranked = sorted(tokens.items(), key=lambda item: (-item[1], item[0]))
        return list(dict.fromkeys(
            reserved_tokens + characters + [t for t, _ in ranked]))

    while True:
        threshold = (upper + lower) // 2
        vocabulary = vocabulary_at(threshold)
        size = len(vocabulary)
        if (size <= vocabulary_size and vocabulary_size - size <= slack) or (
                lower >= upper or threshold <= 1):
            return vocabulary
        if size > vocabulary_size:
            lower = threshold + 1
        else:
            upper = threshold - 1
