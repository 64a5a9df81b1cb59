"""The probes ``kzoo compare`` measures every model with, each on a
``kzoo.analysis.WordInContext`` (or, for fine-tuning, a preset) and each
returning a JSON-ready dict; none names a model family.

- ``evaluation_vocabulary`` / ``word_similarity``: WordSim-353 and
  SimLex-999 Spearman and Google analogies per layer, from context-averaged
  word vectors (``probes_words``).
- ``wordnet_pairs`` / ``polysemy``: per-layer polysemy AUC on the WordNet
  pairs (``probes_polysemy``).
- ``sentiment_splits`` / ``feature_probe`` / ``fine_tuning``: the Pang & Lee
  sentences, a logistic-regression probe on frozen features and fine-tuning
  where the family has a ``TextClassifier`` (``probes_sentiment``).
"""

from kzoo.analysis.compare.probes_classifier import fit_logistic_regression  # noqa: F401
from kzoo.analysis.compare.probes_polysemy import polysemy, wordnet_pairs  # noqa: F401
from kzoo.analysis.compare.probes_sentiment import (  # noqa: F401
    feature_probe,
    fine_tuning,
    sentence_features,
    sentiment_splits,
)
from kzoo.analysis.compare.probes_words import (  # noqa: F401
    context_word_vectors,
    evaluation_vocabulary,
    word_contexts,
    word_similarity,
)
