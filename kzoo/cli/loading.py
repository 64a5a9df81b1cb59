"""What the commands load: a preset's family, its task, word vectors."""

import os

from kzoo.cli.environment import CommandError


def _check_exists(preset):
    if not os.path.exists(preset) and os.sep in preset:
        raise FileNotFoundError(f"the model folder {preset} does not exist")


def family(preset):
    """The ``kzoo.models.Family`` of a preset (its backbone's, or that of
    the converter that reads it)."""
    from kzoo.models.family import family_of_preset

    _check_exists(preset)
    return family_of_preset(preset)


def saved_task_class(preset):
    """The task class a preset folder holds (``task.json``), or None."""
    import keras

    from kzoo.presets.preset_loader import get_source

    _check_exists(preset)
    config = get_source(preset).task_config()
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


def families_with(field):
    """The titles of the families whose record has ``field`` (for messages)."""
    from kzoo.models.family import families

    return ", ".join(f.title for f in families() if getattr(f, field) is not None)


def load_word_vectors(model):
    """Word vectors from a preset of a family of static vectors: a word2vec
    C text or binary file, a GloVe text file, a registered name
    (``glove_6b_50d_en``) or a folder from ``kzoo pretrain word2vec``."""
    if not os.path.exists(model) and (os.sep in model or "." in model):
        raise FileNotFoundError(
            f"{model} does not exist (pass a word2vec preset folder, a word2vec "
            ".txt / .bin file, a GloVe .txt file or a registered name such as "
            "glove_6b_50d_en)")
    record = family(model)
    if record.word_vectors is None:
        raise CommandError(f"{model} is a {record.title} model, not word vectors "
                           f"(the families of word vectors: {families_with('word_vectors')}).")
    return record.word_vectors(model)
