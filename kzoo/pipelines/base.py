"""What every pipeline shares: loading the task, batching, single or list."""

import os

import numpy as np

#: ``top_k`` and the like when the caller did not pass them (Hugging Face's
#: text-classification pipeline answers differently then).
NOT_GIVEN = object()


class Pipeline:
    """The base of the pipelines: a kzoo task, a batch size, and ``__call__``.

    A subclass names the generic task shape it needs (``task_shape``, the
    name of a class in ``kzoo.models``) and defines ``__call__``. The model
    is a preset (a registered name or a folder: ``task_shape.from_preset``
    builds the preset's family's task) or an already built task of that
    shape.

    Args:
        model: a preset name or folder, or a kzoo task.
        batch_size: int. Inputs per forward pass.
        model_kwargs: dict of ``from_preset`` arguments (``num_classes``,
            ``sequence_length`` ...); only with a preset.

    Example:
    >>> kzoo.pipelines.Pipeline.task_shape
    'Task'
    """

    #: the pipeline's task name, as ``kzoo.pipeline`` takes it
    task = None
    #: the name of the ``kzoo.models`` class the model must be
    task_shape = "Task"

    def __init__(self, model, batch_size=32, model_kwargs=None):
        self.model = load_task(model, self.task_shape, self.task, model_kwargs)
        self.batch_size = check_batch_size(batch_size)

    def __repr__(self):
        return (f"{type(self).__name__}(model={type(self.model).__name__}, "
                f"batch_size={self.batch_size})")


def load_task(model, task_shape, task, model_kwargs=None):
    """``model`` as a kzoo task of ``task_shape`` with a preprocessor.

    Example:
    >>> load_task(3, "TextClassifier", "text-classification")
    Traceback (most recent call last):
    ...
    TypeError: The 'text-classification' pipeline takes a preset name or folder, or a kzoo.models.TextClassifier; got int.
    """
    import kzoo.models

    shape = getattr(kzoo.models, task_shape)
    if isinstance(model, (str, os.PathLike)):
        return shape.from_preset(os.fspath(model), **dict(model_kwargs or {}))
    if not isinstance(model, shape):
        raise TypeError(
            f"The {task!r} pipeline takes a preset name or folder, or a "
            f"kzoo.models.{task_shape}; got {type(model).__name__}.")
    if model_kwargs:
        raise ValueError(
            "`model_kwargs` are `from_preset` arguments: pass them with a preset "
            "name or folder, not with a built task.")
    if getattr(model, "preprocessor", None) is None:
        raise ValueError(
            f"The {task!r} pipeline reads raw text: the task needs its "
            "preprocessor (build it with `preprocessor=`).")
    return model


def check_batch_size(batch_size):
    """``batch_size`` if it is a positive int, else a ``ValueError``.

    Example:
    >>> check_batch_size(8)
    8
    """
    if (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
            or batch_size < 1):
        raise ValueError(f"`batch_size` must be a positive int, got {batch_size!r}.")
    return int(batch_size)


def as_list(inputs, what="texts", item=str):
    """``(list_of_inputs, single)``: one input (an ``item``) is a list of
    one, flagged ``single`` (the pipeline then returns its result alone).

    Example:
    >>> as_list("a b")
    (['a b'], True)
    >>> as_list(["a", "b"])
    (['a', 'b'], False)
    """
    if isinstance(inputs, item):
        return [inputs], True
    if isinstance(inputs, (list, tuple)):
        inputs = list(inputs)
        bad = [x for x in inputs if not isinstance(x, item)]
        if bad:
            raise TypeError(
                f"The {what} must be a {_name(item)} or a list of them; the list "
                f"holds a {type(bad[0]).__name__}.")
        return inputs, False
    raise TypeError(f"The {what} must be a {_name(item)} or a list of them, got "
                    f"{type(inputs).__name__}.")


def _name(item):
    if isinstance(item, tuple):
        return " or a ".join(t.__name__ for t in item)
    return item.__name__


def batches(items, batch_size):
    """``items`` in consecutive slices of at most ``batch_size``.

    Example:
    >>> list(batches([1, 2, 3], 2))
    [[1, 2], [3]]
    """
    for start in range(0, len(items), batch_size):
        yield items[start:start + batch_size]


def softmax(logits):
    """Softmax over the last axis, in float64 numpy.

    Example:
    >>> softmax(np.array([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """
    logits = np.asarray(logits, dtype="float64")
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def outputs_probabilities(model):
    """True when a classifier's head already applies softmax (built with
    ``activation="softmax"``): its outputs are probabilities, not logits.

    Example:
    >>> outputs_probabilities(object())
    False
    """
    import keras

    activation = getattr(model, "activation", None)
    return activation not in (None, keras.activations.linear)


def label_name(model, index):
    """The model's name for class ``index``: ``label_names`` when it has
    them, else Hugging Face's default ``"LABEL_<index>"``.

    Example:
    >>> label_name(object(), 2)
    'LABEL_2'
    """
    names = getattr(model, "label_names", None)
    return names[index] if names else f"LABEL_{index}"
