"""Export to Hugging Face: a kzoo model → a transformers folder.

``hugging_face(model, path)`` writes ``config.json``, ``model.safetensors``
and the tokenizer's files, which ``transformers.AutoModel*.from_pretrained``
and ``AutoTokenizer.from_pretrained`` read. Each family says how (its
record's ``hugging_face`` writer, beside its converter that reads such
folders); this module names none.
"""

from kzoo.models.family import family_of


def hugging_face(model, path, tokenizer=None):
    """Writes ``model`` as a Hugging Face (transformers) folder at ``path``.

    Args:
        model: a backbone or task of a family with a transformers writer
            (BERT: the backbone and its tasks; GPT: the backbone, causal
            LM, classifier and multiple choice, GPT-2 or GPT-1, where
            transformers computes the same).
        path: the folder to write (replaced atomically; left as it was on
            failure).
        tokenizer: the tokenizer to write beside the weights; defaults to
            the task's preprocessor's.

    Returns:
        The absolute ``path``.
    """
    family = family_of(model)
    if family.hugging_face is None:
        raise ValueError(
            f"The {family.title} family has no Hugging Face writer: "
            f"{type(model).__name__} exports as a SavedModel only "
            "(`kzoo.export.saved_model`).")
    return family.hugging_face(model, path, tokenizer=tokenizer)
