"""word2vec's skip-gram training pairs with negative samples, per batch."""

import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.preprocessing_layer import RandomPreprocessingLayer
from kzoo.preprocessing.preprocessing_layer import check_type


def _alias_table(weights):
    """Walker's alias table (Vose's construction) of `weights`.

    Drawing `i` uniformly in `[0, n)` and `u` in `[0, 1)`, then keeping `i`
    if `u < probability[i]` and taking `alias[i]` otherwise, gives `i` with
    probability `weights[i] / sum(weights)`: O(1) per draw, where a search
    in the cumulative distribution takes O(log n). Ids of weight 0 have
    probability 0 and are never drawn.
    """
    n = len(weights)
    scaled = np.asarray(weights, np.float64) * n / np.sum(weights)
    probability = np.zeros(n, np.float64)
    alias = np.arange(n, dtype=np.int64)
    small = [i for i in range(n) if scaled[i] < 1.0]
    large = [i for i in range(n) if scaled[i] >= 1.0]
    while small and large:
        s, g = small.pop(), large[-1]
        probability[s], alias[s] = scaled[s], g
        scaled[g] -= 1.0 - scaled[s]
        if scaled[g] < 1.0:
            small.append(large.pop())
    heaviest = int(np.argmax(weights))
    for i in large + small:  # left over by rounding: keep the id if drawable
        if weights[i] > 0:
            probability[i] = 1.0
        else:
            probability[i], alias[i] = 0.0, heaviest
    return probability, alias


