"""word2vec on the Python preprocessing engine: the preprocessor and its
pipeline against TensorFlow's, and training without TensorFlow."""

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kzoo.models.word2vec.word2vec_cbow import Word2VecCBOW
from kzoo.models.word2vec.word2vec_preprocessor import Word2VecPreprocessor
from kzoo.models.word2vec.word2vec_progress import Word2VecProgress
from kzoo.models.word2vec.word2vec_skip_gram import Word2VecSkipGram
from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.preprocessing_layer import numpy_outputs
from kzoo.testing import to_numpy
from kzoo.testing.without_tensorflow import check_without_tensorflow

ANIMALS = "cat dog cow horse sheep goat pig hen duck mouse".split()
TOOLS = "hammer saw drill wrench chisel file rasp vise clamp pliers".split()
# Deterministic sampling: no subsampling, whole windows.
FIXED = dict(min_count=1, sample=0.0, shrink_window=False)


def topic_corpus(lines=300, length=12, seed=0):
    """Lines that each draw words from one topic (see word2vec_test.py)."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(ANIMALS if i % 2 else TOOLS, length))
            for i in range(lines)]


def _preprocessor(engine, corpus, **kwargs):
    with engine_scope(engine):
        return Word2VecPreprocessor.from_corpus(corpus, **kwargs)


def _python_pass(pre, data, batch_size, **kwargs):
    # The batches come from the Python engine whatever the caller's.
    with engine_scope("tensorflow"):
        return list(pre.python_batches(data, batch_size, **kwargs)())


def _tensorflow_pass(pre, data, batch_size, **kwargs):
    with engine_scope("tensorflow"):
        return [to_numpy(b) for b in pre.dataset(data, batch_size, **kwargs)]


def _assert_same_examples(python, tensorflow, negatives):
    """Two lists of `(x, y)` batches: equal, the negatives (and the labels
    they decide) aside unless `negatives`."""
    assert len(python) == len(tensorflow)
    for (x, y), (want_x, want_y) in zip(python, tensorflow):
        assert x.keys() == want_x.keys()
        for key in want_x:
            assert x[key].dtype == want_x[key].dtype, key
            assert x[key].shape == want_x[key].shape, key
            if key != "negatives" or negatives:
                np.testing.assert_array_equal(x[key], want_x[key], err_msg=key)
        assert y.dtype == want_y.dtype and y.shape == want_y.shape
        np.testing.assert_array_equal(y[:, 0], want_y[:, 0])
        if negatives:
            np.testing.assert_array_equal(y, want_y)


WORDS = st.sampled_from(["a", "b", "c", "dd", "e", "Ünï", "f"])
LINE = st.lists(WORDS, max_size=9).map(" ".join) | st.sampled_from(
    ["", "  a\tb  ", "a\u00a0b c", "x y z"])


@settings(max_examples=40)
@given(st.lists(LINE, min_size=1, max_size=12), st.integers(1, 3),
       st.sampled_from(["pairs", "windows"]), st.booleans(), st.integers(0, 2))
def test_preprocessor_matches_tensorflow_without_draws(lines, window, mode,
                                                       lowercase, negative):
    corpus = lines + ["a b c dd e f"]  # every word once at least
    kwargs = dict(FIXED, window=window, negative=negative, output_mode=mode,
                  lowercase=lowercase, seed=1)
    python = _preprocessor("python", corpus, **kwargs)
    tensorflow = _preprocessor("tensorflow", corpus, **kwargs)
    assert python.tokenizer.get_vocabulary() == tensorflow.tokenizer.get_vocabulary()
    assert python.tokenizer.counts == tensorflow.tokenizer.counts
    with engine_scope("python"):
        got = to_numpy(python(lines))
    with engine_scope("tensorflow"):
        want = to_numpy(tensorflow(lines))
    _assert_same_examples([got], [want], negatives=negative == 0)
    assert python.words_seen() == tensorflow.words_seen()
    x, y = got
    target = x["center"] if mode == "windows" else x["context"]
    np.testing.assert_array_equal(
        y[:, 1:], np.where(x["negatives"] == target[:, None], -1.0, 0.0))


@pytest.mark.parametrize("options", [
    dict(), dict(pad_remainder=True), dict(drop_remainder=True),
    dict(pad_remainder=True, lines_per_call=7), dict(cache_tokens=True)])
@pytest.mark.parametrize("mode", ["pairs", "windows"])
def test_pipeline_batches_equal_tf_data_without_draws(tmp_path, options, mode):
    corpus = topic_corpus(60, length=7) + ["", "cat [UNK] zebra dog"]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(corpus) + "\n", encoding="utf-8")
    kwargs = dict(FIXED, window=2, negative=0, output_mode=mode)
    python = _preprocessor("python", str(path), **kwargs)
    tensorflow = _preprocessor("tensorflow", str(path), **kwargs)
    tf_options = dict(options)
    tf_options.setdefault("lines_per_call", 64)
    for data in (str(path), corpus):
        got = _python_pass(python, data, 50, **options)
        want = _tensorflow_pass(tensorflow, data, 50, **tf_options)
        assert len(want) > 3
        _assert_same_examples(got, want, negatives=True)
    if options.get("pad_remainder"):
        assert all(y.shape[0] == 50 for _, y in got) and (got[-1][1][-1] == -1).all()
    assert python.words_seen() == tensorflow.words_seen()


@pytest.mark.without_tensorflow
@pytest.mark.parametrize("cache_tokens", [False, True])
def test_python_passes_count_each_pass_and_keep_the_stream(cache_tokens):
    # fit's passes draw the same examples as one pass after another of
    # `python_batches`; their end values count each pass's words exactly.
    corpus = topic_corpus(100)
    words = sum(len(line.split()) for line in corpus)
    settings_ = dict(min_count=1, sample=0.05, seed=7)
    per_epoch = _preprocessor("python", corpus, **settings_)
    with engine_scope("python"), numpy_outputs():
        one_pass = per_epoch.python_batches(corpus, 64, pad_remainder=True)
        expected = [list(one_pass()) for _ in range(3)]
    streamed = _preprocessor("python", corpus, **settings_)
    with engine_scope("python"):
        passes = streamed.passes(corpus, 64, 3, pad_remainder=True,
                                 cache_tokens=cache_tokens)
    progress = Word2VecProgress(streamed, passes)
    for epoch, batches in enumerate(expected):
        progress.on_epoch_begin(epoch)
        got = list(passes.next_pass())
        progress.on_epoch_end(epoch, {})
        assert len(got) == len(batches) > 2
        _assert_same_examples(got, batches, negatives=True)
    assert passes.end_values == [0, words, 2 * words, 3 * words]
    assert progress.epoch_words == [words] * 3
    passes.close()
    assert not passes._thread.is_alive()
    with pytest.raises(ValueError, match="All 3 passes"):
        passes.next_pass()


@pytest.mark.without_tensorflow
def test_python_pipeline_errors():
    corpus = topic_corpus(10)
    pre = _preprocessor("python", corpus, min_count=1, seed=0)
    with engine_scope("python"):
        passes = pre.passes(["zzz qqq www", ""], 32, 2)
        with pytest.raises(ValueError, match="no training examples"):
            passes.next_pass()
        passes.close()
        with pytest.raises(FileNotFoundError, match="no-such-file.txt"):
            pre.passes("no-such-file.txt", 32, 1)
        with pytest.raises(TypeError, match="a list of str"):
            pre.passes(["ok", 3], 32, 1)
        with pytest.raises(ValueError, match="makes its own targets"):
            pre(corpus, [1, 2, 3])
        # An error in the pipeline's thread is raised where Keras reads it.
        pre.sampler.keep_probability = None
        broken = pre.passes(corpus, 32, 1)
        try:
            with pytest.raises(TypeError):
                list(broken.next_pass())
        finally:
            pre._build()


@pytest.mark.without_tensorflow
@pytest.mark.parametrize("cls", [Word2VecSkipGram, Word2VecCBOW])
def test_python_engine_fit_learns_topics_with_decaying_rate(cls):
    corpus = topic_corpus()
    with engine_scope("python"):
        model = cls.from_corpus(corpus, hidden_dim=16, min_count=1, window=3,
                                negative=3, sample=0.0, seed=1)
        history = model.fit(corpus, epochs=3, batch_size=256, verbose=0)
    losses = history.history["loss"]
    assert len(losses) == 3 and losses[-1] < losses[0] < 4 * np.log(2)
    assert all(v > 0 for v in history.history["words_per_sec"])
    # The rate fell from alpha * batch to (about) min_alpha * batch.
    lr = float(to_numpy(model.optimizer.learning_rate))
    assert lr < 0.05 * 0.025 * 256
    assert not [t for t in threading.enumerate()
                if t.name == "kzoo-python-passes" and t.is_alive()]
    wv = model.wv
    for word in ("cat", "hammer"):
        topic = ANIMALS if word in ANIMALS else TOOLS
        neighbours = [w for w, _ in wv.most_similar(word, topn=5)]
        assert set(neighbours) <= set(topic), (word, neighbours)


@pytest.mark.without_tensorflow
@pytest.mark.backends("jax", "torch")  # Keras' TensorFlow backend needs TensorFlow
def test_fit_without_tensorflow():
    # A tiny skip-gram and CBOW, an epoch each, in a process where
    # TensorFlow cannot be imported; gensim's Lee corpus when installed.
    out = check_without_tensorflow("""
        import numpy as np
        import kzoo
        from kzoo.preprocessing.engine import engine
        assert engine() == "python"
        try:
            from kzoo.datasets import lee_background
            corpus = [line for text in lee_background()[:60]
                      for line in text.lower().splitlines() if line.strip()]
            word = "the"
        except Exception:
            rng = np.random.default_rng(0)
            corpus = [" ".join(rng.choice(list("abcdefgh"), 12)) for _ in range(300)]
            word = "a"
        for cls in (kzoo.models.Word2VecSkipGram, kzoo.models.Word2VecCBOW):
            model = cls.from_corpus(corpus, hidden_dim=8, min_count=2, seed=3)
            history = model.fit(corpus, epochs=1, batch_size=512, verbose=0)
            loss = history.history["loss"]
            assert len(loss) == 1 and np.isfinite(loss).all(), loss
            assert history.history["words_per_sec"][0] > 0
            assert np.asarray(model.wv[word]).shape == (8,)
            print(cls.__name__, "ok", len(model.wv))
    """)
    assert "Word2VecSkipGram ok" in out and "Word2VecCBOW ok" in out
