"""Public names and Keras serialization registration for kzoo objects."""

import keras

#: Every exported object, by its public path (``"kzoo.models.BertBackbone"`` ...).
EXPORTED = {}


def kzoo_export(path):
    """Register a class or function under the ``kzoo`` package.

    The decorated object becomes serializable as ``"kzoo>ClassName"``, so
    ``keras.saving.deserialize_keras_object`` and ``keras.models.load_model``
    find it on every backend once ``import kzoo`` has run.

    Args:
        path: str or tuple of str. Public dotted name(s), e.g.
            ``"kzoo.models.BertBackbone"``. The last component must match the
            object's ``__name__``.
    """
    paths = (path,) if isinstance(path, str) else tuple(path)

    def decorator(obj):
        for p in paths:
            if p.rsplit(".", 1)[-1] != obj.__name__:
                raise ValueError(
                    f"kzoo_export path {p!r} does not end in {obj.__name__!r}."
                )
            EXPORTED[p] = obj
        return keras.saving.register_keras_serializable(package="kzoo")(obj)

    return decorator
