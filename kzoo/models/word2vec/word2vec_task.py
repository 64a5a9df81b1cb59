"""What word2vec's skip-gram and CBOW tasks share: compile, fit, vectors."""

import math
import warnings

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.data.shards import TokenShards
from kzoo.models.task import Task
from kzoo.models.word2vec.negative_sampling_loss import NegativeSamplingLoss
from kzoo.models.word2vec.word2vec_backbone import Word2VecBackbone
from kzoo.models.word2vec.word2vec_learning_rate import Word2VecLearningRate
from kzoo.models.word2vec.word2vec_preprocessor import Word2VecPreprocessor
from kzoo.models.word2vec.word2vec_preprocessor import _python_engine
from kzoo.models.word2vec.word2vec_progress import EpochsProgbar
from kzoo.models.word2vec.word2vec_progress import Word2VecProgress
from kzoo.models.word2vec.word_vectors import WordVectors
from kzoo.ops import sparse_rows

#: the most corpus words whose token ids `fit(cache_tokens="auto")` keeps
_CACHE_WORDS = 50_000_000


@kzoo_export("kzoo.models.Word2VecTask")
class Word2VecTask(Task):
    """Base of `Word2VecSkipGram` and `Word2VecCBOW`.

    `fit(data, epochs=..., batch_size=...)` takes a corpus (a text file
    path, a list of str lines or a `tf.data.Dataset` of strings) and streams
    it through the preprocessor in `tf.data`, or, with the Python
    preprocessing engine (TensorFlow not installed, or chosen: see
    `kzoo.preprocessing.engine`), in the preprocessor's numpy pipeline on a
    background thread (`Word2VecPreprocessor.passes`). It also takes a
    corpus tokenized ahead, a `kzoo.data.TokenShards` (`kzoo prepare
    word2vec`; build the task with `from_tokenizer(shards.tokenizer())`),
    which always streams through the numpy pipeline: with the same seed it
    trains the vectors its lines' text trains. The default `compile()` is
    plain SGD with word2vec's linearly decaying learning rate, from `alpha`
    to `min_alpha` over all the epochs of each `fit` call (as gensim's
    `train`), over an estimate of the steps from the vocabulary counts.
    The reported `loss` is the mean negative-sampling loss per example;
    `words_per_sec` is the speed in corpus words.

    With that default compile, each training step is word2vec's sparse
    update rather than Keras' dense one: it gathers the rows of the two
    tables that the batch touches, computes their gradients in closed form
    and adds them back (`kzoo.ops.sparse_rows`), in micro-batches of
    `update_size` examples applied one after another, as word2vec.c and
    gensim apply theirs. The dense gradient of both `[vocabulary, dim]`
    tables is never built. With `update_size` at least the batch size,
    the step equals Keras' dense SGD step on the mean loss (tested).
    """

    backbone_cls = Word2VecBackbone
    preprocessor_cls = Word2VecPreprocessor
    output_mode = "pairs"
    default_alpha = 0.025

    def compile(self, optimizer="auto", loss="auto", alpha=None,
                min_alpha=0.0001, update_size="auto", **kwargs):
        """SGD with word2vec's decaying rate and the negative-sampling loss.

        Args:
            optimizer: "auto" (SGD, rate scheduled by `fit`) or a Keras
                optimizer (then `fit` leaves its rate alone).
            loss: "auto" (`NegativeSamplingLoss`) or a Keras loss.
            alpha: float. Initial per-example learning rate (0.025, as
                gensim; `fit` multiplies it by the batch size because the
                loss is a batch mean).
            min_alpha: float. Final learning rate.
            update_size: "auto", int or None. Examples per sparse update
                inside a step. "auto": 128 on JAX and TensorFlow, 4096 on
                PyTorch, the fastest measured with bench/word2vec.py: XLA's
                small batched dots get slower past about 160 rows, and on
                PyTorch each op's dispatch costs more
                than smaller updates save. Larger updates train worse, and
                diverge at some size: one update of 16384 skip-gram pairs did
                on the benchmark's corpus (frequent words' rows get hundreds
                of updates at once). None makes each step Keras' dense gradient
                step (the same caution applies to its batch size). The
                sparse step runs with the default optimizer and loss, no
                metrics and no distribution; any other setting trains with
                Keras' dense step. On TensorFlow it is compiled with XLA
                (`jit_compile=True` unless given).
        """
        self.alpha = self.default_alpha if alpha is None else float(alpha)
        self.min_alpha = float(min_alpha)
        self._compiled_update_size = update_size  # as given, for the config
        if update_size == "auto":
            update_size = sparse_rows.default_update_size()
        if update_size is not None and (
                not isinstance(update_size, int) or update_size < 1):
            raise ValueError('`update_size` must be "auto", a positive int or '
                             f"None, got {update_size!r}.")
        self.update_size = update_size
        self._sparse = (update_size is not None and optimizer == "auto"
                        and loss == "auto" and not kwargs.get("metrics")
                        and not kwargs.get("weighted_metrics"))
        if self._sparse:
            for name, value in sparse_rows.sparse_step_compile_defaults().items():
                kwargs.setdefault(name, value)
        self._schedule = None
        if optimizer == "auto":
            self._schedule = Word2VecLearningRate(self.alpha, self.min_alpha)
            optimizer = keras.optimizers.SGD(learning_rate=self._schedule)
            self._schedule.attach(optimizer)
        if loss == "auto":
            loss = NegativeSamplingLoss()
        super().compile(optimizer=optimizer, loss=loss, **kwargs)

    def get_compile_config(self):
        return {"alpha": self.alpha, "min_alpha": self.min_alpha,
                "update_size": self._compiled_update_size}

    def compile_from_config(self, config):
        self.compile(**config)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, callbacks=None,
            corpus_words=None, cache_tokens="auto", **kwargs):
        """Trains on a corpus (or on already sampled `(x, y)` batches).

        Args:
            x: a text file path, a list of str lines, a `tf.data.Dataset` of
                strings, a `kzoo.data.TokenShards` of word2vec's (its lines'
                ids), or a dataset of sampled examples.
            batch_size: int. Examples (pairs or windows) per step. Default:
                16384 when a pass holds at least 20 such batches and the
                sparse step trains (see `compile`), else 4096.
                Big steps spread each step's fixed cost (Keras, `tf.data`)
                over more examples: faster training with the same quality
                (the updates stay `update_size` long); a small
                corpus keeps 4096, since its padded last batch would be
                mostly padding.
            epochs: int.
            corpus_words: int or None. Words in `x`, for the learning rate's
                decay; defaults to the vocabulary's corpus (`from_corpus`).
            cache_tokens: "auto" or bool. Keep the corpus's token ids in
                memory after the first pass, so that later epochs do not
                read and tokenize the text again (~4 bytes a word; see
                `Word2VecPreprocessor.dataset`). "auto": when there is more
                than one epoch and the corpus (`corpus_words`, else the
                vocabulary's) has at most 50M words. Token shards are
                never cached (their ids are read as they are).
            **kwargs: `keras.Model.fit` arguments.

        Returns:
            The `History`; `history.history["words_per_sec"]` has each
            epoch's speed.

        The epochs are one `keras.Model.fit` call each (the number of
        examples in a pass is random: Keras would cut later epochs at the
        first one's step count), fed by one iterator over all the passes
        (`Word2VecPreprocessor.passes`: the next pass is sampled while the
        current one's last steps train). A callback that sets
        `model.stop_training` (such as `EarlyStopping`) ends the training.
        """
        if self.preprocessor is None or not self._needs_preprocessing(
                x if not isinstance(x, str) else [x]):
            return super().fit(x, y, batch_size=batch_size, epochs=epochs,
                               callbacks=callbacks, **kwargs)
        if y is not None:
            raise ValueError("word2vec makes its own targets: pass only the corpus.")
        if cache_tokens not in ("auto", True, False):
            raise ValueError('`cache_tokens` must be "auto", True or False, got '
                             f"{cache_tokens!r}.")
        examples = self.preprocessor.expected_examples(corpus_words)
        distributed = sparse_rows.distributed()
        sparse = self._sparse and not distributed
        # Keras' dense step makes one update per batch: it keeps 4096.
        big = sparse and examples >= 20 * 16384
        batch_size = batch_size or (16384 if big else 4096)
        initial_epoch = kwargs.pop("initial_epoch", 0)
        if isinstance(x, TokenShards):
            cache_tokens = False  # already ids
        elif cache_tokens == "auto":
            words = corpus_words or self.preprocessor.vocabulary_words()
            cache_tokens = epochs - initial_epoch > 1 and words <= _CACHE_WORDS
        # A last, smaller batch per pass would be one more shape to compile.
        # The sparse step fills it up with no-op examples; Keras' dense
        # step (whose loss would count them) drops it when that loses under
        # 1% of the examples.
        options = dict(pad_remainder=sparse, cache_tokens=cache_tokens,
                       drop_remainder=not sparse and examples > 100 * batch_size)
        # The strategies shard a dataset: one per epoch (the Python
        # engine's batches are numpy arrays, which Keras distributes).
        if distributed and not _python_engine(x):
            dataset, passes = self.preprocessor.dataset(x, batch_size, **options), None
        else:
            dataset = None
            passes = self.preprocessor.passes(
                x, batch_size, max(epochs - initial_epoch, 0), **options)
        estimate = math.ceil(examples / batch_size)
        self._set_schedule(estimate * epochs, batch_size)
        progress = Word2VecProgress(self.preprocessor, passes)
        callbacks = [progress] + list(callbacks or [])
        if kwargs.get("verbose", "auto") != 0 and not any(
                isinstance(c, keras.callbacks.ProgbarLogger) for c in callbacks):
            callbacks.append(EpochsProgbar(epochs))
        kwargs.pop("shuffle", None)  # word2vec reads the corpus in order
        try:
            return self._fit_epochs(passes, dataset, callbacks, initial_epoch,
                                    epochs, batch_size, kwargs)
        finally:
            if passes is not None and hasattr(passes, "close"):
                passes.close()  # the Python pipeline's thread

    def _needs_preprocessing(self, x):
        if isinstance(x, TokenShards):  # a corpus, tokenized ahead
            return self.preprocessor is not None
        return super()._needs_preprocessing(x)

    def _fit_epochs(self, passes, dataset, callbacks, initial_epoch, epochs,
                    batch_size, kwargs):
        """`fit`'s epochs, one `keras.Model.fit` call each."""
        history = None
        for epoch in range(initial_epoch, epochs):
            before = self._iterations()
            with warnings.catch_warnings():
                # Keras warns at the end of a dataset of unknown length.
                warnings.filterwarnings("ignore", message="Your input ran out")
                epoch_history = keras.Model.fit(
                    self, dataset if passes is None else passes.keras_input(),
                    epochs=epoch + 1, initial_epoch=epoch,
                    callbacks=callbacks, shuffle=False, **kwargs)
            if history is None:
                history = epoch_history
            else:
                for key, values in epoch_history.history.items():
                    history.history.setdefault(key, []).extend(values)
                history.epoch.extend(epoch_history.epoch)
            if self.stop_training:
                break
            if epoch == 0 and epochs > 1:
                # The first pass counted the steps: decay over the real total.
                steps = self._iterations() - before
                self._set_schedule(steps * epochs, batch_size,
                                   start_step=before)
        return history

    def train_step(self, *args):
        if not self._sparse_step_applies(args[-1]):
            return super().train_step(*args)
        return sparse_rows.stateful_train_step(self, self._sparse_train_step, *args)

    def _sparse_step_applies(self, data):
        if not getattr(self, "_sparse", False) or not self.backbone.trainable:
            return False
        _, _, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        return sample_weight is None and not sparse_rows.distributed()

    def _sparse_train_step(self, data):
        """One step of word2vec's sparse SGD update (see the class doc)."""
        x, y, _ = keras.utils.unpack_x_y_sample_weight(data)
        tables = [self.backbone.token_embedding.embeddings,
                  self.backbone.context_embedding.embeddings]
        dtype = tables[0].dtype
        y = ops.cast(y, dtype)
        batch = ops.shape(y)[0]
        # The dense step's rate is per mean-over-the-batch loss: per example
        # it is the rate over the batch size.
        rate = ops.cast(self.optimizer.learning_rate, dtype) / ops.cast(batch, dtype)
        size = self.update_size
        if isinstance(batch, int):
            size = min(size, batch)  # (TensorFlow's batch may be a tensor)
        pad = (-batch) % size
        chunks = (batch + pad) // size

        def split(value, fill):
            # Padded examples have label -1: they change nothing.
            if not isinstance(pad, int) or pad:  # (a copy on torch)
                widths = [[0, pad]] + [[0, 0]] * (len(value.shape) - 1)
                value = ops.pad(value, widths, constant_values=fill)
            return ops.reshape(value, (chunks, size) + tuple(ops.shape(value)[1:]))

        xs = {k: split(v, False if v.dtype == "bool" else 0) for k, v in x.items()}
        ys = split(y, -1)

        def body(i, carry):
            *values, loss = carry
            per_example, updates = self._row_updates(
                {k: v[i] for k, v in xs.items()}, ys[i], rate, *values)
            for table, indices, rows in updates:
                values[table] = sparse_rows.add_to_rows(values[table], indices, rows)
            return (*values, loss + ops.sum(per_example))

        start = (*[sparse_rows.table_value(t) for t in tables],
                 ops.zeros((), dtype))
        *values, loss = ops.fori_loop(0, chunks, body, start)
        for table, value in zip(tables, values):
            sparse_rows.assign_table(table, value)
        self.optimizer.iterations.assign_add(1)
        # The mean over the real examples (a padded one's first label is -1).
        real = ops.sum(ops.cast(y[:, 0] >= 0, dtype))
        self._loss_tracker.update_state(loss / ops.maximum(real, 1.0),
                                        sample_weight=real)
        return self.compute_metrics(x, y, None)

    def _row_updates(self, x, labels, rate, token_table, context_table):
        """A micro-batch's loss per example and its SGD row updates.

        Returns `(loss [examples], updates)`, `updates` a list of `(table,
        ids [n], rows [n, dim])` with `table` 0 for the input vectors and 1
        for the output ones: `rows` is `-rate` times the gradient of the
        summed negative-sampling loss, to be added to the rows `ids`.
        """
        raise NotImplementedError

    @staticmethod
    def _score_updates(hidden, targets, labels, rate, context_table):
        """What skip-gram and CBOW share: scores of `hidden [m, dim]`
        against the output vectors of `targets [m, k]`, the loss per example,
        and `-rate` times the loss's gradients with respect to `hidden` and
        to the targets' output vectors (as rows to add)."""
        vectors = ops.take(context_table, targets, axis=0)  # [m, k, dim]
        scores = ops.einsum("md,mkd->mk", hidden, vectors)
        valid = ops.cast(labels >= 0, scores.dtype)
        truth = ops.maximum(labels, 0.0)
        loss = ops.sum(ops.softplus(scores * (1.0 - 2.0 * truth)) * valid, axis=-1)
        # word2vec.c's g: -rate * d loss / d score.
        step = (truth - ops.sigmoid(scores)) * (valid * rate)
        hidden_update = ops.einsum("mk,mkd->md", step, vectors)
        target_update = ops.reshape(
            step[:, :, None] * hidden[:, None, :], (-1, hidden.shape[-1]))
        return loss, hidden_update, (1, ops.reshape(targets, (-1,)), target_update)

    def _iterations(self):
        return int(keras.ops.convert_to_numpy(self.optimizer.iterations))

    def _set_schedule(self, decay_steps, batch_size, start_step=None):
        if self._schedule is None:
            return
        # Held in an optimizer variable: the compiled step is kept.
        self._schedule.set(
            alpha=self.alpha, min_alpha=self.min_alpha, decay_steps=decay_steps,
            start_step=self._iterations() if start_step is None else start_step,
            scale=batch_size)

    def word_vectors(self):
        """The trained input vectors as `WordVectors` (in vocabulary order,
        the out-of-vocabulary token left out)."""
        if self.preprocessor is None:
            raise ValueError("word_vectors() needs the preprocessor's vocabulary.")
        return WordVectors.from_backbone(self.backbone, self.preprocessor.tokenizer)

    @property
    def wv(self):
        """`word_vectors()`, under gensim's name."""
        return self.word_vectors()

    def serving_model(self):
        """What ``kzoo.export.saved_model`` writes for this task: its trained
        vectors as a word table (``WordVectors.serving_model``), looked up
        lowercased when its tokenizer lowercases."""
        if self.preprocessor is None:
            raise ValueError(
                "Export needs the task's preprocessor (its vocabulary names the "
                "vectors): build the task with `preprocessor=`.")
        lowercase = bool(getattr(self.preprocessor.tokenizer, "lowercase", False))
        return self.word_vectors().serving_model(lowercase=lowercase)

    @classmethod
    def from_corpus(cls, data, hidden_dim=100, min_count=5, max_size=None,
                    lowercase=False, window=5, negative=5, sample=1e-3,
                    shrink_window=True, seed=None, **kwargs):
        """Vocabulary, preprocessor, backbone and task for a corpus.

        Args:
            data: a text file path, a list of str lines or a
                `tf.data.Dataset` of strings (read once for the vocabulary).
            hidden_dim: int. Vector size.
            min_count, max_size, lowercase: the vocabulary's (see
                `Word2VecPreprocessor.from_corpus`).
            window, negative, sample, shrink_window, seed: the sampling's.
            **kwargs: task arguments.
        """
        tokenizer = Word2VecPreprocessor.tokenizer_from_corpus(
            data, min_count=min_count, max_size=max_size, lowercase=lowercase)
        return cls.from_tokenizer(
            tokenizer, hidden_dim=hidden_dim, window=window, negative=negative,
            sample=sample, shrink_window=shrink_window, seed=seed, **kwargs)

    @classmethod
    def from_tokenizer(cls, tokenizer, hidden_dim=100, window=5, negative=5,
                       sample=1e-3, shrink_window=True, seed=None, **kwargs):
        """Preprocessor, backbone and task for a vocabulary already counted:
        a `WordTokenizer` with `counts` (`from_corpus`'s, or the tokenizer
        of a `kzoo.data.TokenShards` that `fit` then trains on).

        Args:
            tokenizer: a `WordTokenizer` with the corpus counts.
            **kwargs: `hidden_dim`, `window`, `negative`, `sample`,
                `shrink_window`, `seed` and the rest, as `from_corpus`.
        """
        preprocessor = Word2VecPreprocessor(
            tokenizer=tokenizer, window=window, negative=negative,
            sample=sample, shrink_window=shrink_window,
            output_mode=cls.output_mode, seed=seed)
        backbone = Word2VecBackbone(
            vocabulary_size=preprocessor.tokenizer.vocabulary_size(),
            hidden_dim=hidden_dim)
        return cls(backbone, preprocessor=preprocessor, **kwargs)

    def serving_outputs(self, outputs):
        return {"logits": outputs}
