"""Text → word2vec training examples (skip-gram pairs or CBOW windows)."""

import collections.abc
import itertools
import os
from pathlib import Path

import keras
import numpy as np

from kzoo.preprocessing.engine import engine, engine_scope, is_tensorflow_value, tf
from kzoo.api_export import kzoo_export
from kzoo.data.shards import TokenShards
from kzoo.models.preprocessor import Preprocessor
from kzoo.models.word2vec.word2vec_backbone import Word2VecBackbone
from kzoo.preprocessing.pipeline import Passes
from kzoo.preprocessing.pipeline import prefetched
from kzoo.preprocessing.preprocessing_layer import check_type
from kzoo.preprocessing.preprocessing_layer import numpy_outputs
from kzoo.preprocessing.preprocessing_layer import preprocessing_function
from kzoo.preprocessing.python_pipeline import PythonPasses
from kzoo.preprocessing.skip_gram_sampler import SkipGramSampler
from kzoo.tokenizers.word_tokenizer import WordTokenizer
from kzoo.tokenizers.word_vocabulary import compute_word_vocabulary

_LINES_PER_CALL = 64
# The Python engine samples more lines per call: its fixed cost per call is
# a few dozen numpy operations, whatever their size.
_PYTHON_LINES_PER_CALL = 1024
_EMPTY_ERROR = (
    "The corpus gave no training examples: its lines are empty, or every "
    "word is out of the vocabulary (or dropped by subsampling, `sample`). "
    "Pass text in the vocabulary's words, or build the model on this corpus "
    "with `from_corpus`.")


def text_lines(data):
    """A corpus as a `tf.data.Dataset` of lines, streamed, never all in memory.

    Args:
        data: the path of a text file (str or PathLike; one sentence, line
            or document a line), a list of `pathlib.Path`s, a list of str
            (the lines themselves), or a `tf.data.Dataset` of strings.
    """
    if isinstance(data, (str, os.PathLike)):
        data = [Path(data)]
    if isinstance(data, tf.data.Dataset):
        spec = data.element_spec
        if not isinstance(spec, tf.TensorSpec) or spec.dtype != tf.string:
            raise TypeError("`data` as a tf.data.Dataset must yield strings, got "
                            f"elements {spec}.")
        return data.unbatch() if spec.shape.rank else data
    if isinstance(data, (list, tuple)) and data and all(
            isinstance(p, os.PathLike) for p in data):
        for p in data:
            if not os.path.isfile(p):
                raise FileNotFoundError(
                    f"Corpus file {os.fspath(p)!r} does not exist. (A str is "
                    "read as a file path; to train on in-memory text, pass a "
                    "list of str lines.)")
        return tf.data.TextLineDataset([os.fspath(p) for p in data])
    if isinstance(data, (list, tuple)):
        for line in data:
            check_type("data", line, (str, bytes), "a list of str")
        return tf.data.Dataset.from_tensor_slices(tf.constant(list(data), tf.string))
    raise TypeError(
        "`data` must be a text file path, a list of str lines or a "
        f"tf.data.Dataset of strings, got {type(data).__name__}.")


def python_text_lines(data):
    """`text_lines` for the Python engine, without TensorFlow: a function
    returning a new iterator over the corpus's lines (`str`, invalid UTF-8
    replaced by U+FFFD) at each call, each streamed from its files.

    Args:
        data: the path of a text file (str or PathLike), a list of
            `pathlib.Path`s, or a list of str (the lines themselves).
    """
    if isinstance(data, (str, os.PathLike)):
        data = [Path(data)]
    if isinstance(data, (list, tuple)) and data and all(
            isinstance(p, os.PathLike) for p in data):
        paths = [os.fspath(p) for p in data]
        for p in paths:
            if not os.path.isfile(p):
                raise FileNotFoundError(
                    f"Corpus file {p!r} does not exist. (A str is read as a "
                    "file path; to train on in-memory text, pass a list of "
                    "str lines.)")

        def read():
            for p in paths:
                # Only "\n" ends a line, as in tf.data.TextLineDataset.
                with open(p, encoding="utf-8", errors="replace",
                          newline="\n") as f:
                    yield from f

        return read
    if isinstance(data, (list, tuple)):
        for line in data:
            check_type("data", line, (str, bytes), "a list of str")
        lines = [line.decode("utf-8", errors="replace")
                 if isinstance(line, bytes) else line for line in data]
        return lambda: iter(lines)
    raise TypeError(
        "`data` must be a text file path, a list of str lines or a "
        f"tf.data.Dataset of strings, got {type(data).__name__}.")


