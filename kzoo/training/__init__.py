"""What every family's training shares, for the ``kzoo`` command and ``examples/``.

``resumable_fit`` (epoch checkpoints, curves, TensorBoard; a killed run
continues where it stopped), ``shuffled_epoch`` (an epoch's batches in an
order set by the seed and the epoch) and the data files the command reads
(``read_documents``, ``read_labeled_file``), and the model sizes
for a training budget (``budget_size``). Each family's pretraining
recipe lives in its own folder (``kzoo.models.gpt.gpt_pretraining`` ...).
"""

from kzoo.preprocessing.batches import shuffled_epoch  # noqa: F401
from kzoo.training.budget import budget_size  # noqa: F401
from kzoo.training.data_files import (  # noqa: F401
    read_choices_file,
    read_documents,
    read_labeled_file,
    read_scored_file,
    read_squad_file,
    read_tagged_file,
)
from kzoo.training.resumable_fit import resumable_fit  # noqa: F401
