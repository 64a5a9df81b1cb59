"""Top-k sampling: draw among the k most likely tokens."""

from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.samplers.random_sampler import RandomSampler


@kzoo_export("kzoo.samplers.TopKSampler")
class TopKSampler(RandomSampler):
    """Samples among the ``k`` most likely tokens (renormalised).

    Tokens tied with the k-th largest logit stay in, as in Hugging Face's
    ``TopKLogitsWarper``; ``k`` larger than the vocabulary keeps them all.

    Args:
        k: int >= 1.
        temperature: float > 0, applied before the cut.
        seed: int or None.

    Example:
    >>> sampler = kzoo.samplers.TopKSampler(k=2)
    >>> logits = np.array([[1.0, 3.0, 2.0, 0.0]], "float32")
    >>> ops.convert_to_numpy(sampler.filter_logits(logits)).tolist()
    [[-inf, 3.0, 2.0, -inf]]
    """

    def __init__(self, k=50, temperature=1.0, seed=None):
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"`k` must be an int >= 1 (top-k sampling keeps the "
                             f"k most likely tokens), got {k!r}.")
        super().__init__(temperature=temperature, seed=seed)
        self.k = k

    def filter_logits(self, logits):
        logits = ops.convert_to_tensor(logits)
        k = min(self.k, logits.shape[-1])
        kth = ops.top_k(logits, k)[0][:, -1:]
        return ops.where(logits >= kth, logits, ops.cast(float("-inf"), logits.dtype))

    def get_config(self):
        return {**super().get_config(), "k": self.k}
