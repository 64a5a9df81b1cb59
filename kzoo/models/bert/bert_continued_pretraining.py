"""BERT continued pretraining: masked LM on new text, from a preset's
vocabulary and weights (BERT's continued pretraining on in-domain text).

The recipe of ``kzoo pretrain bert --from PRESET`` (``continue_from``).
"""

import math

import numpy as np

from kzoo.models.bert.bert_masked_lm import BertMaskedLM
from kzoo.models.bert.bert_pretraining import split_sentences
from kzoo.preprocessing.batches import shuffled_epoch
from kzoo.training.continued_pretraining import (
    adamw,
    check_no_size_options,
    masked_lm_held_out,
    sequence_length,
)

#: ``kzoo pretrain bert --from``'s values where the command line gives none
DEFAULTS = {"learning_rate": 1e-4, "sequence_length": 128}


def sentences_of(documents):
    """The documents' sentences, as ``kzoo pretrain bert`` cuts them: each is
    one text to mask (cut to the sequence length by the preprocessor)."""
    return [s for document in documents for line in document
            for s in split_sentences(line)]


def evaluate(model, documents, batch_size):
    """Held-out masked-LM loss of a ``BertMaskedLM`` on the documents'
    sentences, masked once with seed 0 (the same masks for every model)."""
    loss, count = masked_lm_held_out(model, sentences_of(documents), batch_size)
    return (f"masked-LM loss {loss:.4f} (perplexity {math.exp(loss):.2f}; "
            f"{count:,} masked tokens)")


def continue_from(preset, documents, options):
    """``kzoo pretrain bert --from PRESET``: a ``BertMaskedLM`` from the
    preset (its vocabulary, config and weights; its masked-LM head, or a new
    one initialized as BERT does, with a warning) trained on the documents'
    sentences with AdamW (masking whole words with
    ``--whole-word-masking``). Returns the model, ``resumable_fit``'s data arguments
    and the held-out measure (``evaluate``)."""
    check_no_size_options(options, preset)
    length = sequence_length(options.sequence_length, DEFAULTS["sequence_length"],
                             preset)
    model = BertMaskedLM.from_preset(
        preset, sequence_length=length, seed=options.seed,
        whole_word_masking=getattr(options, "whole_word_masking", False))
    model.compile(optimizer=adamw(options.learning_rate or DEFAULTS["learning_rate"]))
    sentences = np.asarray(sentences_of(documents), dtype=object)
    print(f"BERT from {preset}: {model.backbone.vocabulary_size:,} word pieces, "
          f"{model.backbone.num_layers} layers; {len(sentences):,} training "
          "sentences")
    return model, {"data_for_epoch": lambda epoch: shuffled_epoch(
        sentences, epoch, options.batch_size, options.seed)}, evaluate
