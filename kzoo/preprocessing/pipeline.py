"""The last stage of every kzoo input pipeline (`tf.data`)."""

import tensorflow as tf


def prefetched(dataset):
    """`dataset.prefetch(AUTOTUNE)`, with tf.data's model-based autotuning off.

    With autotuning on, deleting an iterator waits for the autotuning
    thread's current sleep, whose period doubles as the iterator runs
    (10 ms, 20 ms, ... 2.56 s, 5.12 s); Keras deletes its iterator at the
    end of every epoch and of every `evaluate` / `predict` call. Measured
    here (TensorFlow 2.21, 2 cores): word2vec epochs of 3.4-3.9 s on
    PyTorch ended only at 5.2 s from their start, and 1.8 s epochs on JAX
    at 2.6 s, in about a third of the epochs; an iterator consumed for
    1.6 s took 1.1 s to delete. Without the autotuning model the
    `AUTOTUNE` stages keep tf.data's fixed defaults; the word2vec pipeline
    alone ran faster that way (0.47 s vs 0.55-0.75 s per pass over
    bench/word2vec.py's corpus). This applies to the whole pipeline,
    a `tf.data.Dataset` given to a task included.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(options)
