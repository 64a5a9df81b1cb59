"""BERT's next sentence prediction pairs."""

import numpy as np

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.preprocessing_layer import RandomPreprocessingLayer
from kzoo.preprocessing.preprocessing_layer import check_type


def _rank(value):
    if isinstance(value, (list, tuple)):
        return 1 + max((_rank(v) for v in value), default=0)
    return np.ndim(value) if not isinstance(value, str) else 0


def _python_rank(inputs):
    """The rank of a Python-engine input (``[]``: no documents, rank 2)."""
    if isinstance(inputs, (list, tuple, np.ndarray)) and len(inputs) == 0:
        return 2
    return _rank(inputs)


@kzoo_export("kzoo.preprocessing.NextSentencePairs")
class NextSentencePairs(RandomPreprocessingLayer):
    """Makes next-sentence-prediction pairs from a batch of documents (BERT).

    Every sentence of a document except its last becomes a `segment_a`. With
    probability `1 - random_next_rate` its `segment_b` is the sentence that
    follows it (label 0: "B continues A", Hugging Face's convention), else a
    sentence drawn uniformly from all the sentences of the *other* documents
    of the batch (label 1). Pairs come out in document and sentence order.

    When no other document of the batch has a sentence (a batch with a single
    non-empty document), a random `segment_b` is impossible: those pairs fall
    back to the true next sentence with label 0, eagerly and in `tf.data`
    alike. Batch several documents (`drop_remainder=True` avoids a lone last
    document) to keep the label rate at `random_next_rate`.

    Args:
        random_next_rate: float in [0, 1]. Probability that `segment_b` is a
            random sentence. Defaults to 0.5.
        seed: int or None. Seed of the layer's random stream.

    Call arguments:
        inputs: a batch of documents, each a list of sentences: a ragged
            `[num_documents, None]` string tensor, or a list of lists of str.

    Returns:
        A dict with `segment_a` and `segment_b` (1-D string tensors, lists of
        str when called eagerly) and `next_sentence_label` (int32), one entry
        per pair.

    The TensorFlow implementation draws from the layer's
    `tf.random.Generator`; the Python one (numpy over the batch's sentences,
    see `kzoo.preprocessing.engine`) applies the same rules with draws from
    `python_generator`: the same distributions, not the same draws.

    Example:
    >>> nsp = kzoo.preprocessing.NextSentencePairs(random_next_rate=0.0)
    >>> out = nsp([["a1", "a2", "a3"], ["b1", "b2"]])
    >>> out["segment_a"], out["segment_b"]
    (['a1', 'a2', 'b1'], ['a2', 'a3', 'b2'])
    >>> ops.convert_to_numpy(out["next_sentence_label"]).tolist()
    [0, 0, 0]

    In `tf.data`, batch documents, make pairs, and unbatch the pairs:
    >>> import tensorflow as tf
    >>> docs = tf.ragged.constant([["a1", "a2"], ["b1"], ["c1", "c2", "c3"]])
    >>> nsp = kzoo.preprocessing.NextSentencePairs(random_next_rate=1.0, seed=1)
    >>> ds = tf.data.Dataset.from_tensor_slices(docs).batch(3).map(nsp).unbatch()
    >>> [(x["segment_a"].numpy().decode(), int(x["next_sentence_label"]))
    ...  for x in ds]
    [('a1', 1), ('c1', 1), ('c2', 1)]

    Reference:
        - [Devlin et al., 2018](https://arxiv.org/abs/1810.04805), section 3.1.
    """

    input_dtype = "string"

    def __init__(self, random_next_rate=0.5, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        check_type("random_next_rate", random_next_rate, (int, float),
                   "a float in [0, 1]")
        if not 0.0 <= random_next_rate <= 1.0:
            raise ValueError(
                f"`random_next_rate` must be in [0, 1], got {random_next_rate}.")
        self.random_next_rate = random_next_rate

    def call(self, inputs):
        if inputs.shape.rank == 1 and inputs.shape[0] == 0:  # `[]`: no documents
            inputs = tf.zeros([0, 0], tf.string)
        if inputs.shape.rank != 2:
            raise ValueError(
                "`inputs` must be a batch of documents, each a list of "
                f"sentences (rank 2), got rank {inputs.shape.rank}: wrap a "
                "single document in a list, and batch several for random pairs.")
        if inputs.dtype != tf.string:
            raise TypeError(f"`inputs` must be strings, got {inputs.dtype}.")
        docs = inputs
        if not isinstance(docs, tf.RaggedTensor):
            docs = tf.RaggedTensor.from_tensor(docs)
        docs = docs.with_row_splits_dtype(tf.int64)
        sentences = docs.flat_values
        doc_of = docs.value_rowids()
        starts = tf.gather(docs.row_starts(), doc_of)
        lengths = tf.gather(docs.row_lengths(), doc_of)
        index = tf.range(tf.size(sentences, out_type=tf.int64))
        a_index = tf.boolean_mask(index, index - starts < lengths - 1)
        starts = tf.gather(starts, a_index)  # now per pair
        lengths = tf.gather(lengths, a_index)

        num_pairs = tf.shape(a_index)
        coin = self.generator.uniform(num_pairs)
        pick = self.generator.uniform(num_pairs, dtype=tf.float64)
        # A uniform index into the other documents' sentences, skipping A's.
        num_others = tf.size(sentences, out_type=tf.int64) - lengths
        r = tf.cast(tf.floor(pick * tf.cast(num_others, tf.float64)), tf.int64)
        r = tf.minimum(r, tf.maximum(num_others - 1, 0))
        random_index = tf.where(r < starts, r, r + lengths)
        is_random = tf.logical_and(coin < self.random_next_rate, num_others > 0)
        b_index = tf.where(is_random, random_index, a_index + 1)
        return {
            "segment_a": tf.gather(sentences, a_index),
            "segment_b": tf.gather(sentences, b_index),
            "next_sentence_label": tf.cast(is_random, tf.int32),
        }

    def python_call(self, inputs):
        rank = _python_rank(inputs)
        if rank != 2:
            raise ValueError(
                "`inputs` must be a batch of documents, each a list of "
                f"sentences (rank 2), got rank {rank}: wrap a "
                "single document in a list, and batch several for random pairs.")
        for doc in inputs:
            for sentence in doc:
                if not isinstance(sentence, str):
                    dtype = getattr(sentence, "dtype", type(sentence).__name__)
                    raise TypeError(f"`inputs` must be strings, got {dtype}.")
        sentences = [sentence for doc in inputs for sentence in doc]
        doc_lengths = np.array([len(doc) for doc in inputs], np.int64)
        doc_starts = np.cumsum(doc_lengths) - doc_lengths
        doc_of = np.repeat(np.arange(len(inputs)), doc_lengths)
        starts, lengths = doc_starts[doc_of], doc_lengths[doc_of]
        index = np.arange(len(sentences))
        a_index = index[index - starts < lengths - 1]
        starts, lengths = starts[a_index], lengths[a_index]  # now per pair

        rng = self.python_generator
        coin = rng.random(len(a_index), dtype=np.float32)
        pick = rng.random(len(a_index))
        # A uniform index into the other documents' sentences, skipping A's.
        num_others = len(sentences) - lengths
        r = np.floor(pick * num_others).astype(np.int64)
        r = np.minimum(r, np.maximum(num_others - 1, 0))
        random_index = np.where(r < starts, r, r + lengths)
        is_random = (coin < self.random_next_rate) & (num_others > 0)
        b_index = np.where(is_random, random_index, a_index + 1)
        return {
            "segment_a": [sentences[i] for i in a_index.tolist()],
            "segment_b": [sentences[i] for i in b_index.tolist()],
            "next_sentence_label": is_random.astype(np.int32),
        }

    def get_config(self):
        config = super().get_config()
        config.update({"random_next_rate": self.random_next_rate})
        return config
