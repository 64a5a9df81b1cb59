"""Helpers that every kzoo test uses: conversion, comparison, layer checks."""

import keras
import numpy as np

from kzoo.preprocessing.engine import engine_scope, is_tensorflow_value, tf


def to_numpy(x):
    """Any output (backend tensor, TF tensor, ragged, list, dict) to numpy."""
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(to_numpy(v) for v in x)
    if is_tensorflow_value(x) and isinstance(x, tf.RaggedTensor):
        return np.asarray(x.to_list(), dtype=object)
    if is_tensorflow_value(x) and isinstance(x, (tf.Tensor, tf.Variable)):
        value = x.numpy()
        return value.astype(object) if x.dtype == tf.string else value
    if isinstance(x, list):
        if any(isinstance(v, (str, bytes)) for v in keras.tree.flatten(x)):
            # Not numpy's fixed-width strings: they drop trailing NULs.
            return np.asarray(x, dtype=object)
        try:
            return np.asarray(x)
        except ValueError:
            return np.asarray(x, dtype=object)
    if isinstance(x, (str, bytes, int, float, np.ndarray, np.generic)):
        return np.asarray(x)
    return np.asarray(keras.ops.convert_to_numpy(x))


def gradient(fn, x):
    """``d sum(fn(x)) / dx`` for a float numpy ``x``, on the current backend
    (``jax.grad``, ``tf.GradientTape`` or torch autograd), as numpy."""
    backend = keras.backend.backend()
    total = lambda z: keras.ops.sum(fn(z))  # noqa: E731
    if backend == "jax":
        import jax

        return to_numpy(jax.grad(total)(x))
    if backend == "tensorflow":
        z = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(z)
            value = total(z)
        return to_numpy(tape.gradient(value, z))
    import torch

    z = torch.tensor(x, requires_grad=True)
    total(z).backward()
    return to_numpy(z.grad)


def _normalise(x):
    x = to_numpy(x)
    if isinstance(x, dict):
        return {k: _normalise(v) for k, v in x.items()}
    if isinstance(x, np.ndarray) and x.dtype == object:
        return _decode(x.tolist())
    return x


def _decode(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, np.ndarray):
        return _decode(value.tolist())
    return value


def assert_all_equal(actual, expected, msg=""):
    """Exact equality of (nested) outputs, ragged or dense, across kinds."""
    actual, expected = _normalise(actual), _normalise(expected)
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{msg}: expected a dict, got {type(actual)}"
        assert set(actual) == set(expected), f"{msg}: keys {set(actual)} != {set(expected)}"
        for key in expected:
            assert_all_equal(actual[key], expected[key], f"{msg}[{key}]")
        return
    if isinstance(expected, list) or isinstance(actual, list):
        a = actual.tolist() if isinstance(actual, np.ndarray) else actual
        e = expected.tolist() if isinstance(expected, np.ndarray) else expected
        assert a == e, f"{msg}: {a} != {e}"
        return
    np.testing.assert_array_equal(actual, expected, err_msg=msg)


def assert_allclose(actual, expected, atol=1e-6, rtol=1e-6, msg=""):
    actual, expected = to_numpy(actual), to_numpy(expected)
    if isinstance(expected, dict):
        for key in expected:
            assert_allclose(actual[key], expected[key], atol, rtol, f"{msg}[{key}]")
        return
    np.testing.assert_allclose(actual, expected, atol=atol, rtol=rtol, err_msg=msg)


def _batched_dataset(input_data, batch_size):
    if isinstance(input_data, dict):
        tensors = {k: _as_tf(v) for k, v in input_data.items()}
    elif isinstance(input_data, tuple):
        tensors = tuple(_as_tf(v) for v in input_data)
    else:
        tensors = _as_tf(input_data)
    return tf.data.Dataset.from_tensor_slices(tensors).batch(batch_size)


def _as_tf(value):
    from kzoo.preprocessing.preprocessing_layer import to_tf

    return to_tf(value)


