"""Export to keras-hub: a kzoo model → a keras-hub preset folder.

``keras_hub(model, path)`` writes ``config.json``, ``model.weights.h5``,
``metadata.json``, the tokenizer's ``tokenizer.json`` and assets, and for a
task ``preprocessor.json``, ``task.json`` (and ``task.weights.h5`` where
the head has weights), which ``keras_hub.models.<Class>.from_preset`` reads;
keras-hub itself is not needed to write it. Each family says how (its
record's ``keras_hub`` writer, beside its converter that reads such
folders); this module names none.
"""

from kzoo.models.family import family_of


def keras_hub(model, path, tokenizer=None, **kwargs):
    """Writes ``model`` as a keras-hub preset folder at ``path``.

    Args:
        model: a backbone or task of a family with a keras-hub writer (BERT:
            ``BertBackbone`` and ``BertClassifier``, as keras-hub's
            ``BertBackbone`` and ``BertTextClassifier``; GPT: a GPT-2
            ``GPTBackbone`` and ``GPTCausalLM``, as ``GPT2Backbone`` and
            ``GPT2CausalLM``).
        path: the folder to write (replaced atomically; left as it was on
            failure).
        tokenizer: the tokenizer to write beside the weights; defaults to
            the task's preprocessor's.
        **kwargs: the family writer's options (BERT's
            ``approximate_gelu``).

    Returns:
        The absolute ``path``.
    """
    family = family_of(model)
    if family.keras_hub is None:
        raise ValueError(
            f"The {family.title} family has no keras-hub writer: keras-hub has "
            f"no {type(model).__name__}.")
    return family.keras_hub(model, path, tokenizer=tokenizer, **kwargs)
