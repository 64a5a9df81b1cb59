"""Sampling from the model's distribution (with a temperature)."""

from keras import ops

from kzoo.api_export import kzoo_export
from kzoo.samplers.sampler import Sampler


def inverse_transform_sample(logits, noise):
    """Draws one token per row from ``softmax(logits)`` with uniform ``noise``.

    Token ``i`` is chosen when ``noise * total`` falls in ``(cdf[i-1],
    cdf[i]]``, so it has probability ``p[i]`` for ``noise`` uniform on (0, 1];
    tokens with zero probability (logits of -inf) are never chosen.
    """
    logits = ops.convert_to_tensor(logits)
    probabilities = ops.softmax(logits, axis=-1)
    noise = ops.cast(ops.convert_to_tensor(noise), probabilities.dtype)
    cdf = ops.cumsum(probabilities, axis=-1)
    target = noise[:, None] * cdf[:, -1:]
    chosen = ops.sum(ops.cast(cdf < target, "int32"), axis=-1)
    return ops.minimum(chosen, ops.shape(logits)[-1] - 1)


@kzoo_export("kzoo.samplers.RandomSampler")
class RandomSampler(Sampler):
    """Samples the next token from ``softmax(logits / temperature)``.

    Args:
        temperature: float > 0. Below 1 sharpens the distribution, above 1
            flattens it. Defaults to 1.0.
        seed: int or None. The same seed gives the same samples for the same
            sequence of ``generate`` calls.

    Example:
    >>> sampler = kzoo.samplers.RandomSampler(temperature=0.7, seed=1)
    >>> logits = np.log(np.array([[0.5, 0.25, 0.25]], "float32"))
    >>> ops.convert_to_numpy(sampler.choose(logits, np.array([0.6]))).tolist()
    [1]
    """

    uses_noise = True

    def choose(self, logits, noise):
        return inverse_transform_sample(self.filter_logits(logits), noise)

    def filter_logits(self, logits):
        """Logits of the tokens that may be drawn; -inf for the others."""
        return logits
