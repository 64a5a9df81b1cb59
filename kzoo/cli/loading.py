"""What the commands load: a preset's task, its family, word vectors."""

import os

from kzoo.cli.environment import CommandError

FAMILIES = {"BertBackbone": "bert", "GPTBackbone": "gpt", "ElmoBackbone": "elmo",
            "Word2VecBackbone": "word2vec"}


def _source(preset):
    from kzoo.presets.preset_loader import get_source

    if not os.path.exists(preset) and os.sep in preset:
        raise FileNotFoundError(f"the model folder {preset} does not exist")
    return get_source(preset)


def family(preset):
    """``bert``, ``gpt``, ``elmo`` or ``word2vec``: the preset's backbone."""
    source = _source(preset)
    if hasattr(source, "word_vectors"):  # a word2vec / GloVe file or a registered one
        return "word2vec"
    name = source.backbone_config().get("registered_name", "")
    return FAMILIES.get(name.split(">")[-1], name)


def saved_task_class(preset):
    """The task class a preset folder holds (``task.json``), or None."""
    import keras

    config = _source(preset).task_config()
    if config is None:
        return None
    return keras.saving.get_registered_object(config["registered_name"])


def load_task(preset, expected=None, what="this command"):
    """The task saved in a preset folder (``kzoo pretrain`` / ``finetune``
    write one), checked to be one of the ``expected`` classes."""
    cls = saved_task_class(preset)
    if cls is None:
        raise CommandError(
            f"{preset} holds a backbone but no task (no task.json): {what} needs "
            "a folder written by `kzoo pretrain` or `kzoo finetune`.")
    if expected and not issubclass(cls, expected):
        names = ", ".join(c.__name__ for c in expected)
        raise CommandError(f"{preset} holds a {cls.__name__}; {what} needs a {names}.")
    return cls.from_preset(preset)


def load_word_vectors(model):
    """Word vectors from a word2vec C text or binary file, a GloVe text file,
    a registered name (``glove_6b_50d_en``) or a word2vec preset folder
    (``kzoo pretrain word2vec``): ``WordVectors.from_preset``."""
    from kzoo.models import WordVectors

    if not os.path.exists(model) and (os.sep in model or "." in model):
        raise FileNotFoundError(
            f"{model} does not exist (pass a word2vec preset folder, a word2vec "
            ".txt / .bin file, a GloVe .txt file or a registered name such as "
            "glove_6b_50d_en)")
    return WordVectors.from_preset(model)
