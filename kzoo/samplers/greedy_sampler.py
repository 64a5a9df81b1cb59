"""Greedy decoding: the most likely token at every step."""

from kzoo import ops as kzoo_ops
from kzoo.api_export import kzoo_export
from kzoo.samplers.sampler import Sampler


@kzoo_export("kzoo.samplers.GreedySampler")
class GreedySampler(Sampler):
    """Takes the most likely next token (the lowest id among ties).

    Deterministic; the same as Hugging Face's ``generate(do_sample=False)``
    with one beam.

    Example:
    >>> sampler = kzoo.samplers.GreedySampler()
    >>> ops.convert_to_numpy(sampler.choose(np.array([[0.1, 2.0, 0.5]]), None)).tolist()
    [1]
    """

    def __init__(self):
        super().__init__()

    def choose(self, logits, noise):
        return kzoo_ops.argmax(logits)

    def get_config(self):
        return {}