def run_preprocessing_layer_test(
    layer_cls,
    init_kwargs,
    input_data,
    expected_output=None,
    batch_size=None,
    random=False,
):
    """The checks every preprocessing layer passes.

    * eager call on Python / numpy input (and the expected output, if given);
    * a layer with a Python implementation gives the same output on the
      Python engine (random layers: tested apart, on their statistics);
    * the same batch through ``tf.data`` ``.batch().map(layer)`` gives the same
      output (for random layers: a fresh layer with the same seed);
    * ``get_config`` → ``from_config`` and Keras (de)serialization round trip
      to a layer that gives the same output.

    Args:
        layer_cls: the layer class.
        init_kwargs: dict, its constructor arguments.
        input_data: one batch (a list, numpy array, tuple or dict of those).
        expected_output: optional expected eager output.
        batch_size: the tf.data batch size (default: the whole batch).
        random: whether the layer draws random numbers (then each comparison
            uses a freshly built layer, which must restart its seeded stream).

    Returns:
        The eager output.
    """

    def call(layer, data):
        if isinstance(data, tuple):
            return layer(*data)
        return layer(data)

    layer = layer_cls(**init_kwargs)
    eager = call(layer, input_data)
    if expected_output is not None:
        assert_all_equal(eager, expected_output, "eager output")
    if not random and hasattr(layer, "python_call"):
        with engine_scope("python"):
            assert_all_equal(call(layer_cls(**init_kwargs), input_data), eager,
                             "Python engine vs TensorFlow engine")

    n = len(next(iter(input_data.values())) if isinstance(input_data, dict)
            else input_data[0] if isinstance(input_data, tuple) else input_data)
    ds_layer = layer_cls(**init_kwargs) if random else layer
    ds = _batched_dataset(input_data, batch_size or max(n, 1))
    ds = ds.map(lambda *x: call(ds_layer, x[0] if len(x) == 1 else tuple(x)))
    batches = list(ds)
    if batch_size is None and batches:
        assert_all_equal(batches[0], eager, "tf.data output vs eager output")

    config = layer.get_config()
    restored = layer_cls.from_config(config)
    if hasattr(layer, "save_assets"):
        _copy_assets(layer, restored)
    fresh = layer_cls(**init_kwargs) if random else layer
    assert_all_equal(call(restored, input_data), call(fresh, input_data),
                     "from_config round trip")
    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"].startswith("kzoo>"), serialized
    restored = keras.saving.deserialize_keras_object(serialized)
    assert type(restored) is layer_cls
    return eager


def _copy_assets(layer, restored):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        layer.save_assets(tmp)
        restored.load_assets(tmp)


def run_backbone_test(backbone_cls, init_kwargs, input_data,
                      expected_output_shape=None):
    """The checks every backbone passes: call, shapes, config round trip,
    and preset save/load giving identical outputs.

    Returns:
        The backbone's output on ``input_data``.
    """
    backbone = backbone_cls(**init_kwargs)
    output = backbone(input_data)
    if expected_output_shape is not None:
        shapes = tf.nest.map_structure(
            lambda x: tuple(keras.ops.shape(x)), output
        )
        assert shapes == expected_output_shape, shapes
    config = backbone.get_config()
    for key in init_kwargs:
        assert key in config, f"get_config lacks the argument {key!r}"
    restored = backbone_cls.from_config(config)
    restored.set_weights(backbone.get_weights())
    assert_allclose(restored(input_data), output, msg="from_config round trip")
    return output


def run_saving_test(model, input_data, tmp_path, atol=1e-6):
    """``model.save`` → ``keras.models.load_model`` gives identical outputs."""
    path = str(tmp_path / "model.keras")
    expected = model.predict_on_batch(input_data) if hasattr(
        model, "predict_on_batch") else model(input_data)
    model.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is type(model)
    actual = restored.predict_on_batch(input_data) if hasattr(
        restored, "predict_on_batch") else restored(input_data)
    assert_allclose(actual, expected, atol=atol, msg="saved model round trip")
    return restored


def on_both_engines(fn):
    """``(fn() on the TensorFlow engine, fn() on the Python engine)``: what
    the tests of a Python implementation compare."""
    with engine_scope("tensorflow"):
        tensorflow = fn()
    with engine_scope("python"):
        python = fn()
    return tensorflow, python
