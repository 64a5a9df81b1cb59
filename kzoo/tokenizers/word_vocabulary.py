"""Word-level vocabulary and counts from a corpus (for `WordTokenizer`)."""

import collections
import collections.abc
import os

from kzoo.preprocessing.engine import engine, is_tensorflow_value, tf
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.preprocessing_layer import check_type
from kzoo.tokenizers.word_tokenizer import python_split_words, split_words

_CHUNK_LINES = 4096


def _python_chunks(data):
    """The corpus as lists of at most `_CHUNK_LINES` `str` lines (invalid
    UTF-8 replaced by U+FFFD, as `to_valid_utf8` does), without TensorFlow."""
    if isinstance(data, (str, os.PathLike)):
        if not os.path.isfile(data):
            raise FileNotFoundError(
                f"`data` {str(data)!r} is not a file. Pass the path of a text "
                "file, a list of str (in-memory text) or a tf.data.Dataset "
                "of strings."
            )
        with open(data, "rb") as f:
            lines = []
            for line in f:
                lines.append(line.decode("utf-8", errors="replace"))
                if len(lines) == _CHUNK_LINES:
                    yield lines
                    lines = []
            if lines:
                yield lines
    elif isinstance(data, (list, tuple, collections.abc.Iterator)):
        # An iterator (a generator of lines) is read once, as it streams.
        chunk = []
        for line in data:
            check_type("data", line, (str, bytes), "a list of str")
            chunk.append(line.decode("utf-8", errors="replace")
                         if isinstance(line, bytes) else line)
            if len(chunk) == _CHUNK_LINES:
                yield chunk
                chunk = []
        if chunk:
            yield chunk
    else:
        raise TypeError(
            "`data` must be a list of str, the path of a text file or a "
            f"tf.data.Dataset of strings, got {type(data).__name__}."
        )


def _python_words(data, lowercase):
    """Each chunk's words, split as `WordTokenizer`'s Python engine splits."""
    for chunk in _python_chunks(data):
        yield [w for words in python_split_words(chunk, lowercase) for w in words]


def _tensorflow_words(data, lowercase):
    for chunk in _chunks(data):
        words = split_words(chunk, lowercase).flat_values.numpy()
        yield [w.decode("utf-8") for w in words]


def _chunks(data):
    """The corpus as 1-D string tensors of at most `_CHUNK_LINES` lines."""
    if isinstance(data, (str, os.PathLike)):
        if not os.path.isfile(data):
            raise FileNotFoundError(
                f"`data` {str(data)!r} is not a file. Pass the path of a text "
                "file, a list of str (in-memory text) or a tf.data.Dataset "
                "of strings."
            )
        with open(data, "rb") as f:  # bytes: TF replaces invalid UTF-8
            lines = []
            for line in f:
                lines.append(line)
                if len(lines) == _CHUNK_LINES:
                    yield tf.constant(lines)
                    lines = []
            if lines:
                yield tf.constant(lines)
    elif isinstance(data, tf.data.Dataset):
        spec = data.element_spec
        if not isinstance(spec, tf.TensorSpec) or spec.dtype != tf.string:
            raise TypeError(
                "`data` as a tf.data.Dataset must yield string tensors, got "
                f"elements {spec}."
            )
        if spec.shape.rank == 0:
            data = data.batch(_CHUNK_LINES)
        yield from data.map(lambda x: tf.reshape(x, [-1]))
    elif isinstance(data, (list, tuple)):
        for i in range(0, len(data), _CHUNK_LINES):
            chunk = data[i:i + _CHUNK_LINES]
            for line in chunk:
                check_type("data", line, (str, bytes), "a list of str")
            yield tf.constant(chunk, dtype=tf.string)
    else:
        raise TypeError(
            "`data` must be a list of str, the path of a text file or a "
            f"tf.data.Dataset of strings, got {type(data).__name__}."
        )


