"""ELMo continued pretraining: the biLM fine-tuned on task text, the ELMo
paper's domain transfer, from a preset's weights.

The recipe of ``kzoo pretrain elmo --from PRESET`` (``continue_from``). A
kzoo ``ElmoLanguageModel`` preset continues with its own word vocabulary and
softmax. A preset with the biLM only (an AllenNLP / bilm-tf
``options.json`` + hdf5 folder, whose weight file holds no softmax, or a
saved ``ElmoBackbone``) gets a word vocabulary from the new text and a new
softmax, said so: the character encoder and LSTMs start from the preset.
"""

import keras
import numpy as np

from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_language_model import ElmoLanguageModel
from kzoo.models.elmo.elmo_language_model_preprocessor import (
    ElmoLanguageModelPreprocessor,
)
from kzoo.models.elmo.elmo_pretraining import evaluate, sentences_of, train_tokenizer
from kzoo.preprocessing.batches import shuffled_epoch
from kzoo.training.continued_pretraining import check_no_size_options, saved_task_class

#: ``kzoo pretrain elmo --from``'s values where the command line gives none
DEFAULTS = {"learning_rate": 1e-4, "sequence_length": 32, "vocabulary_size": 20000}


def continue_from(preset, documents, options):
    """``kzoo pretrain elmo --from PRESET``: an ``ElmoLanguageModel`` from
    the preset (see the module docstring for a preset without a softmax),
    trained on the documents' sentences (as ``kzoo pretrain elmo`` cuts
    them) with Adam; a sampled-softmax model keeps its Adagrad. Returns
    the model, ``resumable_fit``'s data arguments and the held-out measure
    (forward and backward perplexity)."""
    length = options.sequence_length or DEFAULTS["sequence_length"]
    saved = saved_task_class(preset)
    has_softmax = isinstance(saved, type) and issubclass(saved, ElmoLanguageModel)
    check_no_size_options(options, preset,
                          allowed=() if has_softmax else ("vocabulary_size",))
    sentences = sentences_of(["\n".join(d) for d in documents], length - 2)
    if not sentences:
        raise ValueError("the corpus has no sentence of 3 words or more.")
    if has_softmax:
        model = ElmoLanguageModel.from_preset(preset, sequence_length=length)
    else:
        tokenizer = train_tokenizer(
            sentences, options.vocabulary_size or DEFAULTS["vocabulary_size"])
        print(f"{preset} has no softmax (no saved ElmoLanguageModel): a word "
              f"vocabulary of {tokenizer.vocabulary_size():,} is taken from the "
              "corpus and a new softmax initialized; the character encoder and "
              "the LSTMs start from the preset.")
        model = ElmoLanguageModel(
            ElmoBackbone.from_preset(preset),
            preprocessor=ElmoLanguageModelPreprocessor(tokenizer, sequence_length=length),
            seed=options.seed)
    if model.num_sampled:  # bilm-tf's Adagrad (0.2) unless a rate is given
        model.compile(optimizer=keras.optimizers.Adagrad(
            options.learning_rate or 0.2, initial_accumulator_value=1.0,
            clipnorm=10.0))
    else:
        model.compile(optimizer=keras.optimizers.Adam(
            options.learning_rate or DEFAULTS["learning_rate"], clipnorm=10.0))
    print(f"ELMo from {preset}: {model.vocabulary_size:,} words in the softmax; "
          f"{len(sentences):,} sentences")
    sentences = np.asarray(sentences, dtype=object)
    return model, {"data_for_epoch": lambda epoch: shuffled_epoch(
        sentences, epoch, options.batch_size, options.seed)}, evaluate
