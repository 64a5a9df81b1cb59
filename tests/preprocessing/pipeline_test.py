import keras
import numpy as np
import pytest
import tensorflow as tf

import kzoo
from kzoo.preprocessing.pipeline import Passes
from kzoo.preprocessing.pipeline import prefetched
from kzoo.testing.test_case import to_numpy


def test_prefetched_keeps_elements_and_turns_autotuning_off():
    ds = tf.data.Dataset.range(10).map(lambda x: x * 2,
                                       num_parallel_calls=tf.data.AUTOTUNE)
    out = prefetched(ds)
    assert [int(x) for x in out] == [2 * i for i in range(10)]
    assert out.options().autotune.enabled is False


def test_word2vec_pipeline_runs_without_autotuning():
    corpus = ["the cat sat on the mat", "the dog sat on the log"] * 5
    pre = kzoo.models.Word2VecPreprocessor.from_corpus(
        corpus, min_count=1, window=2, negative=2, seed=1)
    ds = pre.dataset(corpus, 16)
    assert ds.options().autotune.enabled is False
    assert sum(int(tf.shape(y)[0]) for _, y in ds) > 0


def test_passes_hand_out_each_pass_and_its_end_values():
    counter = tf.Variable(0, dtype=tf.int64)

    def count(x):
        counter.assign_add(1)
        return x, -x

    ds = tf.data.Dataset.range(5).map(count).batch(2)  # 3 batches a pass
    passes = Passes(ds, 3, end_value=counter.read_value)
    first = list(passes.next_pass())
    assert [a.tolist() for a, _ in first] == [[0, 1], [2, 3], [4]]
    assert [b.tolist() for _, b in first] == [[0, -1], [-2, -3], [-4]]
    assert passes.pass_ended and passes.end_values == [0, 5]
    # A pass Keras stops early is skipped to its end before the next one.
    second = passes.next_pass()
    assert next(second)[0].tolist() == [0, 1]
    assert not passes.pass_ended
    third = [a.tolist() for a, _ in passes.next_pass()]
    assert third == [[0, 1], [2, 3], [4]]
    assert passes.end_values == [0, 5, 10, 15]
    with pytest.raises(ValueError, match="All 3 passes"):
        passes.next_pass()
    nothing = tf.data.Dataset.range(5).filter(lambda x: x < 0).batch(2)
    empty = Passes(nothing, 1, empty_error="no batch")
    with pytest.raises(ValueError, match="no batch"):
        empty.next_pass()


@pytest.mark.filterwarnings("ignore:Your input ran out")
def test_passes_keras_input_trains_one_pass_per_fit():
    xs = np.arange(12, dtype="float32").reshape(6, 2)
    ds = tf.data.Dataset.from_tensor_slices((xs, xs[:, :1])).batch(4)
    passes = Passes(ds, 2)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    steps = []
    count = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: steps.append(batch))
    for epoch in range(2):
        data = passes.keras_input()
        if keras.backend.backend() == "tensorflow":
            assert isinstance(data, tf.data.Dataset)
            assert data.options().autotune.enabled is False
        model.fit(data, epochs=epoch + 1, initial_epoch=epoch, verbose=0,
                  shuffle=False, callbacks=[count])
        assert passes.pass_ended
    assert steps == [0, 1, 0, 1]  # two batches in each epoch
