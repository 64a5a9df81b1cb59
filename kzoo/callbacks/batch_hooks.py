"""Whether a callback's per-batch hooks should run beside the training steps."""

import keras


def overlap_batch_hooks():
    """Whether a callback with thread-safe per-batch hooks should let Keras
    run them on its worker threads (set `async_safe` to this).

    On JAX, Keras dispatches a training step before the one before it has
    finished: a hook run on the training thread waits for that step, so
    each step waits for the last, a large part of a short step's time
    (word2vec's, bench/word2vec.py). TensorFlow and PyTorch run their steps
    synchronously: there is nothing to overlap, and the hooks stay on the
    training thread.
    """
    return keras.backend.backend() == "jax"