def _check_counts(counts):
    try:
        array = np.asarray(counts, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if (array is None or array.ndim != 1 or array.size == 0
            or not np.all(np.isfinite(array)) or np.any(array < 0)):
        raise ValueError(
            "`counts` must be a non-empty 1-D list or array of non-negative "
            f"word counts indexed by id, got {counts!r:.80}."
        )
    return tuple(np.asarray(counts).tolist())


def _python_sentences(inputs, size):
    """Token-id sentences in any Python form (a list of 1-D arrays, a 2-D
    or 1-D array) as their concatenated ids and the sentence lengths,
    checked as `SkipGramSampler.call` checks them."""
    if isinstance(inputs, np.ndarray) and inputs.ndim in (1, 2):
        rows = [inputs] if inputs.ndim == 1 else list(inputs)
        if inputs.ndim == 2 and inputs.dtype.kind in "iu":
            rows = None  # dense: flattened below as it is
    elif isinstance(inputs, (list, tuple)):
        rows = [np.asarray(r) for r in inputs]
        if any(r.ndim != 1 for r in rows):
            raise ValueError(
                "`inputs` must be a batch of token-id sentences (rank 2) or "
                "one sentence (rank 1), got rank "
                f"{1 + max(r.ndim for r in rows)}.")
    else:
        rank = np.ndim(inputs)
        raise ValueError(
            "`inputs` must be a batch of token-id sentences (rank 2) or one "
            f"sentence (rank 1), got rank {rank}.")
    if rows is None:
        tokens = inputs.reshape(-1)
        lengths = np.full(inputs.shape[0], inputs.shape[1], np.int64)
    else:
        for i, r in enumerate(rows):
            if r.dtype.kind not in "iu":
                if r.size:
                    name = "string" if r.dtype.kind in "USO" else r.dtype.name
                    raise TypeError(
                        f"`inputs` must be integer token ids, got dtype {name}.")
                rows[i] = r.astype(np.int32)  # an empty row: no ids
        lengths = np.fromiter((r.shape[0] for r in rows), np.int64, len(rows))
        tokens = (np.concatenate(rows) if rows else np.zeros(0, np.int64))
    if tokens.dtype.kind not in "iu":
        if tokens.size:
            raise TypeError("`inputs` must be integer token ids, got dtype "
                            f"{tokens.dtype.name}.")
        tokens = tokens.astype(np.int64)
    if tokens.size:
        if tokens.min() < 0:
            raise ValueError("`inputs` has negative token ids.")
        if tokens.max() >= size:
            raise ValueError(f"`inputs` has ids >= len(counts) = {size}.")
    return tokens, lengths


@kzoo_export("kzoo.preprocessing.SkipGramSampler")
class SkipGramSampler(RandomPreprocessingLayer):
    """Turns a batch of token-id sentences into word2vec skip-gram examples.

    The steps of word2vec.c (which gensim follows), on each batch:

    1. Ids in `skip_ids` and ids with a count of 0 are removed, as
       word2vec.c removes unknown words. With `sample > 0`, every other
       token is kept with probability
       `min(1, (sqrt(f / (sample * total)) + 1) * sample * total / f)`, where
       `f = counts[id]` and `total` is the sum of the counts (those of
       `skip_ids` excluded). Windows are taken after the removal, so they
       span over removed tokens.
    2. Each remaining position `i` of a sentence gets a radius `r_i`, drawn
       uniformly from `1..window` when `shrink_window`, else `window`; it
       yields the pairs `(center=tokens[i], context=tokens[j])` for
       `0 < |i - j| <= r_i` inside the sentence, in order of `i` then `j`.
    3. Each pair gets `negative` ids drawn from `counts ** 0.75`
       (normalised; `skip_ids` and 0-count ids are never drawn), in O(1)
       per draw with an alias table (Walker's method). A negative
       may equal the pair's context (word2vec.c skips such draws; a model
       can mask them with `negatives != context[:, None]`).

    With `output_mode="windows"` (CBOW), step 2 gives one example per
    remaining position instead of one per pair: the center and its whole
    (shrunk) window, as `context` ids `[examples, 2 * window]` (offsets
    `-window..-1, 1..window`; 0 outside the window) with a boolean
    `context_mask`; positions whose window is empty are dropped, and the
    negatives are drawn per example (to score against the center).

    Only one batch of pairs exists at a time: map the sampler over batched
    sentences in `tf.data`, then `unbatch()` (and `batch()` again) the pairs.
    All randomness comes from the layer's seeded generator.

    The TensorFlow implementation runs eagerly and inside `tf.data`; the
    Python one (the Python engine, `kzoo.preprocessing.engine`) is numpy,
    vectorized over the whole batch, and needs no TensorFlow. Both follow
    the same rules with the same rates (`keep_probability`, the alias table
    `negative_probability` / `negative_alias`); they draw from different
    streams (`generator`, `python_generator`), so only their distributions
    agree, and their examples are equal where nothing is drawn
    (`sample=0`, `shrink_window=False`).

    Args:
        counts: list or 1-D array of word counts indexed by token id (such as
            `compute_word_vocabulary`'s counts).
        window: int. Maximum distance between a center and a context word.
        negative: int. Negative samples per pair (0 for none).
        sample: float. Subsampling threshold of frequent words (0 disables
            it); word2vec.c's default is 1e-3.
        shrink_window: bool. Draw each center's radius from `1..window`.
        skip_ids: tuple of int. Ids removed before windowing, such as the
            out-of-vocabulary and padding ids.
        output_mode: `"pairs"` (skip-gram, the default) or `"windows"`
            (CBOW: one example per center with its whole window).
        seed: int or None. Seed of the random stream.

    Call arguments:
        inputs: token ids, a ragged `[batch, None]` tensor, a list of lists
            of ints, a dense `[batch, length]` array, or one 1-D sentence.

    Returns:
        A dict of int32 tensors, flat over the batch: `center` `[pairs]`,
        `context` `[pairs]` and `negatives` `[pairs, negative]`. With
        `output_mode="windows"`: `center` `[examples]`, `context` and the
        bool `context_mask` `[examples, 2 * window]`, `negatives`
        `[examples, negative]`.

    Example:
    >>> sampler = kzoo.preprocessing.SkipGramSampler(
    ...     counts=[0, 5, 3, 2], window=1, negative=2, sample=0.0,
    ...     shrink_window=False, seed=1)
    >>> out = sampler([[1, 2, 3], [2, 0, 1]])
    >>> ops.convert_to_numpy(out["center"]).tolist()
    [1, 2, 2, 3, 2, 1]
    >>> ops.convert_to_numpy(out["context"]).tolist()
    [2, 1, 3, 2, 1, 2]
    >>> tuple(out["negatives"].shape)
    (6, 2)
    >>> cbow = kzoo.preprocessing.SkipGramSampler(
    ...     counts=[0, 5, 3, 2], window=1, negative=2, sample=0.0,
    ...     shrink_window=False, output_mode="windows", seed=1)
    >>> out = cbow([[1, 2, 3], [2, 0, 1]])
    >>> ops.convert_to_numpy(out["center"]).tolist()
    [1, 2, 3, 2, 1]
    >>> ops.convert_to_numpy(out["context"]).tolist()
    [[0, 2], [1, 3], [2, 0], [0, 1], [2, 0]]

    Reference:
        - [Mikolov et al., 2013](https://arxiv.org/abs/1310.4546) (negative
          sampling, subsampling of frequent words).
        - [word2vec.c](https://code.google.com/archive/p/word2vec/).
    """

    input_dtype = "int32"

    def __init__(
        self,
        counts,
        window=5,
        negative=5,
        sample=1e-3,
        shrink_window=True,
        skip_ids=(),
        output_mode="pairs",
        seed=None,
        **kwargs,
    ):
        super().__init__(seed=seed, **kwargs)
        if output_mode not in ("pairs", "windows"):
            raise ValueError(
                '`output_mode` must be "pairs" (skip-gram) or "windows" '
                f"(CBOW), got {output_mode!r}."
            )
        self.output_mode = output_mode
        # A plain attribute: Keras and TF would track a tuple element by
        # element (seconds for a 1M-word vocabulary).
        object.__setattr__(self, "counts", _check_counts(counts))
        size = len(self.counts)
        check_type("window", window, int, "a positive int")
        check_type("negative", negative, int, "a non-negative int")
        check_type("sample", sample, (int, float), "a non-negative float")
        check_type("shrink_window", shrink_window, bool, "a bool")
        if window < 1 or negative < 0 or sample < 0:
            raise ValueError(
                "`window` must be >= 1, `negative` >= 0 and `sample` >= 0, got "
                f"window={window}, negative={negative}, sample={sample}."
            )
        skip_ids = tuple(skip_ids)
        for i in skip_ids:
            check_type("skip_ids", i, int, "a tuple of ints")
            if not 0 <= i < size:
                raise ValueError(
                    f"`skip_ids` has id {i}, outside [0, {size}) (the ids of "
                    "`counts`)."
                )
        self.window = window
        self.negative = negative
        self.sample = float(sample)
        self.shrink_window = shrink_window
        self.skip_ids = skip_ids

        f = np.asarray(self.counts, dtype=np.float64)
        f[list(skip_ids)] = 0.0
        if not np.any(f > 0):
            raise ValueError(
                "`counts` has no positive count outside `skip_ids`: nothing "
                "could be sampled."
            )
        keep = (f > 0).astype(np.float64)
        if self.sample > 0:
            threshold = self.sample * f.sum()
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = (np.sqrt(f / threshold) + 1.0) * threshold / f
            keep = np.where(f > 0, np.minimum(ratio, 1.0), 0.0)
        probability, alias = _alias_table(f**0.75)
        # The one description of the rates that both implementations read
        # (plain attributes, out of Keras' tracking); TensorFlow's constants
        # are made from them on the TensorFlow path's first call.
        object.__setattr__(self, "keep_probability", keep)
        object.__setattr__(self, "negative_probability",
                           probability.astype(np.float32))
        object.__setattr__(self, "negative_alias", alias.astype(np.int32))
        object.__setattr__(self, "_tf_tables", [])

    def _tables(self):
        """The rate tables as TensorFlow constants (made once, eagerly)."""
        if not self._tf_tables:
            with tf.init_scope():
                self._tf_tables.extend([
                    tf.constant(self.keep_probability, tf.float64),
                    tf.constant(self.negative_probability, tf.float32),
                    tf.constant(self.negative_alias, tf.int32),
                ])
        return self._tf_tables

    def call(self, inputs):
        if not inputs.dtype.is_integer:
            raise TypeError(
                f"`inputs` must be integer token ids, got dtype {inputs.dtype.name}."
            )
        rank = inputs.shape.rank
        if rank == 1:
            inputs = inputs[tf.newaxis]
        elif rank != 2:
            raise ValueError(
                "`inputs` must be a batch of token-id sentences (rank 2) or "
                f"one sentence (rank 1), got rank {rank}."
            )
        keep_probability, negative_probability, negative_alias = self._tables()
        ids = tf.cast(inputs, tf.int32)
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        size = len(self.counts)
        with tf.control_dependencies([
            tf.debugging.assert_non_negative(
                ids.flat_values, message="`inputs` has negative token ids."),
            tf.debugging.assert_less(
                ids.flat_values, size,
                message=f"`inputs` has ids >= len(counts) = {size}."),
        ]):
            keep = tf.gather(keep_probability, ids.flat_values)
        if self.sample > 0:
            draws = self.generator.uniform(tf.shape(keep), dtype=tf.float64)
            keep = draws < keep
        else:
            keep = keep > 0
        kept = tf.ragged.boolean_mask(ids, ids.with_flat_values(keep))

        tokens = kept.flat_values
        n = tf.shape(tokens)[0]
        rows = kept.value_rowids()
        index = tf.range(n)
        position = index - tf.cast(tf.gather(kept.row_starts(), rows), tf.int32)
        length = tf.cast(tf.gather(kept.row_lengths(), rows), tf.int32)
        if self.shrink_window:
            radius = self.generator.uniform(
                [n], minval=1, maxval=self.window + 1, dtype=tf.int32)
        else:
            radius = tf.fill([n], self.window)
        offsets = tf.concat(
            [tf.range(-self.window, 0), tf.range(1, self.window + 1)], axis=0)
        target = position[:, None] + offsets[None, :]
        valid = ((target >= 0) & (target < length[:, None])
                 & (tf.abs(offsets)[None, :] <= radius[:, None]))
        if self.output_mode == "windows":
            source = tf.clip_by_value(
                index[:, None] + offsets[None, :], 0, tf.maximum(n - 1, 0))
            context = tf.where(valid, tf.gather(tokens, source), 0)
            has_context = tf.reduce_any(valid, axis=1)
            outputs = {
                "center": tf.boolean_mask(tokens, has_context),
                "context": tf.boolean_mask(context, has_context),
                "context_mask": tf.boolean_mask(valid, has_context),
            }
        else:
            outputs = {
                "center": tf.boolean_mask(
                    tf.broadcast_to(tokens[:, None], tf.shape(valid)), valid),
                "context": tf.gather(
                    tokens,
                    tf.boolean_mask(index[:, None] + offsets[None, :], valid)),
            }

        examples = tf.shape(outputs["center"])[0]
        draws = [examples * self.negative]
        slot = self.generator.uniform(draws, maxval=size, dtype=tf.int32)
        coin = self.generator.uniform(draws, dtype=tf.float32)
        negatives = tf.where(
            coin < tf.gather(negative_probability, slot),
            slot, tf.gather(negative_alias, slot))
        outputs["negatives"] = tf.reshape(negatives, [examples, self.negative])
        return outputs

    def python_call(self, inputs):
        return self.sample_flat(*_python_sentences(inputs, len(self.counts)))

    def sample_flat(self, tokens, row_lengths):
        """The Python implementation on checked numpy input: `tokens`, the
        ids of all the sentences one after another, `row_lengths` their
        lengths. numpy, vectorized over the whole batch (no loop over
        tokens or pairs), drawing from `python_generator`: the rules and
        distributions of `call`, other draws."""
        generator = self.python_generator
        tokens = np.asarray(tokens)
        row_lengths = np.asarray(row_lengths, np.int64)
        keep = self.keep_probability[tokens]
        if self.sample > 0:
            keep = generator.random(keep.shape[0]) < keep
        else:
            keep = keep > 0
        rows = np.repeat(np.arange(row_lengths.shape[0]), row_lengths)[keep]
        tokens = tokens[keep].astype(np.int32, copy=False)
        n = tokens.shape[0]
        kept_lengths = np.bincount(rows, minlength=row_lengths.shape[0])
        starts = np.cumsum(kept_lengths) - kept_lengths
        position = np.arange(n) - starts[rows]
        # How far each center's window reaches to the left and to the right.
        if self.shrink_window:
            radius = generator.integers(1, self.window + 1, n)
        else:
            radius = np.full(n, self.window)
        left = np.minimum(radius, position)
        right = np.minimum(radius, kept_lengths[rows] - 1 - position)
        offsets = np.concatenate([np.arange(-self.window, 0),
                                  np.arange(1, self.window + 1)])
        reach = np.where(offsets < 0, left[:, None], right[:, None])
        valid = np.abs(offsets) <= reach  # [n, 2 * window]
        if self.output_mode == "windows":
            has_context = (left > 0) | (right > 0)
            source = np.flatnonzero(has_context)[:, None] + offsets
            valid = valid[has_context]
            context = np.where(
                valid, tokens[np.clip(source, 0, max(n - 1, 0))], 0)
            outputs = {"center": tokens[has_context],
                       "context": context.astype(np.int32, copy=False),
                       "context_mask": valid}
        else:
            center, column = np.nonzero(valid)
            outputs = {"center": tokens[center],
                       "context": tokens[center + offsets[column]]}
        examples = outputs["center"].shape[0]
        outputs["negatives"] = self._python_negatives(
            examples * self.negative).reshape(examples, self.negative)
        return outputs

    def _python_negatives(self, draws):
        """`draws` ids from the alias table: one uniform number each, whose
        integer part (times the table size) is the slot and whose fraction
        is the coin (Walker's single-draw form; float64 leaves the coin
        more than 30 bits)."""
        size = len(self.counts)
        if self.__dict__.get("_probability64") is None:
            # The float32 table as float64 (the same thresholds): no cast
            # in the comparison below.
            object.__setattr__(self, "_probability64",
                               self.negative_probability.astype(np.float64))
        coin = self.python_generator.random(draws)
        coin *= size
        slot = coin.astype(np.int32)
        np.minimum(slot, size - 1, out=slot)  # (rounding at the top end)
        coin -= slot
        keep = coin < self._probability64.take(slot)
        negatives = self.negative_alias.take(slot)
        np.copyto(negatives, slot, where=keep)
        return negatives

    def get_config(self):
        config = super().get_config()
        config.update({
            "counts": self.counts,
            "window": self.window,
            "negative": self.negative,
            "sample": self.sample,
            "shrink_window": self.shrink_window,
            "skip_ids": self.skip_ids,
            "output_mode": self.output_mode,
        })
        return config
