"""The four generations side by side: word2vec, ELMo, GPT and BERT trained
on one corpus for the same wall-clock budget, then measured with the same
probes (word similarity and analogies, per-layer polysemy, a frozen-feature
probe, fine-tuning where the family fine-tunes) and reported together."""

from kzoo.analysis.compare.report import read_results, write_report  # noqa: F401
from kzoo.analysis.compare.run import compare  # noqa: F401
