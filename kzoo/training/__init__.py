"""Training recipes shared by the ``kzoo`` command and ``examples/``.

``resumable_fit`` (epoch checkpoints, curves, TensorBoard; a killed run
continues where it stopped), the data files the command reads
(``read_documents``, ``read_labeled_file``), and the pretraining setups of
each family (``gpt_pretraining``, ``bert_pretraining``, ``elmo_pretraining``).
"""

from kzoo.training.data_files import read_documents, read_labeled_file  # noqa: F401
from kzoo.training.resumable_fit import resumable_fit, shuffled_epoch  # noqa: F401
