"""Learning a WordPiece vocabulary from word counts (numpy only).

The algorithm is tensorflow-text's WordPiece learner
(``bert_vocab_from_dataset``): for a count threshold, count every substring
of every word, keep the substrings whose count, less the counts of their
longer extensions, reaches the threshold, and repeat with counts taken only
from the segmentation points a greedy longest-match split with the kept
tokens gives. A binary search over the threshold finds the token set whose
size is closest to the target.

A substring's count less its extensions' is the count of the words in which
it runs from a counted start to the word's end, so only suffixes of words
(each "row", a word and a start in it) can be kept, and only those whose
count over every start (the first pass) reaches the threshold. The binary
search never tries a threshold below a floor known from the word counts, so
the suffixes below the floor are pruned before any array is built (their
count only falls as they grow to the left). A trie of the remaining tokens,
walked by every row at once, gives each row the tokens it starts with; each
pass of the search is then a few int32 array passes over the rows.
"""

import collections

import numpy as np

_CODE_BITS = 21  # Unicode code points are below 2**21.
_CHUNK_ROWS = 1 << 20


class _Words:
    """The words as one array of code points; row ``r`` is the word
    starting at character ``r`` of it (a word and a start in it)."""

    def __init__(self, words, counts):
        self.words = words
        self.counts = np.asarray(counts, np.int64)
        self.lengths = np.fromiter(map(len, words), np.int64, len(words))
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)])
        self.codes = np.frombuffer("".join(words).encode("utf-32-le"), np.uint32)
        self.row_words = np.repeat(np.arange(len(words), dtype=np.int32),
                                   self.lengths)
        self.num_rows = len(self.codes)


def _trie(names):
    """A trie of ``names`` as arrays: sorted edge keys (``parent <<
    _CODE_BITS | code point``), the child of each edge, and each node's name
    id (-1 where no name ends). The root is node 0."""
    lengths = np.fromiter(map(len, names), np.int64, len(names))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    codes = np.frombuffer("".join(names).encode("utf-32-le"), np.uint32)
    nodes = np.zeros(len(names), np.int64)
    edges, targets = [], []
    size = 1
    active = np.flatnonzero(lengths > 0)
    depth = 0
    while len(active):
        # Level by level, so the edges of deeper nodes have larger keys.
        unique, inverse = np.unique(
            (nodes[active] << _CODE_BITS) | codes[starts[active] + depth],
            return_inverse=True)
        edges.append(unique)
        targets.append(np.arange(size, size + len(unique)))
        nodes[active] = size + inverse
        size += len(unique)
        depth += 1
        active = active[lengths[active] > depth]
    terminal = np.full(size, -1, np.int32)
    terminal[nodes] = np.arange(len(names), dtype=np.int32)
    return np.concatenate(edges), np.concatenate(targets), terminal


