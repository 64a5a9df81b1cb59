"""Token samplers for generation: greedy, temperature, top-k, top-p, beam search."""

from kzoo.samplers.beam_sampler import BeamSampler
from kzoo.samplers.greedy_sampler import GreedySampler
from kzoo.samplers.logits_processor import LogitsProcessor
from kzoo.samplers.random_sampler import RandomSampler
from kzoo.samplers.sampler import Sampler
from kzoo.samplers.stop_strings import StopStrings
from kzoo.samplers.top_k_sampler import TopKSampler
from kzoo.samplers.top_p_sampler import TopPSampler

_NAMES = {
    "greedy": GreedySampler,
    "random": RandomSampler,
    "top_k": TopKSampler,
    "top_p": TopPSampler,
    "beam": BeamSampler,
}


def get(identifier):
    """A sampler from a ``Sampler`` instance or a name.

    Names: ``"greedy"``, ``"random"`` (temperature sampling), ``"top_k"``,
    ``"top_p"`` and ``"beam"``, each with its default arguments.

    >>> type(kzoo.samplers.get("top_k")).__name__
    'TopKSampler'
    """
    if isinstance(identifier, Sampler):
        return identifier
    if isinstance(identifier, str) and identifier in _NAMES:
        return _NAMES[identifier]()
    raise ValueError(
        f"`sampler` must be a kzoo.samplers.Sampler or one of "
        f"{sorted(_NAMES)}, got {identifier!r}.")


__all__ = ["BeamSampler", "GreedySampler", "LogitsProcessor", "RandomSampler", "Sampler",
           "StopStrings", "TopKSampler", "TopPSampler", "get"]
