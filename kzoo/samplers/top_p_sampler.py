"""Nucleus (top-p) sampling: draw among the most likely tokens covering p."""

from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.samplers.random_sampler import RandomSampler


@kzoo_export("kzoo.samplers.TopPSampler")
class TopPSampler(RandomSampler):
    """Samples from the smallest set of most likely tokens whose probability
    reaches ``p`` (renormalised), as Holtzman et al.'s nucleus sampling.

    The most likely token is always kept; tokens tied with the last one kept
    stay in.

    Args:
        p: float in (0, 1].
        temperature: float > 0, applied before the cut.
        seed: int or None.

    Example:
    >>> sampler = kzoo.samplers.TopPSampler(p=0.7)
    >>> logits = np.log(np.array([[0.1, 0.5, 0.3, 0.1]], "float32"))
    >>> np.isfinite(ops.convert_to_numpy(sampler.filter_logits(logits))).tolist()
    [[False, True, True, False]]

    Reference:
        Holtzman et al., 2020, "The Curious Case of Neural Text Degeneration".
    """

    def __init__(self, p=0.9, temperature=1.0, seed=None):
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1:
            raise ValueError(f"`p` must be in (0, 1] (the probability mass to "
                             f"sample from), got {p!r}.")
        super().__init__(temperature=temperature, seed=seed)
        self.p = float(p)

    def filter_logits(self, logits):
        logits = ops.convert_to_tensor(logits)
        sorted_logits = ops.top_k(logits, logits.shape[-1])[0]
        probabilities = ops.softmax(sorted_logits, axis=-1)
        before = ops.cumsum(probabilities, axis=-1) - probabilities
        kept = ops.where(before < self.p, sorted_logits,
                         ops.cast(float("inf"), logits.dtype))
        threshold = ops.min(kept, axis=-1, keepdims=True)
        return ops.where(logits >= threshold, logits,
                         ops.cast(float("-inf"), logits.dtype))

    def get_config(self):
        return {**super().get_config(), "p": self.p}
