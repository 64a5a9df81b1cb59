"""Sampled softmax (Jean et al. 2015; bilm-tf's and TensorFlow's recipe).

A softmax over a large vocabulary is replaced, for training, by one over
the true word and a few words sampled from a log-uniform (Zipfian)
distribution, each logit corrected by the log of its expected count in the
sample. The sample is drawn once per batch and shared by every position,
as ``tf.nn.sampled_softmax_loss`` does, so the cost is one
``[positions, dim] x [dim, num_sampled]`` product instead of
``[positions, dim] x [dim, vocabulary_size]``.

The log-uniform distribution assumes word ids sorted by falling frequency
(``compute_word_vocabulary`` orders them so, after its special tokens).
Evaluate with the full softmax: the sampled loss is a training estimate.
"""

import math

import keras
from keras import ops


def log_uniform_probability(ids, range_max):
    """P(k) = log((k + 2) / (k + 1)) / log(range_max + 1), for ids in [0, range_max)."""
    ids = ops.cast(ids, "float32")
    # log1p keeps the difference of two close logs exact for large ids.
    return ops.log1p(1.0 / (ids + 1.0)) / math.log(range_max + 1.0)


def log_uniform_candidates(num_sampled, range_max, seed=None):
    """Draws ``num_sampled`` ids in ``[0, range_max)`` (with replacement).

    Each id ``k`` has probability ``log_uniform_probability(k, range_max)``
    (the inverse of its distribution function, as TensorFlow's
    ``log_uniform_candidate_sampler``). ``seed``: an int or a
    ``keras.random.SeedGenerator``.
    """
    u = keras.random.uniform((num_sampled,), seed=seed, dtype="float32")
    ids = ops.floor(ops.exp(u * math.log(range_max + 1.0))) - 1.0
    return ops.clip(ops.cast(ids, "int32"), 0, range_max - 1)


def sampled_softmax_logits(inputs, labels, kernel, bias, sampled,
                           remove_accidental_hits=True):
    """Logits of the true word (column 0) and of the sampled words.

    Args:
        inputs: float ``[..., dim]``, the hidden states.
        labels: int ``[...]``, the true word at each position.
        kernel: ``[dim, vocabulary_size]`` (a ``keras.layers.Dense`` kernel).
        bias: ``[vocabulary_size]`` or None.
        sampled: int ``[num_sampled]`` from ``log_uniform_candidates``.
        remove_accidental_hits: bool. A sampled word equal to the position's
            true word gets a logit of -1e30 (it is not a negative there).

    Returns:
        float32 ``[..., 1 + num_sampled]``: ``x·w + b - log(expected count)``
        for the true word then each sample; the sampled softmax loss is the
        cross-entropy of these logits with target 0 at every position.
    """
    vocabulary_size = kernel.shape[-1]
    num_sampled = sampled.shape[0]
    kernel = ops.cast(kernel, "float32")
    labels = ops.convert_to_tensor(labels)
    sampled = ops.convert_to_tensor(sampled)
    lead_shape = ops.shape(labels)
    dim = ops.shape(inputs)[-1]
    x = ops.reshape(ops.cast(inputs, "float32"), (-1, dim))
    labels = ops.reshape(ops.cast(labels, "int32"), (-1,))
    sampled = ops.cast(sampled, "int32")

    true_logits = ops.sum(x * ops.transpose(ops.take(kernel, labels, axis=1)), axis=-1)
    sampled_logits = ops.matmul(x, ops.take(kernel, sampled, axis=1))
    if bias is not None:
        bias = ops.cast(bias, "float32")
        true_logits = true_logits + ops.take(bias, labels)
        sampled_logits = sampled_logits + ops.take(bias, sampled)[None, :]
    log_count = lambda ids: ops.log(  # noqa: E731
        num_sampled * log_uniform_probability(ids, vocabulary_size))
    true_logits = true_logits - log_count(labels)
    sampled_logits = sampled_logits - log_count(sampled)[None, :]
    if remove_accidental_hits:
        hits = ops.equal(labels[:, None], sampled[None, :])
        sampled_logits = ops.where(hits, -1e30, sampled_logits)
    logits = ops.concatenate([true_logits[:, None], sampled_logits], axis=-1)
    return ops.reshape(logits, tuple(lead_shape) + (1 + num_sampled,))