class _Candidates:
    """The tokens that can be kept at any threshold of at least ``floor``,
    as keys (a kind, start piece or suffix piece, and its text), and, for
    every row, the keys and always-kept names it starts with."""

    def __init__(self, words, floor, base, include_joiner_token, joiner):
        self.floor = floor
        names, owns, lengths = [], [], []
        row_keys = np.full(words.num_rows, -1, np.int32)
        if include_joiner_token:
            # Start pieces: each word is its own start piece's only row.
            starts = np.flatnonzero((words.counts >= floor) & (words.lengths > 0))
            row_keys[words.offsets[starts]] = np.arange(len(starts), dtype=np.int32)
            names += [words.words[i] for i in starts.tolist()]
            owns += words.counts[starts].tolist()
            lengths += words.lengths[starts].tolist()
        prefix = joiner if include_joiner_token else ""
        first = 1 if include_joiner_token else 0  # the first counted start
        # Suffixes by growing length: a suffix's count (over its rows) is at
        # most that of the suffix one character shorter.
        alive = np.flatnonzero(words.lengths >= 1 + first)
        groups = np.zeros(len(words.words), np.int64)  # suffix ids, by length
        length = 1
        while len(alive):
            rows = words.offsets[alive] + words.lengths[alive] - length
            suffixes, first_rows, inverse = np.unique(
                (groups[alive] << _CODE_BITS) | words.codes[rows],
                return_index=True, return_inverse=True)
            sums = np.rint(np.bincount(inverse, words.counts[alive].astype(
                np.float64), len(suffixes))).astype(np.int64)
            survivors = np.flatnonzero(sums >= floor)
            new_keys = np.full(len(suffixes), -1, np.int32)
            new_keys[survivors] = np.arange(len(names), len(names) + len(survivors))
            names += [prefix + words.words[i][-length:]
                      for i in alive[first_rows[survivors]].tolist()]
            owns += sums[survivors].tolist()
            lengths += [length] * len(survivors)
            keys = new_keys[inverse]
            kept = keys >= 0
            row_keys[rows[kept]] = keys[kept]
            groups[alive] = inverse
            alive = alive[kept]
            length += 1
            alive = alive[words.lengths[alive] >= length + first]
        self.row_keys = row_keys
        self.owns = np.asarray(owns, np.int64)
        self.lengths = np.asarray(lengths, np.int64)
        # Tokens as strings: a start piece equal to a joined suffix is one name.
        name_ids = {}
        self.key_names = np.fromiter(
            (name_ids.setdefault(n, len(name_ids)) for n in names), np.int32,
            len(names))
        self.keys = names
        self.base_names = np.asarray(
            [name_ids.setdefault(n, len(name_ids)) for n in base], np.int32)
        self.num_names = len(name_ids)
        # The highest first-pass count of each name (always-kept names: any).
        self.name_owns = np.zeros(self.num_names, np.int64)
        np.maximum.at(self.name_owns, self.key_names, self.owns)
        self.name_owns[self.base_names] = np.iinfo(np.int64).max
        self._match(words, list(name_ids), prefix)

    def _match(self, words, names, prefix):
        """``self.matches[d]``: (rows, name ids) of the rows whose first
        ``d + 2`` characters (after the joiner on a suffix row) are a name."""
        edges, targets, terminal = _trie(names)
        suffix_node = 0
        for character in prefix:
            key = (suffix_node << _CODE_BITS) | ord(character)
            suffix_node = targets[np.searchsorted(edges, key)]

        matches = collections.defaultdict(list)
        for begin in range(0, words.num_rows, _CHUNK_ROWS):
            rows = np.arange(begin, min(begin + _CHUNK_ROWS, words.num_rows))
            ends = words.offsets[words.row_words[rows] + 1]
            nodes = np.where(words.offsets[words.row_words[rows]] == rows, 0,
                             suffix_node)
            depth = 0
            while len(rows):
                key = (nodes << _CODE_BITS) | words.codes[rows + depth]
                found = np.minimum(np.searchsorted(edges, key), len(edges) - 1)
                present = edges[found] == key
                rows, nodes = rows[present], targets[found[present]]
                if depth:
                    hit = terminal[nodes]
                    matches[depth - 1].append(
                        (rows[hit >= 0].astype(np.int32), hit[hit >= 0]))
                depth += 1
                more = rows + depth < ends[present]
                rows, nodes, ends = rows[more], nodes[more], ends[present][more]
        self.matches = [
            (np.concatenate([r for r, _ in matches[d]] or [np.zeros(0, np.int32)]),
             np.concatenate([n for _, n in matches[d]] or [np.zeros(0, np.int32)]))
            for d in range(max(matches, default=-1) + 1)]

    def at(self, threshold):
        """The matches of names that can be kept at ``threshold``."""
        result = []
        for rows, names in self.matches:
            usable = self.name_owns[names] >= threshold
            result.append((rows[usable], names[usable]))
        return result


def _split_rows(words, matches, known):
    """The rows where a greedy longest-match split of each word with the
    names ``known`` (bool per name id) starts a piece."""
    longest = np.ones(words.num_rows, np.int8)
    for depth, (rows, names) in enumerate(matches):
        is_known = known[names]
        longest[rows[is_known]] = depth + 2
    position = words.offsets[:-1][words.lengths > 0]
    ends = words.offsets[1:][words.lengths > 0]
    chosen = []
    while len(position):
        chosen.append(position)
        position = position + longest[position]
        more = position < ends
        position, ends = position[more], ends[more]
    return np.concatenate(chosen)


def _learn_at(words, candidates, threshold, num_iterations):
    """The ``{token: count}`` learned at one count threshold, the
    always-kept characters counting 1 unless learned."""
    owns = candidates.owns
    matches = candidates.at(threshold)
    for iteration in range(num_iterations):
        if iteration:
            known = np.zeros(candidates.num_names, bool)
            known[candidates.base_names] = True
            known[candidates.key_names[kept]] = True
            rows = _split_rows(words, matches, known)
            keys = candidates.row_keys[rows]
            counted = keys >= 0
            owns = np.rint(np.bincount(
                keys[counted], words.counts[words.row_words[rows[counted]]],
                len(candidates.owns))).astype(np.int64)
        kept = np.flatnonzero(owns >= threshold)
    # A start piece written as a joined suffix takes the suffix's count.
    kept = kept[np.argsort(-candidates.lengths[kept], kind="stable")]
    return kept, owns


