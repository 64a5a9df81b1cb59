"""Documents → BERT pretraining batches (masked LM + next sentence pairs)."""

import numpy as np

from kzoo.api_export import kzoo_export
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.masked_lm_preprocessor import MaskedLMPreprocessor
from kzoo.preprocessing.next_sentence_pairs import NextSentencePairs, _python_rank
from kzoo.preprocessing.batches import RawBatches
from kzoo.preprocessing.engine import engine, is_tensorflow_value, tf
from kzoo.preprocessing.pipeline import prefetched
from kzoo.preprocessing.preprocessing_layer import check_type, numpy_outputs, to_tf


def _is_documents_spec(spec):
    """True for a (ragged) string spec of rank 1 (one document) or 2."""
    return (
        isinstance(spec, (tf.TensorSpec, tf.RaggedTensorSpec))
        and spec.dtype == tf.string
        and spec.shape.rank in (1, 2)
    )


def _python_text(value):
    """Whether a Python-engine value is text (a str or a list of them)."""
    if isinstance(value, str):
        return True
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


@kzoo_export("kzoo.models.BertPretrainerPreprocessor")
class BertPretrainerPreprocessor(MaskedLMPreprocessor):
    """BERT's pretraining data: sentence pairs, packed and masked.

    From a batch of documents (each a list of sentences), the shared
    ``NextSentencePairs`` makes one pair per sentence but a document's last:
    the sentence and, with probability ``1 - random_next_rate``, the one that
    follows it (label 0), else a random sentence of another document of the
    batch (label 1). Each pair is packed as ``[CLS] a [SEP] b [SEP]`` (the
    longer sentence is trimmed first to fit ``sequence_length``) and masked
    as in ``BertMaskedLMPreprocessor``.

    One batch of documents gives as many pairs as it has sentences, less one
    per document. ``dataset_from_documents`` builds the usual training
    pipeline: batches of documents → pairs → shuffled → batches of
    ``batch_size`` pairs → packed and masked.

    Args:
        tokenizer: a ``BertTokenizer``.
        sequence_length: int. Length of the packed pairs. Defaults to 128.
        truncate, mask_selection_rate, mask_selection_length, mask_token_rate, random_token_rate:
            the packing and masking arguments of ``MaskedLMPreprocessor``
            (same defaults: 15% of the tokens, 80% ``[MASK]``, 10% random,
            10% kept).
        random_next_rate: float. Share of the pairs whose second sentence is
            random. Defaults to 0.5.
        seed: int or None. Seeds the pairing and the masking.
        **kwargs: ``whole_word_masking`` (``MaskedLMPreprocessor``'s: all the
            pieces of a chosen word masked together) and
            ``keras.layers.Layer`` arguments (``name``, ...).

    Call arguments:
        x: a batch of documents (a ragged ``[num_documents, None]`` string
            tensor or a list of lists of str), or a tuple ``(segment_a,
            segment_b)`` of string batches (pairs already made).
        y: None with documents; the next-sentence labels (0 = ``b`` follows
            ``a``, 1 = random) with pairs.
        sample_weight: must be None.

    Returns:
        ``(x, y, sample_weight)``: ``x`` as ``BertMaskedLMPreprocessor``
        gives (one row per pair), ``y`` a dict ``{"mlm_logits": mask_ids,
        "nsp_logits": next_sentence_label}`` and ``sample_weight`` a dict
        ``{"mlm_logits": mask_weights, "nsp_logits": ones}``, keyed by the
        outputs of ``BertPretrainer``.

    ``call`` runs TensorFlow ops, or without TensorFlow ``python_call``
    (see ``kzoo.preprocessing.engine``), where a tuple is a pair of
    segment batches and a list a batch of documents.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d"]
    >>> pre = kzoo.models.BertPretrainerPreprocessor(
    ...     kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=6,
    ...     random_next_rate=0.0, mask_selection_rate=0.0, seed=1)
    >>> x, y, w = pre([["a", "b", "c"], ["d", "a"]])
    >>> ops.convert_to_numpy(x["token_ids"]).tolist()
    [[2, 5, 3, 6, 3, 0], [2, 6, 3, 7, 3, 0], [2, 8, 3, 5, 3, 0]]
    >>> ops.convert_to_numpy(x["segment_ids"]).tolist()[0]
    [0, 0, 0, 1, 1, 0]
    >>> ops.convert_to_numpy(y["nsp_logits"]).tolist()
    [0, 0, 0]

    Reference:
        Devlin et al., 2019, "BERT: Pre-training of Deep Bidirectional
        Transformers for Language Understanding" (arXiv:1810.04805), 3.1.
    """

    backbone_cls = BertBackbone
    tokenizer_cls = BertTokenizer
    start_token = "[CLS]"
    sep_token = "[SEP]"
    end_token = "[SEP]"
    mask_token = "[MASK]"

    def __init__(
        self,
        tokenizer=None,
        sequence_length=128,
        truncate="round_robin",
        mask_selection_rate=0.15,
        mask_selection_length=None,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        random_next_rate=0.5,
        seed=None,
        **kwargs,
    ):
        super().__init__(
            tokenizer=tokenizer,
            sequence_length=sequence_length,
            truncate=truncate,
            mask_selection_rate=mask_selection_rate,
            mask_selection_length=mask_selection_length,
            mask_token_rate=mask_token_rate,
            random_token_rate=random_token_rate,
            seed=seed,
            **kwargs,
        )
        self.random_next_rate = random_next_rate
        # A stream of its own (another key), independent of the masking's.
        self.next_sentence_pairs = NextSentencePairs(
            random_next_rate=random_next_rate,
            seed=None if seed is None else seed + 1,
        )

    def reset_seed(self, seed=None):
        """Restarts the pairing and masking streams."""
        super().reset_seed(seed)
        self.next_sentence_pairs.reset_seed(
            None if self.seed is None else self.seed + 1
        )

    def _check_call(self, pairs, num_segments, y, sample_weight):
        if sample_weight is not None:
            raise ValueError(
                f"{type(self).__name__} makes its own sample weights (the mask "
                "weights): pass `sample_weight=None`."
            )
        if pairs:
            if num_segments != 2:
                raise ValueError(
                    "Sentence pairs are a tuple `(segment_a, segment_b)`, got "
                    f"{num_segments} segments."
                )
            if y is None:
                raise ValueError(
                    "Sentence pairs need their next-sentence labels as `y` "
                    "(0: segment_b follows segment_a, 1: random); or pass "
                    "documents to have the pairs and labels made."
                )
        elif y is not None:
            raise ValueError(
                "With documents, the next-sentence labels are made here: "
                "pass `y=None`."
            )

    def _documents_error(self, dtype, rank):
        return ValueError(
            "`x` must be a batch of documents, each a list of sentences "
            "(a rank-2 string tensor or list of lists of str), or a "
            f"tuple of two string batches; got {dtype} of rank {rank}."
        )

    def call(self, x, y=None, sample_weight=None):
        pairs = isinstance(x, (tuple, list))
        self._check_call(pairs, len(x) if pairs else None, y, sample_weight)
        if pairs:
            segment_a, segment_b = x
            labels = tf.cast(y, tf.int32)
        else:
            if x.shape.rank == 1 and x.shape[0] == 0:  # `[]`: no documents
                x = tf.zeros([0, 0], tf.string)
            if x.dtype != tf.string or x.shape.rank != 2:
                raise self._documents_error(x.dtype.name, x.shape.rank)
            pairs = self.next_sentence_pairs(x)
            segment_a, segment_b = pairs["segment_a"], pairs["segment_b"]
            labels = pairs["next_sentence_label"]
        x, mask_ids, mask_weights = self._pack_and_mask(
            self._tokenize_segments((segment_a, segment_b))
        )
        y = {"mlm_logits": mask_ids, "nsp_logits": labels}
        sample_weight = {
            "mlm_logits": mask_weights,
            "nsp_logits": tf.ones_like(labels, tf.float32),
        }
        return x, y, sample_weight

    def python_call(self, x, y=None, sample_weight=None):
        pairs = isinstance(x, tuple)
        self._check_call(pairs, len(x) if pairs else None, y, sample_weight)
        if pairs:
            segment_a, segment_b = x
            labels = np.asarray(y).astype(np.int32)
        else:
            rank = _python_rank(x)
            if rank != 2:
                raise self._documents_error(
                    "string" if _python_text(x) else "numeric", rank)
            for doc in x:
                if not _python_text(doc):
                    raise self._documents_error(np.asarray(doc).dtype.name, rank)
            pairs = self.next_sentence_pairs(x)
            segment_a, segment_b = pairs["segment_a"], pairs["segment_b"]
            labels = pairs["next_sentence_label"]
        x, mask_ids, mask_weights = self._pack_and_mask(
            self._python_tokenize_segments((segment_a, segment_b))
        )
        y = {"mlm_logits": mask_ids, "nsp_logits": labels}
        sample_weight = {
            "mlm_logits": mask_weights,
            "nsp_logits": np.ones(labels.shape, np.float32),
        }
        return x, y, sample_weight

    def dataset_from_documents(self, documents, batch_size=32,
                               documents_per_batch=32, shuffle=True,
                               shuffle_buffer_size=4096):
        """A ``tf.data`` pipeline of pretraining batches from raw documents.

        Documents are grouped ``documents_per_batch`` at a time (random next
        sentences come from the other documents of the group), made into
        sentence pairs, optionally shuffled, batched ``batch_size`` pairs at
        a time and packed and masked by this preprocessor. Give the result
        to ``BertPretrainer.fit`` / ``evaluate``; ``.cache()`` it to keep
        the same pairs and masks in every pass (e.g. for a held-out set).

        Args:
            documents: a list of documents (each a list of str sentences), a
                ragged ``[num_documents, None]`` string tensor, or a
                ``tf.data.Dataset`` of documents (1-D string tensors) or of
                batches of documents (rank 2).
            batch_size: int. Pairs per training batch.
            documents_per_batch: int. Documents paired together.
            shuffle: bool. Shuffle the documents and the pairs (with the
                preprocessor's seed).
            shuffle_buffer_size: int. Buffer of the pair shuffle.

        Returns:
            A ``tf.data.Dataset`` of ``(x, y, sample_weight)`` batches. Its
            cardinality is set when ``documents`` is not a dataset; for a
            dataset, pass ``steps_per_epoch`` to ``fit`` or apply
            ``tf.data.experimental.assert_cardinality`` (Keras reports the
            per-output losses of TensorFlow training wrongly when the number
            of batches is unknown). On the Python engine (a list of
            documents, no TensorFlow) the pairs are made here and the result
            is a ``kzoo.preprocessing.batches.RawBatches`` of
            ``((segment_a, segment_b), next_sentence_label)``, which the
            pretrainer packs and masks as it trains.
        """
        check_type("batch_size", batch_size, int, "a positive int")
        check_type("documents_per_batch", documents_per_batch, int, "a positive int")
        if batch_size < 1 or documents_per_batch < 1:
            raise ValueError(
                "`batch_size` and `documents_per_batch` must be positive, got "
                f"{batch_size} and {documents_per_batch}."
            )
        if not is_tensorflow_value(documents) and engine() == "python":
            return self._python_pairs(documents, batch_size, documents_per_batch,
                                      shuffle)
        if isinstance(documents, tf.data.Dataset):
            ds = documents
            if not _is_documents_spec(ds.element_spec):
                raise ValueError(
                    "A dataset of documents must hold 1-D string tensors (one "
                    "document's sentences) or rank-2 batches of them, got "
                    f"{ds.element_spec}."
                )
            batched = ds.element_spec.shape.rank == 2
            num_batches = None
        else:
            documents = to_tf(documents, tf.string)
            if documents.shape.rank == 1 and documents.shape[0] == 0:
                documents = tf.ragged.constant([[]], dtype=tf.string)[:0]
            if documents.dtype != tf.string or documents.shape.rank != 2:
                raise ValueError(
                    "`documents` must be a list of documents, each a list of "
                    f"str sentences; got {documents.dtype.name} of rank "
                    f"{documents.shape.rank}."
                )
            ds = tf.data.Dataset.from_tensor_slices(documents)
            batched = False
            # Known here: one pair per sentence but the last of a document.
            # (Keras reports per-output losses wrongly on TF without it.)
            lengths = (documents.row_lengths() if isinstance(documents, tf.RaggedTensor)
                       else tf.fill(tf.shape(documents)[:1], tf.shape(documents)[1]))
            num_pairs = int(tf.reduce_sum(tf.maximum(lengths - 1, 0)))
            num_batches = -(-num_pairs // batch_size)
        if not batched:
            if shuffle:
                ds = ds.shuffle(shuffle_buffer_size, seed=self.seed)
            ds = ds.ragged_batch(documents_per_batch)
        ds = ds.map(self.next_sentence_pairs).unbatch()
        if shuffle:
            ds = ds.shuffle(shuffle_buffer_size, seed=self.seed)
        ds = ds.batch(batch_size)
        ds = ds.map(lambda p: self((p["segment_a"], p["segment_b"]),
                                   p["next_sentence_label"]))
        if num_batches is not None:
            ds = ds.apply(tf.data.experimental.assert_cardinality(num_batches))
        return prefetched(ds)

    def _python_pairs(self, documents, batch_size, documents_per_batch, shuffle):
        """``dataset_from_documents`` on the Python engine: every pair of the
        pass made now, in raw batches for the pretrainer to pack and mask."""
        if not isinstance(documents, (list, tuple)) or any(
                not isinstance(d, (list, tuple)) for d in documents):
            raise ValueError(
                "`documents` must be a list of documents, each a list of str "
                f"sentences; got {type(documents).__name__}.")
        rng = np.random.default_rng(self.seed)
        order = rng.permutation(len(documents)) if shuffle else range(len(documents))
        documents = [list(documents[i]) for i in order]
        first, second, labels = [], [], []
        with numpy_outputs():
            for start in range(0, len(documents), documents_per_batch):
                pairs = self.next_sentence_pairs(
                    documents[start:start + documents_per_batch])
                first += pairs["segment_a"]
                second += pairs["segment_b"]
                labels.append(np.asarray(pairs["next_sentence_label"]))
        labels = np.concatenate(labels) if labels else np.zeros([0], "int32")
        if shuffle:
            order = rng.permutation(len(labels))
            first = [first[i] for i in order]
            second = [second[i] for i in order]
            labels = labels[order]
        return RawBatches(((first, second), labels), batch_size)

    def get_config(self):
        config = super().get_config()
        config.update(random_next_rate=self.random_next_rate)
        return config
