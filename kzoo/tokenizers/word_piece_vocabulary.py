"""Training a WordPiece vocabulary from a corpus."""

import collections
import collections.abc
import itertools
import os


from kzoo.preprocessing.engine import engine, is_tensorflow_value, tf
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.preprocessing_layer import check_type
from kzoo.tokenizers.tokenizer import to_valid_utf8, write_lines
from kzoo.tokenizers.word_piece_learner import learn_word_piece
from kzoo.tokenizers.word_piece_tokenizer import split_words_with_offsets

_BATCH_SIZE = 1024
_FILE_CHUNK_LINES = 1024
_PYTHON_BATCH_CHARS = 1 << 20


def text_batches(data):
    """Yields 1-D ``tf.string`` batches (valid UTF-8) from a training corpus.

    Args:
        data: a list of str (one document each), a ``tf.data.Dataset`` of
            strings (scalars or batches), or the path of a UTF-8 text file
            (read in chunks of lines, newlines kept).
    """
    if isinstance(data, str):
        for chunk in file_chunks(data):
            yield tf.constant([chunk])
    elif isinstance(data, (list, tuple)):
        for start in range(0, len(data), _BATCH_SIZE):
            chunk = data[start:start + _BATCH_SIZE]
            for text in chunk:
                check_type("data", text, (str, bytes), "a list of str")
            yield to_valid_utf8(tf.constant(chunk, tf.string))
    elif isinstance(data, tf.data.Dataset):
        spec = data.element_spec
        if not isinstance(spec, tf.TensorSpec) or spec.dtype != tf.string:
            raise ValueError(
                f"`data` must be a dataset of strings, got elements {spec}.")
        if spec.shape.rank == 0:
            data = data.batch(_BATCH_SIZE)
        for batch in data:
            yield to_valid_utf8(tf.reshape(batch, [-1]))
    else:
        raise TypeError("`data` must be a list of str, a tf.data.Dataset of strings "
                        f"or a text file path, got {type(data).__name__}.")


def count_words(batches, split):
    """A Counter of the words ``split`` (1-D strings → ragged words) yields."""
    counts = collections.Counter()
    for batch in batches:
        words, _, count = tf.unique_with_counts(split(batch).flat_values)
        counts.update(dict(zip(words.numpy().tolist(), count.numpy().tolist())))
    return counts


@kzoo_export("kzoo.tokenizers.compute_word_piece_vocabulary")
def compute_word_piece_vocabulary(
    data,
    vocabulary_size,
    lowercase=True,
    strip_accents=None,
    split_on_punctuation=True,
    reserved_tokens=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
    vocabulary_output_file=None,
):
    """Trains a WordPiece vocabulary (BERT's) from a corpus.

    The text is normalized and split into words exactly as
    ``WordPieceTokenizer`` does with the same arguments; the vocabulary is
    then learned from the word counts with tensorflow-text's WordPiece
    learner's algorithm (``bert_vocab_from_dataset``'s: a binary search over
    a count threshold for the token set closest to ``vocabulary_size``), as
    ``kzoo.tokenizers.word_piece_learner`` implements it. Both engines count
    the same words and so return the same vocabulary, the same on every
    call (ties are broken by the tokens themselves). Every
    character of the corpus (up to 1,000 distinct ones) is in the result,
    alone and as a ``##`` suffix, so a tokenizer built from it produces no
    out-of-vocabulary token on text made of those characters.

    Args:
        data: a list of str, a ``tf.data.Dataset`` of strings, or the path of
            a UTF-8 text file.
        vocabulary_size: int. The maximum vocabulary size, reserved tokens
            included (the learner may return somewhat fewer).
        lowercase: bool. As ``WordPieceTokenizer``'s.
        strip_accents: bool or None. As ``WordPieceTokenizer``'s.
        split_on_punctuation: bool. As ``WordPieceTokenizer``'s.
        reserved_tokens: tuple of str. Tokens placed first, in this order.
        vocabulary_output_file: str or None. Also write the vocabulary there,
            one token per line (a ``vocab.txt``).

    Returns:
        The vocabulary, a list of str.

    Example:
    >>> vocabulary = kzoo.tokenizers.compute_word_piece_vocabulary(
    ...     ["The cat sat.", "The bat sat!"] * 20, vocabulary_size=40)
    >>> vocabulary[:6]
    ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', '!']
    >>> tokenizer = kzoo.tokenizers.WordPieceTokenizer(vocabulary)
    >>> tokenizer.detokenize(tokenizer(["The bat sat."]))
    ['the bat sat .']
    """
    check_type("vocabulary_size", vocabulary_size, int, "a positive int")
    reserved_tokens = tuple(check_type("reserved_tokens", reserved_tokens,
                                       (list, tuple), "a tuple of str"))
    if vocabulary_size <= len(reserved_tokens):
        raise ValueError(f"`vocabulary_size` must exceed the {len(reserved_tokens)} "
                         f"reserved tokens, got {vocabulary_size}.")
    if engine() == "python" and not is_tensorflow_value(data):
        counts = python_word_counts(
            python_texts(data), lowercase, strip_accents, split_on_punctuation)
    else:
        def split(text):
            return split_words_with_offsets(
                text, lowercase, strip_accents, split_on_punctuation)[0]

        counts = {w.decode("utf-8"): c
                  for w, c in count_words(text_batches(data), split).items()}
    vocabulary = learn_word_piece(
        counts, vocabulary_size, reserved_tokens, lower_threshold=1,
        include_joiner_token=True, joiner="##")[:vocabulary_size]
    if vocabulary_output_file is not None:
        write_lines(vocabulary_output_file, vocabulary)
    return vocabulary


