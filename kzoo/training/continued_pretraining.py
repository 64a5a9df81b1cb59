"""What continued pretraining from a preset shares across families.

``kzoo pretrain <family> --from PRESET`` (the ELMo paper's domain transfer,
BERT's continued pretraining on in-domain text) loads a preset's tokenizer,
config and weights instead of building them from the corpus, measures the
held-out loss on a slice of the new text, trains as ``kzoo pretrain`` does,
and measures again. Each family's recipe module has its own
``continue_from``; this module holds the parts they share.
"""

import keras
import numpy as np

#: the ``kzoo pretrain`` options that size a model: with ``--from`` the
#: preset's config sets them
SIZE_OPTIONS = ("hidden_dim", "num_layers", "num_heads", "vocabulary_size")


def check_no_size_options(options, preset, allowed=()):
    """A ``ValueError`` when ``options`` set a size option (other than
    ``allowed``) beside ``preset``: the size comes from the preset, and a
    different size could not load its weights."""
    given = [name for name in SIZE_OPTIONS
             if name not in allowed and getattr(options, name, None) is not None]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise ValueError(
            f"{flags} cannot be used with --from {preset}: the model's size and "
            "vocabulary come from the preset. Drop them, or pretrain from "
            "scratch without --from.")


def saved_task_class(preset):
    """The task class a preset holds (its ``task.json``), or None."""
    from kzoo.presets.preset_loader import get_source

    saved = get_source(preset).task_config()
    if saved is None:
        return None
    return keras.saving.get_registered_object(saved.get("registered_name"))


def sequence_length(given, default, preset):
    """The tokens per sequence: ``given`` (checked against the preset's
    position table), else ``default`` cut to that table."""
    from kzoo.presets.preset_loader import get_source

    config = (get_source(preset).backbone_config() or {}).get("config", {})
    limit = config.get("max_sequence_length")
    if given is None:
        return min(default, limit) if limit else default
    if limit is not None and given > limit:
        raise ValueError(
            f"--sequence-length {given} is longer than the {limit} positions "
            f"of {preset}: give --sequence-length {limit} or less.")
    return given


def held_out_split(documents, fraction):
    """``(train, held_out)``: the last ``fraction`` of the documents (at
    least one) held out; a corpus of one document is split by lines.

    Example:
    >>> held_out_split([["a"], ["b"], ["c"], ["d"]], 0.25)
    ([['a'], ['b'], ['c']], [['d']])
    >>> held_out_split([["a", "b", "c", "d"]], 0.5)
    ([['a', 'b']], [['c', 'd']])
    """
    if not 0 < fraction < 1:
        raise ValueError(f"the held-out fraction must be between 0 and 1 "
                         f"(exclusive), got {fraction!r}.")
    if len(documents) > 1:
        count = min(max(1, round(fraction * len(documents))), len(documents) - 1)
        return documents[:-count], documents[-count:]
    lines = documents[0] if documents else []
    if len(lines) < 2:
        raise ValueError("continued pretraining holds out part of the corpus to "
                         "measure the loss before and after: give it two lines "
                         "or more.")
    count = min(max(1, round(fraction * len(lines))), len(lines) - 1)
    return [lines[:-count]], [lines[-count:]]


def adamw(learning_rate):
    """AdamW with BERT's weight decay (0.01) and gradient clipping (1.0), at
    a constant rate: the optimizer of every family's continued pretraining."""
    return keras.optimizers.AdamW(learning_rate, weight_decay=0.01, clipnorm=1.0)


def masked_lm_held_out(model, texts, batch_size, seed=0):
    """``(loss, masked_tokens)``: the mean masked-LM cross-entropy (nats per
    masked token) of ``model``, a ``kzoo.models.MaskedLM`` with its
    preprocessor, on ``texts`` masked once with ``seed``: two models (before
    and after training) are scored on the same masks. The preprocessor's
    masking stream then restarts from its own seed."""
    preprocessor = model.preprocessor
    saved_seed = preprocessor.seed
    preprocessor.reset_seed(seed)
    try:
        x, y, weights = preprocessor(list(texts))
    finally:
        preprocessor.seed = saved_seed
        preprocessor.reset_seed()
    x, y, weights = keras.tree.map_structure(
        keras.ops.convert_to_numpy, (x, y, weights))
    total, count = 0.0, 0.0
    for start in range(0, len(y), batch_size):
        rows = slice(start, start + batch_size)
        logits = keras.ops.convert_to_numpy(model.predict_on_batch(
            {key: value[rows] for key, value in x.items()})).astype("float64")
        logits -= logits.max(axis=-1, keepdims=True)
        log_z = np.log(np.exp(logits).sum(axis=-1))
        target = np.take_along_axis(logits, y[rows][..., None].astype("int64"),
                                    axis=-1)[..., 0]
        total += float(np.sum((log_z - target) * weights[rows]))
        count += float(np.sum(weights[rows]))
    return total / max(count, 1.0), int(count)
