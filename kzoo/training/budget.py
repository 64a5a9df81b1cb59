"""Model sizes for a training budget: one scale every family reads.

``kzoo compare`` trains each family for the same wall-clock minutes and
compares them; each family's ``Pretraining.budget_options`` turns the
size here into its own options (ELMo's vectors are twice its projection,
word2vec's vectors are its hidden size), so that at a given budget every
family's vectors have the same width and the three contextual families the
same depth.

The smallest size (budgets up to 2 minutes) was checked with 1-minute runs
on gensim's Lee corpus on a shared 2-core CPU: every family's loss falls
within the minute (a few hundred steps of GPT and BERT on JAX). The larger
rows follow a rule of thumb, not a measurement: the width about doubles
where the budget grows about fivefold, as a step's cost grows with width
and depth and a larger model needs more steps to pass a smaller one.
"""

#: (most minutes, size): the first row whose minutes cover the budget
SIZES = (
    (2, {"hidden_dim": 64, "num_layers": 2, "num_heads": 2,
         "sequence_length": 64, "vocabulary_size": 4000}),
    (10, {"hidden_dim": 128, "num_layers": 2, "num_heads": 2,
          "sequence_length": 64, "vocabulary_size": 6000}),
    (60, {"hidden_dim": 256, "num_layers": 4, "num_heads": 4,
          "sequence_length": 128, "vocabulary_size": 8000}),
    (None, {"hidden_dim": 512, "num_layers": 6, "num_heads": 8,
            "sequence_length": 128, "vocabulary_size": 16000}),
)


def budget_size(minutes):
    """The shared size for a budget of ``minutes`` of training on a 2-core
    CPU: ``hidden_dim``, ``num_layers``, ``num_heads``, ``sequence_length``
    (tokens) and ``vocabulary_size``.

    Example:
    >>> kzoo.training.budget_size(1)["hidden_dim"]
    64
    >>> kzoo.training.budget_size(600)["num_layers"]
    6
    """
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) \
            or not minutes > 0:
        raise ValueError(f"`minutes` must be a number > 0, got {minutes!r}.")
    for most, size in SIZES:
        if most is None or minutes <= most:
            return dict(size)
    raise AssertionError("the last row covers every budget")