def _python_engine(data):
    """Whether the corpus `data` goes through the Python engine's pipeline
    (token shards always do: their ids are read, not tokenized)."""
    return isinstance(data, TokenShards) or (
        engine() == "python" and not is_tensorflow_value(data))


def _shard_chunks(shards, size):
    """The lines of `shards` (a `kzoo.data.TokenShards`) in corpus order,
    `size` at a time across the shards' ends (the last chunk shorter), as
    `(flat int32 ids, int64 lengths)`: the chunks that `python_batches`
    tokenizes from the same lines of text."""
    ids, lengths = [], []

    def chunk():
        joined = (np.concatenate(ids).astype(np.int32),
                  np.concatenate(lengths).astype(np.int64))
        ids.clear()
        lengths.clear()
        return joined

    count = 0
    for flat, rows in shards.unit_chunks(size):
        while len(rows):  # a shard's last chunk is completed by the next's
            take = min(size - count, len(rows))
            words = int(np.sum(rows[:take]))
            ids.append(flat[:words])
            lengths.append(rows[:take])
            flat, rows, count = flat[words:], rows[take:], count + take
            if count == size:
                yield chunk()
                count = 0
    if count:
        yield chunk()


def _chunks(iterator, size):
    """Lists of `size` items of `iterator` (the last one shorter)."""
    while True:
        chunk = list(itertools.islice(iterator, size))
        if not chunk:
            return
        yield chunk


def _python_rebatch(pieces, batch_size, drop_remainder, pad_remainder):
    """`(x, y)` pieces of any number of examples (numpy) as batches of
    `batch_size` examples, as `tf.data`'s `rebatch` and `_pad_batch` do."""
    held = None
    for x, y in pieces:
        if held is not None and held[1].shape[0]:
            x = {k: np.concatenate([held[0][k], v]) for k, v in x.items()}
            y = np.concatenate([held[1], y])
        full = y.shape[0] - y.shape[0] % batch_size
        for start in range(0, full, batch_size):
            yield ({k: v[start:start + batch_size] for k, v in x.items()},
                   y[start:start + batch_size])
        held = ({k: v[full:] for k, v in x.items()}, y[full:])
    if held is None or not held[1].shape[0] or drop_remainder:
        return
    x, y = held
    if pad_remainder:
        missing = batch_size - y.shape[0]

        def pad(value, fill):
            widths = [(0, missing)] + [(0, 0)] * (value.ndim - 1)
            return np.pad(value, widths, constant_values=fill)

        x = {k: pad(v, False if v.dtype == bool else 0) for k, v in x.items()}
        y = pad(y, -1.0)
    yield x, y


def _pad_batch(x, y, batch_size):
    """Pads a batch of examples to `batch_size` with ids 0 (mask False)
    and labels -1, which the negative-sampling loss leaves out."""
    missing = batch_size - tf.shape(y)[0]

    def pad(value, fill):
        widths = tf.concat([[[0, missing]], tf.zeros([value.shape.rank - 1, 2],
                                                     tf.int32)], axis=0)
        value = tf.pad(value, widths, constant_values=fill)
        return tf.ensure_shape(value, [batch_size] + value.shape[1:].as_list())

    x = {k: pad(v, False if v.dtype == tf.bool else 0) for k, v in x.items()}
    return x, pad(y, -1.0)


