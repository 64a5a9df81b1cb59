"""GPT continued pretraining: the causal LM on new text, from a preset's
BPE and weights.

The recipe of ``kzoo pretrain gpt --from PRESET`` (``continue_from``).
"""

from kzoo.models.gpt.gpt_causal_lm import GPTCausalLM
from kzoo.models.gpt.gpt_pretraining import as_inputs, evaluate, token_blocks
from kzoo.preprocessing.batches import shuffled_epoch
from kzoo.training.continued_pretraining import (
    adamw,
    check_no_size_options,
    sequence_length,
)

#: ``kzoo pretrain gpt --from``'s values where the command line gives none
DEFAULTS = {"learning_rate": 1e-4, "sequence_length": 128}


def continue_from(preset, documents, options):
    """``kzoo pretrain gpt --from PRESET``: a ``GPTCausalLM`` from the preset
    (its BPE, config and weights; the head is the tied token embedding)
    trained with AdamW on the documents cut into token blocks, as ``kzoo
    pretrain gpt`` cuts them. Returns the model, ``resumable_fit``'s data
    arguments and the held-out measure (perplexity per BPE token)."""
    check_no_size_options(options, preset)
    length = sequence_length(options.sequence_length, DEFAULTS["sequence_length"],
                             preset)
    model = GPTCausalLM.from_preset(preset, sequence_length=length)
    model.compile(optimizer=adamw(options.learning_rate or DEFAULTS["learning_rate"]))
    blocks, tokens = token_blocks(model.preprocessor.tokenizer,
                                  ["\n".join(d) for d in documents], length)
    print(f"GPT from {preset}: {model.backbone.vocabulary_size:,} BPE tokens, "
          f"{model.backbone.num_layers} layers; {tokens:,} training tokens in "
          f"{len(blocks):,} blocks of {length}")
    data = as_inputs(blocks)
    return model, {"data_for_epoch": lambda epoch: shuffled_epoch(
        data, epoch, options.batch_size, options.seed)}, evaluate
