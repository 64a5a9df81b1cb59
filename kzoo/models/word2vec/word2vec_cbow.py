"""word2vec continuous bag of words (CBOW) with negative sampling."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.models.word2vec.word2vec_task import Word2VecTask


@kzoo_export("kzoo.models.Word2VecCBOW")
class Word2VecCBOW(Word2VecTask):
    """CBOW: the mean input vector of a window predicts the word in its middle.

    For a center word with context words `c_1..c_m` (its shrunk window) and
    negatives `n_1..n_k`, `h = mean(v_in(c_i))` scores `s = h . v_out(w)` for
    `w = center, n_1, ..., n_k` (gensim's `cbow_mean=1`), trained with
    `NegativeSamplingLoss`. As in word2vec.c and gensim, each context word's
    vector receives the whole error of `h` (not the `1/m` share that the
    mean's gradient would give it). `fit` takes a corpus; the vectors are `model.wv`.
    The default learning rate is gensim's 0.025 (word2vec.c uses 0.05 for
    CBOW: `model.compile(alpha=0.05)`).

    Args:
        backbone: a `Word2VecBackbone`.
        preprocessor: a `Word2VecPreprocessor` with `output_mode="windows"`,
            or None.
        **kwargs: `keras.Model` arguments.

    Call arguments:
        inputs: a dict with `center` (int `[batch]`), `context` (int
            `[batch, 2 * window]`), `context_mask` (bool `[batch, 2 *
            window]`) and `negatives` (int `[batch, negative]`).

    Returns:
        Scores (logits) `[batch, 1 + negative]`, the center word's first.

    Example:
    >>> corpus = ["the cat sat on the mat", "the dog sat on the log"] * 20
    >>> model = kzoo.models.Word2VecCBOW.from_corpus(
    ...     corpus, hidden_dim=8, min_count=1, window=2, negative=2, seed=1)
    >>> history = model.fit(corpus, epochs=2, batch_size=64, verbose=0)
    >>> model.wv.most_similar("cat", topn=1)[0][0] in model.wv
    True

    Reference:
        - [Mikolov et al., 2013](https://arxiv.org/abs/1301.3781)
    """

    output_mode = "windows"

    def __init__(self, backbone, preprocessor=None, **kwargs):
        self.backbone = backbone
        self.preprocessor = preprocessor
        center = keras.Input(shape=(), dtype="int32", name="center")
        context = keras.Input(shape=(None,), dtype="int32", name="context")
        context_mask = keras.Input(shape=(None,), dtype="bool", name="context_mask")
        negatives = keras.Input(shape=(None,), dtype="int32", name="negatives")
        targets = ops.concatenate([ops.expand_dims(center, -1), negatives], axis=-1)
        outputs = backbone({"token_ids": context, "target_ids": targets})
        mask = ops.cast(context_mask, outputs["sequence_output"].dtype)
        count = ops.maximum(ops.sum(mask, axis=-1, keepdims=True), 1.0)
        total = ops.einsum("bn,bnd->bd", mask, outputs["sequence_output"])
        # The mean of the window's input vectors, whose gradient reaches
        # every context word whole (not divided by the count), as
        # word2vec.c's and gensim's CBOW update: value total / count,
        # derivative 1 with respect to total.
        hidden = total / count + (total - ops.stop_gradient(total)) * (1.0 - 1.0 / count)
        logits = ops.einsum("bd,bkd->bk", hidden, outputs["target_output"])
        super().__init__(
            inputs={"center": center, "context": context,
                    "context_mask": context_mask, "negatives": negatives},
            outputs=logits, **kwargs)
        self.compile()

    def _row_updates(self, x, labels, rate, token_table, context_table):
        context = x["context"]
        vectors = ops.take(token_table, context, axis=0)  # [m, window, dim]
        mask = ops.cast(x["context_mask"], vectors.dtype)
        count = ops.maximum(ops.sum(mask, axis=-1, keepdims=True), 1.0)
        hidden = ops.einsum("mw,mwd->md", mask, vectors) / count
        targets = ops.concatenate(
            [ops.expand_dims(x["center"], -1), x["negatives"]], axis=-1)
        loss, hidden_update, target_update = self._score_updates(
            hidden, targets, labels, rate, context_table)
        # Every context word gets the whole update of the mean (see
        # __init__); masked slots get zeros.
        context_update = mask[:, :, None] * hidden_update[:, None, :]
        return loss, [(0, ops.reshape(context, (-1,)),
                       ops.reshape(context_update, (-1, vectors.shape[-1]))),
                      target_update]
