"""word2vec's negative-sampling loss."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export


@kzoo_export("kzoo.models.NegativeSamplingLoss")
class NegativeSamplingLoss(keras.losses.Loss):
    """Per example: `-log sigmoid(s_pos) - sum_k log sigmoid(-s_neg_k)`.

    The objective of word2vec with negative sampling (Mikolov et al., 2013,
    eq. 4), summed over an example's targets. `y_true` holds one label per
    target score: 1 for the true word, 0 for a negative sample and -1 for a
    term to leave out (a negative sample that drew the true word, which
    word2vec.c skips). With the default reduction the reported loss is the
    mean over the examples (pairs), so an epoch's loss is comparable
    across batch sizes and corpora.

    Example:
    >>> loss = kzoo.models.NegativeSamplingLoss()
    >>> y = np.array([[1.0, 0.0, -1.0]])
    >>> round(float(loss(y, np.zeros((1, 3)))), 4)  # 2 * log(2)
    1.3863
    """

    def __init__(self, name="negative_sampling_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        y_pred = ops.convert_to_tensor(y_pred)
        y_true = ops.cast(y_true, y_pred.dtype)
        valid = ops.cast(y_true >= 0, y_pred.dtype)
        labels = ops.maximum(y_true, 0.0)
        # softplus(-s) for a label of 1, softplus(s) for 0: -log sigmoid(+-s).
        terms = ops.softplus(y_pred * (1.0 - 2.0 * labels))
        return ops.sum(terms * valid, axis=-1)