@kzoo_export("kzoo.models.Word2VecPreprocessor")
class Word2VecPreprocessor(Preprocessor):
    """Splits text into words and samples word2vec's training examples.

    A `WordTokenizer` (whose vocabulary and counts come from
    `from_corpus`: `min_count`, `max_size`, frequency order) maps words to
    ids; the shared `SkipGramSampler` drops out-of-vocabulary words,
    subsamples frequent words with word2vec's formula (`sample`), shrinks
    each window at random (`shrink_window`), and draws `negative` words per
    example from the unigram distribution raised to 0.75. A batch of lines
    gives a variable number of examples: `Word2VecSkipGram.fit` maps this
    layer over the lines in `tf.data` and re-batches the examples, so the
    pairs of a corpus never exist all at once. With the Python engine
    (`kzoo.preprocessing.engine`; TensorFlow need not be installed) the
    tokenizer and sampler run their numpy implementations over a thousand
    lines at a time in a background thread (`passes`, `python_batches`):
    the same vocabulary, rules and rates, other random draws. A
    `kzoo.data.TokenShards` (`kzoo prepare word2vec`) is a corpus whose
    lines were tokenized ahead: it always takes the Python pipeline, which
    reads its ids instead of tokenizing (the same examples as from the
    text of its lines).

    `output_mode="pairs"` gives skip-gram examples (`center`, `context`,
    `negatives`); `"windows"` gives CBOW ones (`center` and its whole
    `context` window with `context_mask`, `negatives`).

    Args:
        tokenizer: a `WordTokenizer` with `counts`.
        window: int. Maximum distance of a context word.
        negative: int. Negative samples per example.
        sample: float. Subsampling threshold (0 disables it).
        shrink_window: bool. Draw each window's radius from `1..window`.
        output_mode: `"pairs"` (skip-gram) or `"windows"` (CBOW).
        seed: int or None. Seed of the sampling stream.

    Call arguments:
        x: a batch of strings (lines).
        y, sample_weight: must be None (the targets are made here).

    Returns:
        `(x, y)`: `x` the sampler's dict, `y` float labels `[examples, 1 +
        negative]` for the true word and the negatives (1, 0, or -1 where a
        negative drew the true word and is left out).

    Example:
    >>> pre = kzoo.models.Word2VecPreprocessor.from_corpus(
    ...     ["the cat sat on the mat", "the dog sat"], min_count=1, window=1,
    ...     negative=2, sample=0.0, shrink_window=False, seed=1)
    >>> x, y = pre(["the cat sat"])
    >>> ops.convert_to_numpy(x["center"]).tolist()
    [1, 3, 3, 2]
    >>> tuple(y.shape)
    (4, 3)
    """

    backbone_cls = Word2VecBackbone
    tokenizer_cls = WordTokenizer

    def __init__(self, tokenizer=None, window=5, negative=5, sample=1e-3,
                 shrink_window=True, output_mode="pairs", seed=None, **kwargs):
        super().__init__(tokenizer=tokenizer, **kwargs)
        self.window = window
        self.negative = negative
        self.sample = sample
        self.shrink_window = shrink_window
        self.output_mode = output_mode
        self.seed = seed
        self.sampler = None
        # Words (vocabulary or not) tokenized so far: what fit's words/s
        # and progress count. The TensorFlow path adds to a TF variable
        # (made on its first use: tf.data maps add to it), the Python path
        # to a Python int; `words_seen` is their sum. In a list: out of
        # Keras' tracking (it is not a weight).
        object.__setattr__(self, "_counter", [])
        object.__setattr__(self, "_python_words", 0)
        if tokenizer is not None and tokenizer.vocabulary is not None:
            self._build()

    @classmethod
    def from_corpus(cls, data, min_count=5, max_size=None, lowercase=False,
                    oov_token="[UNK]", **kwargs):
        """Builds the vocabulary of a corpus, then the preprocessor.

        Words occurring fewer than `min_count` times are left out, as is
        everything past the `max_size` most frequent ones (the
        out-of-vocabulary token included); the vocabulary is in order of
        descending count, so `WordVectors(restrict_vocab=n)` means the `n`
        most frequent words. One streamed pass over the corpus.

        Args:
            data: a text file path, a list of str lines or a
                `tf.data.Dataset` of strings (see `text_lines`).
            min_count: int. Minimum count of a vocabulary word.
            max_size: int or None. Maximum vocabulary size.
            lowercase: bool. Lowercase the text (here and when training).
            oov_token: str. The id that other words map to (never trained).
            **kwargs: the constructor's other arguments (`window`, ...).
        """
        tokenizer = cls.tokenizer_from_corpus(
            data, min_count=min_count, max_size=max_size, lowercase=lowercase,
            oov_token=oov_token)
        return cls(tokenizer=tokenizer, **kwargs)

    @classmethod
    def tokenizer_from_corpus(cls, data, min_count=5, max_size=None,
                              lowercase=False, oov_token="[UNK]"):
        """The `WordTokenizer` of `from_corpus`: the corpus's vocabulary
        and the exact count of each entry (see `from_corpus` for the
        arguments). `data` may also be an iterator of str lines on the
        Python engine (read once, as it streams: `kzoo prepare word2vec`).
        """
        if isinstance(data, collections.abc.Iterator) and _python_engine(data):
            lines = data
        elif not _python_engine(data):
            lines = text_lines(data)
        elif isinstance(data, (list, tuple)) and data and all(
                isinstance(p, os.PathLike) for p in data):
            # compute_word_vocabulary reads one file or a list of lines.
            lines = list(python_text_lines(data)())
        else:
            python_text_lines(data)  # the same checks as text_lines
            lines = data
        vocabulary, counts = compute_word_vocabulary(
            lines, min_count=min_count, max_size=max_size, lowercase=lowercase,
            special_tokens=(oov_token,), oov_token=oov_token)
        return WordTokenizer(vocabulary=vocabulary, counts=counts,
                             lowercase=lowercase, oov_token=oov_token)

    def _build(self):
        if self.tokenizer.counts is None:
            raise ValueError(
                "word2vec needs the corpus count of every vocabulary word "
                "(subsampling, negative sampling): build the preprocessor "
                "with `Word2VecPreprocessor.from_corpus(...)` or give the "
                "WordTokenizer `counts=`.")
        oov = self.tokenizer.token_to_id(self.tokenizer.oov_token)
        self.sampler = SkipGramSampler(
            counts=self.tokenizer.counts, window=self.window,
            negative=self.negative, sample=self.sample,
            shrink_window=self.shrink_window, skip_ids=(oov,),
            output_mode=self.output_mode, seed=self.seed)

    def _words_variable(self):
        """The TensorFlow path's count of words tokenized (made once)."""
        if not self._counter:
            with tf.init_scope():
                self._counter.append(
                    tf.Variable(0, dtype=tf.int64, trainable=False))
        return self._counter[0]

    def words_seen(self):
        """Words (in the vocabulary or not) tokenized by this layer so far."""
        words = self._python_words
        if self._counter:
            words += int(self._counter[0].numpy())
        return words

    @property
    def skip_ids(self):
        """Ids that are never trained (the out-of-vocabulary token)."""
        return (self.tokenizer.token_to_id(self.tokenizer.oov_token),)

    def vocabulary_words(self):
        """Number of corpus words that the vocabulary was counted on."""
        return int(np.sum(self.tokenizer.counts))

    def expected_examples(self, words=None):
        """Expected examples per pass over a corpus of `words` words.

        From the vocabulary's counts (scaled to `words` when given): the
        in-vocabulary words kept by subsampling, times the expected number
        of context words of each (`window + 1` with shrinking windows,
        `2 * window` without) for pairs, or one example each for windows.
        Sentence ends make the true number somewhat smaller.
        """
        if self.sampler is None:
            self._build()
        counts = np.asarray(self.tokenizer.counts, dtype=np.float64)
        keep = self.sampler.keep_probability
        kept = float(np.sum(counts * keep))
        if words is not None:
            kept *= words / max(self.vocabulary_words(), 1)
        if self.output_mode == "windows":
            return kept
        return kept * ((self.window + 1) if self.shrink_window else 2 * self.window)

    def call(self, x, y=None, sample_weight=None):
        if y is not None or sample_weight is not None:
            raise ValueError(
                "Word2VecPreprocessor makes its own targets: pass only text.")
        return self._sample(self.tokenizer(x))

    def _sample(self, ids):
        """Word ids (ragged lines) → `(x, y)` examples, from the seeded
        stream, in order; the words are counted in `words_seen`."""
        self._words_variable().assign_add(
            tf.cast(tf.size(ids.flat_values), tf.int64))
        if self.sampler is None:
            self._build()
        out = self.sampler(ids)
        target = out["center"] if self.output_mode == "windows" else out["context"]
        negative = tf.cast(out["negatives"] != target[:, None], tf.float32)
        labels = tf.concat([tf.ones_like(target[:, None], tf.float32),
                            negative - 1.0], axis=1)
        return keras.utils.pack_x_y_sample_weight(out, labels)

    def python_call(self, x, y=None, sample_weight=None):
        if y is not None or sample_weight is not None:
            raise ValueError(
                "Word2VecPreprocessor makes its own targets: pass only text.")
        return self.python_examples(*self.python_token_ids(x))

    @preprocessing_function
    def _token_ids(self, lines):
        """Lines → their word ids as `(flat ids, row lengths)`."""
        ids = self.tokenizer(lines)
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(tf.reshape(ids, [-1, tf.shape(ids)[-1]]))
        return ids.flat_values, ids.row_lengths()

    def python_token_ids(self, lines):
        rows = self.tokenizer(lines)
        if isinstance(rows, np.ndarray):  # one line, or padded rows
            rows = rows.reshape(-1, rows.shape[-1]) if rows.size else rows.reshape(-1, 0)
            return (rows.reshape(-1).astype(np.int32),
                    np.full(rows.shape[0], rows.shape[1], np.int64))
        lengths = np.fromiter((len(r) for r in rows), np.int64, len(rows))
        flat = (np.concatenate(rows).astype(np.int32, copy=False) if rows
                else np.zeros(0, np.int32))
        return flat, lengths

    @preprocessing_function
    def _examples(self, ids, row_lengths):
        """`(flat ids, row lengths)` → `(x, y)` examples (see `_sample`)."""
        return self._sample(tf.RaggedTensor.from_row_lengths(ids, row_lengths))

    def python_examples(self, ids, row_lengths):
        # The words are counted before sampling, as `_sample` counts them.
        object.__setattr__(self, "_python_words",
                           self._python_words + int(np.sum(row_lengths)))
        if self.sampler is None:
            self._build()
        out = self.sampler.sample_flat(ids, row_lengths)
        target = out["center"] if self.output_mode == "windows" else out["context"]
        labels = np.empty((target.shape[0], 1 + self.negative), np.float32)
        labels[:, 0] = 1.0
        np.subtract(out["negatives"] != target[:, None], 1.0, out=labels[:, 1:],
                    dtype=np.float32)
        return out, labels

    def python_batches(self, data, batch_size, drop_remainder=False,
                       lines_per_call=None, pad_remainder=False,
                       cache_tokens=False):
        """`dataset` for the Python engine, without TensorFlow: a function
        returning a new iterator over one pass's `(x, y)` batches (numpy
        arrays) at each call, sampled as the lines stream by, on the Python
        engine whatever the engine of the caller.

        `lines_per_call` lines are tokenized and sampled at a time (default
        1024); with `cache_tokens`, the first full pass keeps their ids
        (~4 bytes a word) and later passes sample from them. `data` may
        also be a `kzoo.data.TokenShards`: its lines' ids are read, in the
        same chunks, instead of tokenized (`cache_tokens` is ignored), so
        the batches are those of the text of its lines.
        """
        if self.sampler is None:
            self._build()
        size = lines_per_call or _PYTHON_LINES_PER_CALL
        shards = isinstance(data, TokenShards)
        read = None if shards else python_text_lines(data)
        cache = ({"chunks": [], "complete": False} if cache_tokens and not shards
                 else None)

        def token_chunks():
            if shards:
                yield from _shard_chunks(data, size)
                return
            if cache is not None and cache["complete"]:
                yield from cache["chunks"]
                return
            chunks = []
            for lines in _chunks(read(), size):
                with engine_scope("python"), numpy_outputs():
                    ids = self._token_ids(lines)
                if cache is not None:
                    chunks.append(ids)
                yield ids
            if cache is not None:
                cache["chunks"], cache["complete"] = chunks, True

        def examples():
            for ids, lengths in token_chunks():
                with engine_scope("python"), numpy_outputs():
                    pieces = self._examples(ids, lengths)
                yield pieces

        def one_pass():
            return _python_rebatch(examples(), batch_size, drop_remainder,
                                   pad_remainder)

        return one_pass

    def dataset(self, data, batch_size, drop_remainder=False,
                lines_per_call=None, pad_remainder=False,
                cache_tokens=False):
        """The training `tf.data.Dataset`: `(x, y)` batches of `batch_size`
        examples, sampled from `data` as it streams by. A pass's last batch
        is smaller, unless `drop_remainder` drops it or `pad_remainder`
        fills it up with examples labelled -1 (id 0 everywhere: no loss, no
        update): one shape for compilers either way, no example lost with
        padding.

        With `cache_tokens`, the first full pass keeps the corpus's token
        ids in memory (int32: ~4 bytes a word, 8 a line) and later passes
        sample from them instead of reading and tokenizing the text again
        (tokenizing is a third to a half of the pipeline's CPU time: on
        bench/word2vec.py's corpus a skip-gram pass took 0.84 instead of
        1.11 CPU-seconds). The examples are the same either way.
        """
        if self.sampler is None:
            self._build()
        self._words_variable()
        ds = text_lines(data).batch(lines_per_call or _LINES_PER_CALL)
        # Plain TF ops, no tensor-dependent Python control flow: traced as
        # they are. Autograph's conversion of these functions (and of the
        # Keras layer calls inside them) lengthened each `fit`'s first epoch.
        plain = tf.autograph.experimental.do_not_convert
        # Tokenizing is deterministic: in parallel (in order). Sampling
        # draws from one seeded stream: one batch after another.
        ds = ds.map(plain(lambda lines: self.tokenizer(lines)),
                    num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        if cache_tokens:
            ds = ds.cache()
        ds = ds.map(plain(self._sample), num_parallel_calls=None)
        ds = ds.rebatch(batch_size, drop_remainder=drop_remainder)
        if pad_remainder and not drop_remainder:
            ds = ds.map(plain(lambda x, y: _pad_batch(x, y, batch_size)))
        return prefetched(ds)

    def passes(self, data, batch_size, passes, **kwargs):
        """`passes` passes of `dataset(data, batch_size, **kwargs)` through
        one iterator (`kzoo.preprocessing.pipeline.Passes`; `fit` trains an
        epoch on each `keras_input()`). Its `end_values` are `words_seen()`
        at the start and at the end of each pass: a pass's words exactly,
        where `words_seen()` runs ahead with the prefetched batches.

        With the Python engine (and `data` not a `tf.data.Dataset`), or
        with `data` a `kzoo.data.TokenShards` on any engine, the passes of
        `python_batches` in a background thread instead
        (`kzoo.preprocessing.python_pipeline.PythonPasses`, the same
        interface), without TensorFlow."""
        if _python_engine(data):
            return PythonPasses(
                self.python_batches(data, batch_size, **kwargs), passes,
                end_value=lambda: self._python_words,
                empty_error=_EMPTY_ERROR)
        return Passes(
            self.dataset(data, batch_size, **kwargs), passes,
            end_value=self._words_variable().read_value,
            empty_error=_EMPTY_ERROR)

    def get_config(self):
        config = super().get_config()
        config.update({
            "window": self.window,
            "negative": self.negative,
            "sample": self.sample,
            "shrink_window": self.shrink_window,
            "output_mode": self.output_mode,
            "seed": self.seed,
        })
        return config
