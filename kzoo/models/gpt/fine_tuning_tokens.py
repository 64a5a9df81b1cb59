"""Adds GPT-1's fine-tuning tokens to a pretrained GPT and its tokenizer."""

import keras
import numpy as np

from kzoo.models.gpt.gpt_tokenizer import (
    DELIMITER_TOKEN,
    EXTRACT_TOKEN,
    START_TOKEN,
)

FINE_TUNING_TOKENS = (START_TOKEN, DELIMITER_TOKEN, EXTRACT_TOKEN)


def add_fine_tuning_tokens(backbone, tokenizer, seed=None):
    """A backbone and tokenizer with ``<|start|> <|delim|> <|extract|>`` added.

    GPT-1 fine-tuning frames its inputs with three tokens the pretrained
    model never saw: they get new ids after the vocabulary (those already
    present are kept) and new embedding rows drawn from N(0, 0.02); every
    pretrained weight is copied unchanged.

    Args:
        backbone: a ``GPTBackbone``.
        tokenizer: its ``GPTTokenizer``.
        seed: int or None, for the new embedding rows.

    Returns:
        ``(backbone, tokenizer)``: new objects (the arguments are unchanged).

    Example:
    >>> vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
    ...     ["a cat sat"] * 3, vocabulary_size=262)
    >>> tokenizer = kzoo.models.GPTTokenizer(vocabulary, merges)
    >>> backbone = kzoo.models.GPTBackbone(
    ...     vocabulary_size=262, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> from kzoo.models.gpt import add_fine_tuning_tokens
    >>> backbone, tokenizer = add_fine_tuning_tokens(backbone, tokenizer, seed=0)
    >>> backbone.vocabulary_size, tokenizer.token_to_id("<|extract|>")
    (265, 264)
    """
    vocabulary = dict(tokenizer.vocabulary)
    for token in FINE_TUNING_TOKENS:
        vocabulary.setdefault(token, len(vocabulary))
    new_tokenizer = type(tokenizer).from_config(tokenizer.get_config())
    new_tokenizer.set_vocabulary_and_merges(vocabulary, list(tokenizer.merges))
    config = backbone.get_config()
    config["vocabulary_size"] = len(vocabulary)
    new_backbone = type(backbone).from_config(config)
    old_rows = keras.ops.convert_to_numpy(backbone.token_embedding.embeddings)
    added = len(vocabulary) - old_rows.shape[0]
    rng = np.random.default_rng(seed)
    rows = rng.normal(0.0, 0.02, (added, old_rows.shape[1])).astype(old_rows.dtype)
    for new, old in zip(new_backbone.weights, backbone.weights):
        if new is new_backbone.token_embedding.embeddings:
            new.assign(np.concatenate([old_rows, rows]))
        else:
            new.assign(old)
    return new_backbone, new_tokenizer


class FineTuningTokensFromPreset:
    """Mixin of the GPT-1 fine-tuning tasks: ``from_preset`` on a pretrained
    GPT whose vocabulary lacks ``<|start|> <|delim|> <|extract|>`` (a
    Hugging Face ``openai-gpt`` folder) adds them (``add_fine_tuning_tokens``,
    new rows drawn with ``seed=0``), so the task fine-tunes at once; the head
    keeps its weights. A preprocessor built with ``fine_tuning_tokens=False``
    needs none."""

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        task = super().from_preset(preset, load_weights=load_weights, **kwargs)
        preprocessor = task.preprocessor
        tokenizer = getattr(preprocessor, "tokenizer", None)
        if (tokenizer is None or not getattr(preprocessor, "fine_tuning_tokens", True)
                or all(t in tokenizer.vocabulary for t in FINE_TUNING_TOKENS)):
            return task
        backbone, tokenizer = add_fine_tuning_tokens(task.backbone, tokenizer, seed=0)
        preprocessor = type(preprocessor).from_config(
            {**preprocessor.get_config(), "tokenizer": tokenizer})
        new_task = type(task).from_config(
            {**task.get_config(), "backbone": backbone, "preprocessor": preprocessor})
        # The head keeps its weights (a fine-tuned one stays fine-tuned).
        for new, old in zip(_head_weights(new_task), _head_weights(task)):
            new.assign(old)
        return new_task


def _head_weights(task):
    inside = {id(v) for v in task.backbone.weights}
    return [v for v in task.weights if id(v) not in inside]
