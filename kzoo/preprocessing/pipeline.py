"""The last stage of every kzoo input pipeline (`tf.data`).

The Python preprocessing engine's counterparts, without TensorFlow, are in
`kzoo.preprocessing.python_pipeline` (`PythonPasses`) and
`kzoo.preprocessing.batches`.
"""

from kzoo.preprocessing.engine import tf
from kzoo.preprocessing.python_pipeline import PassReader


def prefetched(dataset, buffer=-1):
    """`dataset.prefetch(buffer)` (`AUTOTUNE`, -1, by default), with tf.data's
    model-based autotuning off.

    With autotuning on, deleting an iterator waits for the autotuning
    thread's current sleep, whose period doubles as the iterator runs
    (10 ms, 20 ms, ... 2.56 s, 5.12 s); Keras deletes its iterator at the
    end of every epoch and of every `evaluate` / `predict` call, so a
    short epoch can end seconds after its last step. Without the
    autotuning model the `AUTOTUNE` stages keep tf.data's fixed defaults,
    with which the word2vec pipeline alone also runs faster over
    bench/word2vec.py's corpus. This applies to the whole pipeline,
    a `tf.data.Dataset` given to a task included.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.prefetch(buffer).with_options(options)


class Passes(PassReader):
    """Several passes over a dataset through one iterator, one pass per epoch.

    Keras' `fit` makes a new iterator over its dataset at every epoch: the
    pipeline's functions are instantiated again and the epoch's first step waits for its first batch while the
    cores idle. Here the passes run back to back in one prefetching
    iterator (`dataset`, then an end marker, repeated `passes` times), so
    the next pass starts filling the buffer while the current one's last
    steps train; `keras_input()` hands Keras the batches of one pass at a
    time (a generator on JAX and PyTorch, a `tf.data.Dataset` reading it on
    TensorFlow). The first step of every epoch after the first then
    starts almost at once, and short epochs (word2vec's) get shorter.

    Args:
        dataset: a `tf.data.Dataset` of batches (any structure).
        passes: int. Passes over `dataset`.
        end_value: None or a function of no arguments returning an int64
            scalar tensor, evaluated in the pipeline at the end of each pass
            (after the pass's last element, before the next pass starts):
            its values are `end_values` (the first read when the passes
            start). word2vec reads its count of words tokenized there.
        buffer: int. Batches read ahead.
        empty_error: str. The message of the `ValueError` that `next_pass`
            raises for a pass without batches (Keras would only say that
            its generator was empty).
    """

    def __init__(self, dataset, passes, end_value=None, buffer=4,
                 empty_error="A pass over the dataset gave no batches."):
        self.element_spec = dataset.element_spec
        self.passes = passes
        self.empty_error = empty_error
        read = end_value or (lambda: tf.constant(0, tf.int64))
        single = not isinstance(self.element_spec, tuple)

        def tag(*batch):
            # -1: a batch; a marker carries the non-negative end value.
            return batch[0] if single else batch, tf.constant(-1, tf.int64)

        def empty(spec):
            return tf.zeros([0] + [d or 0 for d in spec.shape[1:]], spec.dtype)

        def marker(_):
            value = tf.maximum(tf.cast(read(), tf.int64), 0)
            return tf.nest.map_structure(empty, self.element_spec), value

        end = tf.data.Dataset.range(1).map(marker)
        stream = prefetched(dataset.map(tag).concatenate(end).repeat(passes),
                            buffer)
        self.end_values = [int(read())]
        self._handed = 0  # passes handed to Keras
        self._ended = 0  # end markers read
        self._iterator = iter(stream)  # starts reading ahead

    def _next(self):
        """The next batch (numpy), or None at the end of a pass."""
        batch, value = next(self._iterator)
        if int(value) >= 0:
            self._ended += 1
            self.end_values.append(int(value))
            return None
        return tf.nest.map_structure(lambda t: t.numpy(), batch)

    def keras_input(self):
        """The next pass in a form `keras.Model.fit` reads: the generator on
        JAX and PyTorch; on TensorFlow, whose trainer reads a dataset, a
        `tf.data.Dataset` over it (Keras' own wrapping of a generator would
        add a prefetch with tf.data's autotuning on: see `prefetched`)."""
        import keras

        generator = self.next_pass()
        if keras.backend.backend() != "tensorflow":
            return generator
        return prefetched(tf.data.Dataset.from_generator(
            lambda: generator, output_signature=self.element_spec))