@kzoo_export("kzoo.tokenizers.compute_word_vocabulary")
def compute_word_vocabulary(
    data,
    min_count=1,
    max_size=None,
    lowercase=False,
    special_tokens=("[UNK]",),
    oov_token="[UNK]",
):
    """Builds a word vocabulary, and its counts, from a corpus.

    The corpus is split exactly as `WordTokenizer` splits it (ASCII
    whitespace, invalid UTF-8 replaced, optional Unicode lowercasing) and
    streamed in chunks of lines, so a large file is never read at once.
    With the Python preprocessing engine (see `kzoo.preprocessing.engine`)
    a list or a file is read without TensorFlow, with the same result.
    Words occurring at least `min_count` times are sorted by descending
    count, ties broken by first occurrence in the corpus, and cut so that
    the vocabulary, special tokens included, has at most `max_size`
    entries. The special tokens come first, in the order given.

    `counts[i]` is the number of corpus tokens that `WordTokenizer` maps to
    id `i`: `oov_token` gets the count of all the words left out (rare or cut
    by `max_size`); other special tokens get 0 unless they occur literally
    in the corpus. So `sum(counts)` is the corpus' token count, which
    word2vec's subsampling needs.

    Args:
        data: list of str (lines), the path of a UTF-8 text file, or a
            `tf.data.Dataset` of strings (scalars or batches).
        min_count: int. Minimum count of a word to enter the vocabulary.
        max_size: int or None. Maximum vocabulary size, special tokens
            included.
        lowercase: bool. Lowercase before counting (as the tokenizer's
            `lowercase=True`).
        special_tokens: tuple of str, put first in the vocabulary.
        oov_token: str or None. The special token that stands for words not
            in the vocabulary (its count is theirs).

    Returns:
        A tuple `(vocabulary, counts)`: a list of str and a list of int.

    Example:
    >>> vocabulary, counts = kzoo.tokenizers.compute_word_vocabulary(
    ...     ["the cat sat", "the dog sat on the mat"], min_count=2)
    >>> vocabulary, counts
    (['[UNK]', 'the', 'sat'], [4, 3, 2])
    """
    check_type("min_count", min_count, int, "a positive int")
    if min_count < 1:
        raise ValueError(f"`min_count` must be >= 1, got {min_count}.")
    check_type("lowercase", lowercase, bool, "a bool")
    special_tokens = tuple(special_tokens)
    for token in special_tokens:
        check_type("special_tokens", token, str, "a tuple of str")
    if len(set(special_tokens)) != len(special_tokens):
        raise ValueError(f"`special_tokens` has duplicates: {special_tokens}.")
    if oov_token is not None and oov_token not in special_tokens:
        raise ValueError(
            f"`oov_token` {oov_token!r} must be one of `special_tokens` "
            f"{special_tokens} (or None)."
        )
    if max_size is not None:
        check_type("max_size", max_size, int, "an int or None")
        if max_size <= len(special_tokens):
            raise ValueError(
                f"`max_size` ({max_size}) must be larger than the number of "
                f"`special_tokens` ({len(special_tokens)})."
            )

    counter = collections.Counter()  # insertion order = first occurrence
    python = engine() == "python" and not is_tensorflow_value(data)
    for words in (_python_words if python else _tensorflow_words)(data, lowercase):
        counter.update(words)
    if not counter:
        raise ValueError("`data` contains no words.")

    specials = {t: counter.pop(t, 0) for t in special_tokens}
    if not counter:
        raise ValueError("`data` contains only special tokens.")
    top = max(counter.values())
    if top < min_count:
        raise ValueError(
            f"No word occurs `min_count`={min_count} times: the most frequent "
            f"word occurs {top} times; lower `min_count` to <= {top}."
        )
    words = sorted(  # stable: ties keep their first-occurrence order
        (w for w, n in counter.items() if n >= min_count),
        key=lambda w: -counter[w],
    )
    if max_size is not None:
        words = words[: max_size - len(special_tokens)]
    if oov_token is not None:
        specials[oov_token] += sum(counter.values()) - sum(counter[w] for w in words)
    vocabulary = list(special_tokens) + words
    counts = [specials[t] for t in special_tokens] + [counter[w] for w in words]
    return vocabulary, counts
