"""Backbone, loss, schedule, preprocessor and the two tasks (tiny corpora)."""

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from kzoo.models.word2vec.negative_sampling_loss import NegativeSamplingLoss
from kzoo.ops.sparse_rows import default_update_size
from kzoo.models.word2vec.word2vec_backbone import Word2VecBackbone
from kzoo.models.word2vec.word2vec_cbow import Word2VecCBOW
from kzoo.models.word2vec.word2vec_learning_rate import Word2VecLearningRate
from kzoo.models.word2vec.word2vec_preprocessor import Word2VecPreprocessor
from kzoo.models.word2vec.word2vec_progress import Word2VecProgress
from kzoo.models.word2vec.word2vec_skip_gram import Word2VecSkipGram
from kzoo.testing.test_case import run_backbone_test
from kzoo.testing.test_case import run_saving_test
from kzoo.testing.test_case import to_numpy

ANIMALS = "cat dog cow horse sheep goat pig hen duck mouse".split()
TOOLS = "hammer saw drill wrench chisel file rasp vise clamp pliers".split()


def topic_corpus(lines=300, length=12, seed=0):
    """Lines that each draw words from one topic: words of a topic share
    their contexts, so their vectors should end up close."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(ANIMALS if i % 2 else TOOLS, length))
            for i in range(lines)]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _backbone(vocab, dim, seed):
    """A backbone with random normal input and output tables (also returned)."""
    rng = np.random.default_rng(seed)
    backbone = Word2VecBackbone(vocabulary_size=vocab, hidden_dim=dim)
    w_in, w_out = rng.normal(size=(2, vocab, dim)).astype("float32")
    backbone.token_embedding.embeddings.assign(w_in)
    backbone.context_embedding.embeddings.assign(w_out)
    return backbone, w_in, w_out


def test_backbone_shapes_init_and_round_trip():
    out = run_backbone_test(
        Word2VecBackbone, {"vocabulary_size": 12, "hidden_dim": 4},
        {"token_ids": np.array([[1, 2], [3, 4]]), "target_ids": np.array([[5], [6]])},
        expected_output_shape={"sequence_output": (2, 2, 4), "target_output": (2, 1, 4)})
    backbone = Word2VecBackbone(vocabulary_size=1000, hidden_dim=50)
    table = to_numpy(backbone.token_embedding.embeddings)
    assert np.abs(table).max() <= 0.01 and table.std() > 0.005  # U(-0.5/50, 0.5/50)
    assert not to_numpy(backbone.context_embedding.embeddings).any()
    assert not to_numpy(out["target_output"]).any()


def test_loss_by_hand():
    scores = np.array([[2.0, -1.0, 0.5], [-0.3, 0.2, 3.0]], "float32")
    labels = np.array([[1, 0, 0], [1, -1, 0]], "float32")
    per_example = [
        -np.log(sigmoid(2.0)) - np.log(sigmoid(1.0)) - np.log(sigmoid(-0.5)),
        -np.log(sigmoid(-0.3)) - np.log(sigmoid(-3.0)),  # the -1 term left out
    ]
    loss = NegativeSamplingLoss()
    np.testing.assert_allclose(to_numpy(loss(labels, scores)), np.mean(per_example),
                               rtol=1e-6)
    restored = keras.losses.deserialize(keras.losses.serialize(loss))
    assert type(restored) is NegativeSamplingLoss


def test_learning_rate_schedule():
    lr = Word2VecLearningRate(0.025, 0.0001, decay_steps=10, start_step=5, scale=4)
    values = [float(to_numpy(lr(s))) for s in (0, 5, 10, 15, 40)]
    np.testing.assert_allclose(values, [0.1, 0.1, 4 * (0.025 - 0.5 * 0.0249), 0.0004,
                                        0.0004], rtol=1e-5)
    assert Word2VecLearningRate(**lr.get_config()).get_config() == lr.get_config()


def test_preprocessor_vocabulary_labels_and_errors(tmp_path):
    corpus = ["a a a b b c", "a b d d d d", "e"]
    pre = Word2VecPreprocessor.from_corpus(corpus, min_count=2, window=2,
                                           negative=4, sample=0.0, seed=3)
    assert pre.tokenizer.get_vocabulary() == ["[UNK]", "a", "d", "b"]  # ties: first seen
    assert list(pre.tokenizer.counts) == [2, 4, 4, 3]  # c and e are [UNK]
    limited = Word2VecPreprocessor.from_corpus(corpus, min_count=1, max_size=3)
    assert limited.tokenizer.get_vocabulary() == ["[UNK]", "a", "d"]
    x, y = pre(corpus)
    x, y = to_numpy(x), to_numpy(y)
    assert 0 not in x["center"] and 0 not in x["context"]  # [UNK] is never trained
    assert (y[:, 0] == 1).all()
    np.testing.assert_array_equal(y[:, 1:], np.where(x["negatives"] == x["context"][:, None],
                                                     -1.0, 0.0))
    assert pre.words_seen() == 13
    with pytest.raises(ValueError, match="lower `min_count` to <= 4"):
        Word2VecPreprocessor.from_corpus(corpus, min_count=5)
    with pytest.raises(FileNotFoundError, match="no-such-file.txt"):
        Word2VecPreprocessor.from_corpus(str(tmp_path / "no-such-file.txt"))
    with pytest.raises(ValueError, match="makes its own targets"):
        pre(corpus, [1, 2, 3])


def test_file_stream_equals_in_memory_lines(tmp_path):
    corpus = topic_corpus(40)
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(corpus) + "\n")
    batches = []
    for data in (str(path), corpus):
        pre = Word2VecPreprocessor.from_corpus(data, min_count=1, sample=0.0, seed=5)
        batches.append([to_numpy(x) for x, _ in pre.dataset(data, 100)])
    assert len(batches[0]) == len(batches[1]) > 3
    for a, b in zip(*batches):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


def test_streams_a_corpus_larger_than_memory():
    # An endless corpus: the dataset yields batches at once, so the pairs of
    # the corpus are never all made first.
    pre = Word2VecPreprocessor.from_corpus(topic_corpus(10), min_count=1, seed=0)
    endless = tf.data.Dataset.from_tensor_slices(topic_corpus(10)).repeat()
    x, y = next(iter(pre.dataset(endless, 256)))
    assert x["center"].shape == (256,) and y.shape == (256, 6)
    assert pre.expected_examples() > 0


@pytest.mark.parametrize("batch", [1, 3])
def test_skip_gram_step_is_word2vecs_update(batch):
    # One SGD step on pairs equals word2vec.c's update by hand (alpha per
    # pair, summed over the batch): g = (label - sigmoid(h . u)) * alpha,
    # u += g h for each target, h += sum g u (old u).
    vocab, dim, alpha = 7, 3, 0.1
    backbone, w_in, w_out = _backbone(vocab, dim, seed=batch)
    model = Word2VecSkipGram(backbone)
    model.compile(optimizer=keras.optimizers.SGD(alpha * batch))
    center, context = np.array([1, 2, 1][:batch]), np.array([3, 4, 5][:batch])
    negatives = np.array([[5, 6], [6, 1], [2, 2]][:batch])
    labels = np.array([[1, 0, 0], [1, 0, 0], [1, 0, 0]][:batch], "float32")
    model.train_on_batch({"center": center, "context": context, "negatives": negatives},
                         labels)
    new_in, new_out = w_in.copy(), w_out.copy()
    for c, t, row in zip(center, np.c_[context, negatives], labels):
        h = w_in[c]
        g = (row - sigmoid(w_out[t] @ h)) * alpha
        np.add.at(new_out, t, g[:, None] * h)
        new_in[c] += g @ w_out[t]
    np.testing.assert_allclose(to_numpy(backbone.token_embedding.embeddings), new_in,
                               atol=1e-5)
    np.testing.assert_allclose(to_numpy(backbone.context_embedding.embeddings), new_out,
                               atol=1e-5)


def test_cbow_scores_by_hand():
    backbone, w_in, w_out = _backbone(6, 2, seed=0)
    model = Word2VecCBOW(backbone)
    x = {"center": np.array([1]), "context": np.array([[2, 0, 4, 5]]),
         "context_mask": np.array([[True, False, True, True]]),
         "negatives": np.array([[3, 0]])}
    h = w_in[[2, 4, 5]].mean(axis=0)
    np.testing.assert_allclose(to_numpy(model(x)), [w_out[[1, 3, 0]] @ h], rtol=1e-5)


def test_cbow_step_is_word2vecs_update():
    # word2vec.c / gensim (cbow_mean=1): h = mean of the window's input
    # vectors, g = (label - sigmoid(h . u)) * alpha, u += g h, and every
    # context word's input vector += sum g u (the whole error, undivided).
    vocab, dim, alpha = 8, 3, 0.1
    backbone, w_in, w_out = _backbone(vocab, dim, seed=7)
    model = Word2VecCBOW(backbone)
    model.compile(optimizer=keras.optimizers.SGD(alpha))
    x = {"center": np.array([1]), "context": np.array([[2, 0, 4, 5]]),
         "context_mask": np.array([[True, False, True, True]]),
         "negatives": np.array([[3, 6]])}
    model.train_on_batch(x, np.array([[1.0, 0.0, 0.0]]))
    h = w_in[[2, 4, 5]].mean(axis=0)
    targets = [1, 3, 6]
    g = (np.array([1.0, 0.0, 0.0]) - sigmoid(w_out[targets] @ h)) * alpha
    new_out, new_in = w_out.copy(), w_in.copy()
    new_out[targets] += g[:, None] * h
    new_in[[2, 4, 5]] += g @ w_out[targets]
    np.testing.assert_allclose(to_numpy(backbone.token_embedding.embeddings), new_in,
                               atol=1e-5)
    np.testing.assert_allclose(to_numpy(backbone.context_embedding.embeddings), new_out,
                               atol=1e-5)


@pytest.mark.parametrize("cls", [Word2VecSkipGram, Word2VecCBOW])
def test_fit_learns_topics_with_decaying_rate(cls):
    corpus = topic_corpus()
    model = cls.from_corpus(corpus, hidden_dim=16, min_count=1, window=3,
                            negative=3, sample=0.0, seed=1)
    history = model.fit(corpus, epochs=3, batch_size=256, verbose=0)
    losses = history.history["loss"]
    assert len(losses) == 3 and losses[-1] < losses[0] < 4 * np.log(2)
    assert all(v > 0 for v in history.history["words_per_sec"])
    # The rate fell from alpha * batch to (about) min_alpha * batch.
    lr = float(to_numpy(model.optimizer.learning_rate))
    assert lr < 0.05 * 0.025 * 256
    # Rescheduling (each fit, and after its first epoch) changes the
    # optimizer's schedule variable, not the compiled step.
    compiled = model.train_function
    model.fit(corpus, epochs=2, batch_size=256, verbose=0)
    assert model.train_function is compiled
    wv = model.wv
    assert set(wv.index_to_key) == set(ANIMALS + TOOLS)
    for word in ("cat", "hammer"):
        topic = ANIMALS if word in ANIMALS else TOOLS
        neighbours = [w for w, _ in wv.most_similar(word, topn=5)]
        assert set(neighbours) <= set(topic), (word, neighbours)


def test_save_and_preset_round_trips(tmp_path):
    corpus = topic_corpus(20)
    model = Word2VecSkipGram.from_corpus(corpus, hidden_dim=4, min_count=1, seed=2)
    model.fit(corpus, epochs=1, batch_size=64, verbose=0)
    x = {"center": np.array([1, 2]), "context": np.array([3, 4]),
         "negatives": np.array([[5, 6], [7, 8]])}
    restored = run_saving_test(model, x, tmp_path)
    assert restored.preprocessor.tokenizer.counts == model.preprocessor.tokenizer.counts
    model.save_to_preset(str(tmp_path / "preset"))
    again = Word2VecSkipGram.from_preset(str(tmp_path / "preset"))
    np.testing.assert_array_equal(again.wv.vectors, model.wv.vectors)
    assert again.wv.index_to_key == model.wv.index_to_key
    assert again.preprocessor.window == 5 and again.preprocessor.output_mode == "pairs"


def test_seeded_training_is_reproducible():
    corpus = topic_corpus(30)
    vectors = []
    for _ in range(2):
        keras.utils.set_random_seed(4)
        model = Word2VecCBOW.from_corpus(corpus, hidden_dim=4, min_count=1, seed=4)
        model.fit(corpus, epochs=1, batch_size=32, verbose=0)
        vectors.append(model.wv.vectors)
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    assert not np.allclose(vectors[0], 0)


def test_pairs_cover_every_window_position():
    # The pairs of one line with a fixed window are all in-window pairs.
    pre = Word2VecPreprocessor.from_corpus(["a b c d"], min_count=1, window=1,
                                           sample=0.0, shrink_window=False, seed=0)
    x, _ = pre(["a b c d"])
    vocab = pre.tokenizer.get_vocabulary()
    pairs = [(vocab[c], vocab[t]) for c, t in zip(to_numpy(x["center"]),
                                                  to_numpy(x["context"]))]
    words = "a b c d".split()
    assert pairs == [(a, b) for a, b in itertools.permutations(words, 2)
                     if abs(words.index(a) - words.index(b)) == 1]


def test_epoch_loss_is_the_mean_over_all_pairs():
    # With a zero learning rate the weights stay put, so the epoch's loss
    # must equal the mean per-pair loss over every pair of the pass (batches
    # of different sizes included), recomputed here. No randomness (Keras may
    # start a dataset twice on some backends, which would move a stream).
    corpus = topic_corpus(50)
    fixed = dict(min_count=1, sample=0.0, shrink_window=False, negative=0)
    model = Word2VecSkipGram.from_corpus(corpus, hidden_dim=6, **fixed)
    rng = np.random.default_rng(0)
    model.backbone.context_embedding.embeddings.assign(
        rng.normal(size=(21, 6)).astype("float32"))
    model.compile(alpha=0.0, min_alpha=0.0)
    fresh = Word2VecPreprocessor.from_corpus(corpus, **fixed)
    losses, sizes = [], []
    for x, y in fresh.dataset(corpus, 64):
        per_pair = NegativeSamplingLoss(reduction=None)(y, model(x))
        losses.append(to_numpy(per_pair))
        sizes.append(len(losses[-1]))
    history = model.fit(corpus, epochs=1, batch_size=64, verbose=0)
    assert len(set(sizes)) == 2  # full batches and a smaller last one
    np.testing.assert_allclose(history.history["loss"][0],
                               np.concatenate(losses).mean(), rtol=1e-5)


def _random_task(cls, update_size, vocab=9, dim=4, seed=0):
    backbone, w_in, w_out = _backbone(vocab, dim, seed)
    model = cls(backbone)
    model.compile(alpha=0.05, update_size=update_size)
    model._set_schedule(10, 1)  # rate 0.05 per example at step 0
    return model, w_in, w_out


def _random_batch(cls, size=10, vocab=9, seed=1):
    rng = np.random.default_rng(seed)
    x = {"center": rng.integers(1, vocab, size), "negatives": rng.integers(1, vocab, (size, 2))}
    if cls is Word2VecCBOW:
        x["context"] = rng.integers(0, vocab, (size, 4))
        x["context_mask"] = rng.random((size, 4)) > 0.3
        truth = x["center"]
    else:
        x["context"] = rng.integers(1, vocab, size)
        truth = x["context"]
    # Repeated ids throughout; a negative that drew the true word is left out.
    y = np.c_[np.ones(size), np.where(x["negatives"] == truth[:, None], -1, 0)]
    return x, y.astype("float32")


def _tables(model):
    return (to_numpy(model.backbone.token_embedding.embeddings),
            to_numpy(model.backbone.context_embedding.embeddings))


@pytest.mark.parametrize("cls", [Word2VecSkipGram, Word2VecCBOW])
def test_sparse_step_equals_kerass_dense_step(cls):
    # The default step gathers and scatter-adds only the touched rows; with
    # one update per batch it must equal Keras' dense SGD step on the mean
    # loss (update_size=None), repeated ids and left-out negatives included.
    x, y = _random_batch(cls)
    dense, w_in, w_out = _random_task(cls, update_size=None)
    sparse, _, _ = _random_task(cls, update_size=64)
    assert not dense._sparse and sparse._sparse
    dense_loss = dense.train_on_batch(x, y)
    sparse_loss = sparse.train_on_batch(x, y)
    for a, b, before in zip(_tables(dense), _tables(sparse), (w_in, w_out)):
        assert np.abs(a - before).max() > 1e-3  # the step moved the rows
        np.testing.assert_allclose(b, a, atol=1e-6)
    np.testing.assert_allclose(sparse_loss, dense_loss, rtol=1e-6)
    assert int(to_numpy(sparse.optimizer.iterations)) == 1


def test_micro_batches_are_applied_one_after_another():
    # update_size=4 on 10 pairs: three updates (4, 4, 2 pairs), each
    # word2vec.c's update by hand on the tables the previous one left.
    x, y = _random_batch(Word2VecSkipGram)
    model, w_in, w_out = _random_task(Word2VecSkipGram, update_size=4)
    model.train_on_batch(x, y)
    rate = 0.05 * 1 / 10  # the schedule's rate (scale 1) over the batch size
    new_in, new_out = w_in.copy(), w_out.copy()
    for start in range(0, 10, 4):
        part = slice(start, start + 4)
        old_in, old_out = new_in.copy(), new_out.copy()
        targets = np.c_[x["context"][part], x["negatives"][part]]
        for c, t, row in zip(x["center"][part], targets, y[part]):
            h = old_in[c]
            g = (np.maximum(row, 0) - sigmoid(old_out[t] @ h)) * (row >= 0) * rate
            np.add.at(new_out, t, g[:, None] * h)
            new_in[c] += g @ old_out[t]
    np.testing.assert_allclose(_tables(model)[0], new_in, atol=1e-6)
    np.testing.assert_allclose(_tables(model)[1], new_out, atol=1e-6)


def test_update_size_is_checked_and_kept_in_the_config():
    model, _, _ = _random_task(Word2VecSkipGram, update_size=32)
    assert model.get_compile_config()["update_size"] == 32
    # "auto" bounds each update whatever the batch size (one update of a
    # 16384-pair batch diverged on torch): the backend's default.
    model.compile()
    assert model.update_size == default_update_size()
    assert default_update_size() in (128, 4096)
    assert model.get_compile_config()["update_size"] == "auto"
    with pytest.raises(ValueError, match="update_size"):
        model.compile(update_size=0)
    # Another optimizer, or metrics: Keras' own dense step.
    model.compile(optimizer=keras.optimizers.SGD(0.1))
    assert not model._sparse


@pytest.mark.backends("tensorflow")
def test_sparse_step_is_compiled_with_xla_on_tensorflow():
    model, _, _ = _random_task(Word2VecSkipGram, update_size=32)
    assert model.jit_compile is True
    model.compile(jit_compile=False)  # given: kept
    assert model._sparse and model.jit_compile is False
    model.compile(update_size=None)  # Keras' dense step: Keras' default
    assert model.jit_compile == model._resolve_auto_jit_compile()


def test_padded_last_batch_keeps_every_example():
    corpus = topic_corpus(20)
    fixed = dict(min_count=1, sample=0.0, shrink_window=False, seed=0)
    plain = [to_numpy(b) for b in Word2VecPreprocessor.from_corpus(
        corpus, **fixed).dataset(corpus, 64)]
    padded = [to_numpy(b) for b in Word2VecPreprocessor.from_corpus(
        corpus, **fixed).dataset(corpus, 64, pad_remainder=True)]
    assert len(plain[-1][1]) < 64 and all(len(y) == 64 for _, y in padded)
    last_x, last_y = padded[-1]
    real = len(plain[-1][1])
    np.testing.assert_array_equal(last_y[:real], plain[-1][1])
    np.testing.assert_array_equal(last_x["center"][:real], plain[-1][0]["center"])
    assert (last_y[real:] == -1).all() and not last_x["center"][real:].any()


@pytest.mark.parametrize("cache_tokens", [False, True])
def test_passes_give_the_per_epoch_datasets_examples(cache_tokens):
    # fit's one iterator over all passes draws the same examples, in the
    # same order, as a new iterator per epoch (and cached token ids do not
    # change them); its end values count each pass's words exactly.
    corpus = topic_corpus(100)
    words = sum(len(line.split()) for line in corpus)
    # Subsampling (strong: 20 words) and shrunk windows on.
    settings = dict(min_count=1, sample=0.05, seed=7)
    per_epoch = Word2VecPreprocessor.from_corpus(corpus, **settings)
    dataset = per_epoch.dataset(corpus, 64, pad_remainder=True)
    expected = [[to_numpy(b) for b in dataset] for _ in range(3)]
    streamed = Word2VecPreprocessor.from_corpus(corpus, **settings)
    passes = streamed.passes(corpus, 64, 3, pad_remainder=True,
                             cache_tokens=cache_tokens)
    progress = Word2VecProgress(streamed, passes)
    for epoch, batches in enumerate(expected):
        progress.on_epoch_begin(epoch)
        got = list(passes.next_pass())
        progress.on_epoch_end(epoch, {})
        assert len(got) == len(batches) > 2
        for (x, y), (want_x, want_y) in zip(got, batches):
            np.testing.assert_array_equal(y, want_y)
            for key in want_x:
                np.testing.assert_array_equal(x[key], want_x[key])
    assert passes.end_values == [0, words, 2 * words, 3 * words]
    assert progress.epoch_words == [words] * 3


def test_a_callback_that_stops_training_ends_fit():
    corpus = topic_corpus(20)
    model = Word2VecSkipGram.from_corpus(corpus, hidden_dim=4, min_count=1, seed=1)

    class StopAfterFirstEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.stop_training = True

    history = model.fit(corpus, epochs=4, batch_size=32, verbose=0,
                        callbacks=[StopAfterFirstEpoch()])
    assert history.epoch == [0] and len(history.history["loss"]) == 1
    with pytest.raises(ValueError, match="cache_tokens"):
        model.fit(corpus, epochs=2, cache_tokens="yes")
    with pytest.raises(ValueError, match="no training examples"):
        model.fit(["zzz qqq www"], epochs=2, verbose=0)
