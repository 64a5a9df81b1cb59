import tensorflow as tf

import kzoo
from kzoo.preprocessing.pipeline import prefetched


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
