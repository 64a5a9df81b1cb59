"""Polysemy: word-in-context vectors per layer, WordNet pairs, scores, plots.

``word_in_context(model)`` gives a word's vector inside a sentence at every
layer of a model: one layer for static word vectors
(``StaticWordInContext``), every layer of an ELMo, GPT or BERT model (each
family's adapter, from its record: ``kzoo.models.elmo.elmo_word_in_context``,
``kzoo.models.gpt.gpt_word_in_context``,
``kzoo.models.bert.bert_word_in_context``);
``read_wordnet_examples`` and ``build_word_in_context_pairs`` make a
same-sense / different-sense set from WordNet 3.0's usage examples;
``evaluate_word_in_context`` scores each layer (ROC AUC, accuracy at a
dev-tuned threshold); ``run_polysemy_evaluation`` does it all and plots.
"""

# First: importing the submodule binds its name here, which the function
# word_in_context (from kzoo.analysis.models) then replaces.
from kzoo.analysis.word_in_context import WordInContext, cosine  # noqa: I001
from kzoo.analysis.evaluation import (
    LayerScore,
    best_threshold,
    evaluate_word_in_context,
    format_table,
    pair_cosines,
    roc_auc,
    score_layers,
)
from kzoo.analysis.models import (
    GLOVE,
    display_name,
    load_glove_6b_50d,
    load_word_in_context,
    word_in_context,
)
from kzoo.analysis.polysemy import run_polysemy_evaluation
from kzoo.analysis.static_word_in_context import StaticWordInContext
from kzoo.analysis.targets import find_all, find_word
from kzoo.analysis.word_in_context_pairs import (
    WordInContextPair,
    WordInContextPairs,
    build_word_in_context_pairs,
)
from kzoo.analysis.wordnet import SenseExample, WordNetNotFoundError, read_wordnet_examples
