"""word2vec skip-gram with negative sampling."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.models.word2vec.word2vec_task import Word2VecTask


@kzoo_export("kzoo.models.Word2VecSkipGram")
class Word2VecSkipGram(Word2VecTask):
    """Skip-gram: each word's input vector predicts the words around it.

    For a pair `(center, context)` with negatives `n_1..n_k` the model
    scores `s = v_in(center) . v_out(w)` for `w = context, n_1, ..., n_k`,
    and `NegativeSamplingLoss` pushes the first score up and the others
    down (Mikolov et al., 2013). `fit` takes a corpus; the word vectors are
    `model.wv` (a `WordVectors`).

    Args:
        backbone: a `Word2VecBackbone`.
        preprocessor: a `Word2VecPreprocessor` with `output_mode="pairs"`,
            or None (then `fit` takes sampled `(x, y)` batches).
        **kwargs: `keras.Model` arguments.

    Call arguments:
        inputs: a dict with `center` (int `[batch]`), `context` (int
            `[batch]`) and `negatives` (int `[batch, negative]`).

    Returns:
        Scores (logits) `[batch, 1 + negative]`, the context word's first.

    Example:
    >>> corpus = ["the cat sat on the mat", "the dog sat on the log"] * 20
    >>> model = kzoo.models.Word2VecSkipGram.from_corpus(
    ...     corpus, hidden_dim=8, min_count=1, window=2, negative=2, seed=1)
    >>> history = model.fit(corpus, epochs=2, batch_size=64, verbose=0)
    >>> model.wv.vector_size, len(model.wv)
    (8, 7)

    Reference:
        - [Mikolov et al., 2013](https://arxiv.org/abs/1310.4546)
    """

    output_mode = "pairs"

    def __init__(self, backbone, preprocessor=None, **kwargs):
        self.backbone = backbone
        self.preprocessor = preprocessor
        center = keras.Input(shape=(), dtype="int32", name="center")
        context = keras.Input(shape=(), dtype="int32", name="context")
        negatives = keras.Input(shape=(None,), dtype="int32", name="negatives")
        targets = ops.concatenate([ops.expand_dims(context, -1), negatives], axis=-1)
        outputs = backbone({"token_ids": ops.expand_dims(center, -1),
                            "target_ids": targets})
        # [batch, 1, dim] x [batch, 1 + negative, dim] -> [batch, 1 + negative]
        logits = ops.einsum("bnd,bkd->bk", outputs["sequence_output"],
                            outputs["target_output"])
        super().__init__(
            inputs={"center": center, "context": context, "negatives": negatives},
            outputs=logits, **kwargs)
        self.compile()

    def _row_updates(self, x, labels, rate, token_table, context_table):
        center = x["center"]
        targets = ops.concatenate(
            [ops.expand_dims(x["context"], -1), x["negatives"]], axis=-1)
        hidden = ops.take(token_table, center, axis=0)
        loss, hidden_update, target_update = self._score_updates(
            hidden, targets, labels, rate, context_table)
        return loss, [(0, center, hidden_update), target_update]