def file_chunks(path):
    """A UTF-8 text file's lines (newlines kept, invalid bytes replaced), in
    chunks of ``_FILE_CHUNK_LINES`` lines joined into one str each."""
    if not os.path.isfile(path):
        raise ValueError(f"`data` is a str, so it must be a text file path; "
                         f"no file {path!r} exists. Pass a list of str for text.")
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = []
        for line in f:
            lines.append(line)
            if len(lines) == _FILE_CHUNK_LINES:
                yield "".join(lines)
                lines = []
        if lines:
            yield "".join(lines)


def python_texts(data):
    """The Python engine's ``text_batches``: the same texts one by one (a
    file in the same chunks of lines), as str."""
    if isinstance(data, str):
        yield from file_chunks(data)
    elif isinstance(data, (list, tuple, collections.abc.Iterator)):
        # An iterator (a generator of lines) is read once, as it streams.
        for text in data:
            check_type("data", text, (str, bytes), "a list of str")
            yield (text.decode("utf-8", errors="replace")
                   if isinstance(text, bytes) else text)
    else:
        raise TypeError("`data` must be a list of str, a tf.data.Dataset of strings "
                        f"or a text file path, got {type(data).__name__}.")


def python_word_counts(texts, lowercase, strip_accents, split_on_punctuation):
    """A Counter of the words of ``texts`` (str), split as the Python
    ``WordPieceTokenizer`` splits them (as ``split_words_with_offsets``
    does); the texts are joined by newlines into batches of about
    ``_PYTHON_BATCH_CHARS`` characters."""
    from kzoo.tokenizers.word_piece_tokenizer import (
        exception_characters,
        hugging_face_word_piece,
    )

    splitters = {}
    rare = exception_characters(lowercase, strip_accents)

    def splitter(exceptions):
        if exceptions not in splitters:
            tokenizer = hugging_face_word_piece(
                ["[UNK]"], lowercase=lowercase, strip_accents=strip_accents,
                split_on_punctuation=split_on_punctuation, exceptions=exceptions)
            splitters[exceptions] = (tokenizer.normalizer.normalize_str,
                                     tokenizer.pre_tokenizer.pre_tokenize_str)
        return splitters[exceptions]

    counts = collections.Counter()
    batch, size = [], 0
    for text in itertools.chain(texts, [None]):
        if text is not None:
            batch.append(text)
            size += len(text)
            if size < _PYTHON_BATCH_CHARS:
                continue
        if not batch:
            continue
        # A newline separates words in every mode, so joined texts keep
        # their words apart.
        joined = "\n".join(batch)
        normalize, split = splitter(
            bool(rare) and not joined.isascii() and not rare.isdisjoint(joined))
        counts.update(word for word, _ in split(normalize(joined)))
        batch, size = [], 0
    return counts