def _lowest_threshold(counts, vocabulary_size, lower, upper):
    """A threshold the binary search never goes below. Every word whose
    count reaches a threshold is kept whole, so a threshold at which fewer
    than ``vocabulary_size`` words reach it exceeds the count ``c`` of the
    ``vocabulary_size``-th most frequent word; the search's upper bound is
    ``upper`` or one below such a threshold, hence at least ``c``."""
    if len(counts) >= vocabulary_size:
        bound = int(np.partition(counts, len(counts) - vocabulary_size)[
            len(counts) - vocabulary_size])
    else:
        bound = 1
    return max(1, (lower + max(1, min(upper, bound))) // 2)


def _check_arguments(word_counts, vocabulary_size, upper_threshold):
    if not isinstance(vocabulary_size, (int, np.integer)) or vocabulary_size < 1:
        raise ValueError(f"`vocabulary_size` must be a positive int, got "
                         f"{vocabulary_size!r}.")
    if upper_threshold is not None and upper_threshold < 1:
        raise ValueError(f"`upper_threshold` must be a positive int or None, got "
                         f"{upper_threshold!r}.")
    for word, count in word_counts:
        if count < 1:
            raise ValueError(f"Word counts must be positive ints; {word!r} has "
                             f"count {count}. Drop the words that never occur.")


def _kept_words(word_counts, reserved, max_token_length, max_unique_characters,
                max_input_words):
    """tensorflow-text's input filter: words no longer than
    ``max_token_length``, not reserved, made of the
    ``max_unique_characters`` most frequent characters, at most
    ``max_input_words`` of them (the most frequent, ties by the word)."""
    word_counts = [(w, c) for w, c in word_counts
                   if len(w) <= max_token_length and w not in reserved]
    if not word_counts:
        return []
    words = _Words([w for w, _ in word_counts], [c for _, c in word_counts])
    characters, inverse = np.unique(words.codes, return_inverse=True)
    character_counts = np.bincount(
        inverse, np.repeat(words.counts, words.lengths).astype(np.float64))
    ranked = np.lexsort((characters, -character_counts))
    allowed = np.zeros(len(characters), bool)
    allowed[ranked[:max_unique_characters]] = True
    allowed_words = np.ones(len(word_counts), bool)
    nonempty = words.lengths > 0
    allowed_words[nonempty] = np.logical_and.reduceat(
        allowed[inverse], words.offsets[:-1][nonempty])
    del words
    word_counts = [item for item, ok in zip(word_counts, allowed_words.tolist())
                   if ok]
    word_counts.sort(key=lambda item: (-item[1], item[0]))
    if max_input_words not in (None, -1):
        word_counts = word_counts[:max_input_words]
    return word_counts


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
    Memory grows with the characters of the distinct words (a few int32
    arrays of that length) and the tokens that can reach the thresholds
    searched, not with every substring.

    Args:
        word_counts: dict or iterable of ``(word, count)`` pairs, counts
            positive.
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
    _check_arguments(word_counts, vocabulary_size, upper_threshold)
    reserved_tokens = list(reserved_tokens)
    if not word_counts:
        return list(dict.fromkeys(reserved_tokens))
    all_counts = [c for _, c in word_counts]
    upper = max(all_counts) if upper_threshold is None else min(
        max(all_counts), upper_threshold)
    lower = min(all_counts) if lower_threshold is None else max(
        min(all_counts), lower_threshold)
    del all_counts

    kept_words = _kept_words(word_counts, set(reserved_tokens), max_token_length,
                             max_unique_characters, max_input_words)
    del word_counts
    words = _Words([w for w, _ in kept_words], [c for _, c in kept_words])
    del kept_words
    if not words.num_rows:
        return list(dict.fromkeys(reserved_tokens))
    characters = [chr(c) for c in np.unique(words.codes).tolist()]
    slack = max(slack_ratio * vocabulary_size, 0)
    base = list(characters)
    if include_joiner_token:
        base += [joiner + c for c in characters]
    candidates = None

    def vocabulary_at(threshold):
        nonlocal candidates
        if candidates is None or threshold < candidates.floor:
            floor = min(threshold, _lowest_threshold(
                words.counts[words.lengths > 0], vocabulary_size, lower, upper))
            candidates = _Candidates(words, floor, base, include_joiner_token,
                                     joiner)
        kept, owns = _learn_at(words, candidates, threshold, num_iterations)
        tokens = dict.fromkeys(base, 1)
        for key, count in zip(kept.tolist(), owns[kept].tolist()):
            tokens[candidates.keys[key]] = count
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
