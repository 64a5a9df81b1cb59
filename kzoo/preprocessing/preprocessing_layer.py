"""The base of every shared preprocessing layer and tokenizer.

Each layer has two implementations of one algorithm (see
``kzoo.preprocessing.engine``): TensorFlow ops (and tensorflow-text), which
run inside ``tf.data`` and exported graphs, and a Python one (Hugging Face
``tokenizers`` and numpy) that needs no TensorFlow. A method decorated with
``preprocessing_function`` runs its TensorFlow body, or, with the Python
engine, the layer's method of the same name prefixed ``python_``
(``call`` → ``python_call``, ``_detokenize`` → ``python_detokenize``). Only
the conversion at the edges differs between the ways in:

* inputs: Python lists, strings, numpy arrays, ``tf.Tensor`` / ``tf.RaggedTensor``
  and the current backend's tensors are all accepted;
* outputs: inside a ``tf.function`` / ``tf.data`` map they stay TensorFlow
  tensors (ragged where the data is ragged); called eagerly, dense numeric
  outputs become tensors of the current Keras backend (numpy arrays inside
  ``numpy_outputs()``), ragged ones nested Python lists and strings Python
  ``str``.

The Python implementations take and return Python values: ``str`` and lists
of ``str`` for text, numpy arrays for dense numbers, lists of 1-D numpy
arrays for ragged rows (``to_python`` gives inputs that form).
"""

import contextlib
import functools
import threading

import keras
import numpy as np

from kzoo.preprocessing.engine import (
    engine,
    in_tensorflow_graph,
    is_tensorflow_value,
    tensorflow_imported,
    tensorflow_installed,
    tf,
)

_STATE = threading.local()


def _depth():
    return getattr(_STATE, "depth", 0)


def to_valid_utf8(inputs):
    """Replaces bytes that are not valid UTF-8 with U+FFFD (never fails)."""
    return tf.strings.unicode_transcode(
        inputs,
        input_encoding="UTF-8",
        output_encoding="UTF-8",
        errors="replace",
        replacement_char=0xFFFD,
    )


def is_string_dtype(dtype):
    return tf.as_dtype(dtype) == tf.string


def _python_to_tf(x, dtype):
    """Python scalars / (nested) lists to a tf.Tensor or tf.RaggedTensor."""
    if isinstance(x, (str, bytes)):
        return tf.constant(x, dtype=tf.string)
    if isinstance(x, (list, tuple)):
        if len(x) == 0:
            return tf.constant([], dtype=dtype or tf.string)
        if any(isinstance(v, (str, bytes)) for v in x):
            for i, v in enumerate(x):
                if not isinstance(v, (str, bytes)):
                    raise TypeError(
                        f"Item {i} of the text batch is {type(v).__name__} {v!r}, "
                        "not a str: every item must be a str (use \"\" for an "
                        "empty text).")
        if isinstance(x, tuple) or any(
            not isinstance(v, (str, bytes, int, float, list, tuple)) for v in x
        ):
            # A tuple is a structure (segments), not data; so is a list of
            # tensors or arrays: convert each element.
            return type(x)(to_tf(v, dtype) for v in x)
        if all(isinstance(v, (str, bytes)) for v in x):
            return tf.constant(list(x), dtype=tf.string)  # numpy drops trailing NULs
        try:
            array = np.asarray(x)
        except ValueError:  # ragged nesting on numpy >= 1.24
            array = None
        if array is not None and array.dtype.kind in "US":
            # Nested text: tf.constant keeps trailing NULs, numpy's
            # fixed-width strings drop them.
            return tf.constant(list(x), dtype=tf.string)
        if array is not None and array.dtype != object:
            return _numpy_to_tf(array, dtype)
        # The data decides between text and numbers; ``dtype`` picks the width.
        flat = tf.nest.flatten(list(x))
        ragged_dtype = dtype
        if flat and isinstance(flat[0], (str, bytes)):
            ragged_dtype = tf.string
        elif flat and dtype is not None and is_string_dtype(dtype):
            ragged_dtype = tf.int32 if isinstance(flat[0], (int, np.integer)) else None
        return tf.ragged.constant(list(x), dtype=ragged_dtype)
    if isinstance(x, (int, float)) and dtype is not None and not is_string_dtype(dtype):
        return tf.convert_to_tensor(x, dtype=dtype)
    return tf.convert_to_tensor(x, dtype=dtype)


def _numpy_to_tf(array, dtype):
    if array.dtype.kind in "US":
        return tf.constant(array.astype(object).tolist(), dtype=tf.string)
    if array.dtype == object:
        return tf.constant(array.tolist(), dtype=tf.string)
    if array.size == 0 and dtype is not None:
        return tf.zeros(array.shape, dtype=dtype)
    if (dtype is not None and array.dtype.kind in "iu"
            and tf.as_dtype(dtype).is_integer):
        # Python ints arrive as int64: use the layer's integer dtype.
        return tf.convert_to_tensor(array.astype(tf.as_dtype(dtype).as_numpy_dtype))
    return tf.convert_to_tensor(array)


def to_tf(x, dtype=None):
    """Converts one input (any of the accepted kinds) to a TF (ragged) tensor.

    Args:
        x: the input.
        dtype: the dtype an empty Python list should get (``tf.string`` for
            text, an integer dtype for ids).
    """
    if x is None or isinstance(x, (tf.Tensor, tf.RaggedTensor, tf.SparseTensor)):
        return x
    if isinstance(x, tf.Variable):
        return tf.convert_to_tensor(x)
    if isinstance(x, np.ndarray):
        return _numpy_to_tf(x, dtype)
    if isinstance(x, (list, tuple, str, bytes)):
        return _python_to_tf(x, dtype)
    if isinstance(x, (int, float, np.generic)):
        return tf.convert_to_tensor(x, dtype=dtype)
    # A tensor of the current backend (jax.Array, torch.Tensor).
    return _numpy_to_tf(np.asarray(keras.ops.convert_to_numpy(x)), dtype)


def _decode(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def from_tf(x):
    """Converts one eager TF output to the user-facing form (see module doc)."""
    if isinstance(x, tf.RaggedTensor):
        return _decode(x.to_list())
    if isinstance(x, tf.Tensor):
        if x.dtype == tf.string:
            value = x.numpy()
            return _decode(value.tolist() if isinstance(value, np.ndarray) else value)
        return _to_backend(x.numpy())
    return x


def _to_backend(value):
    """A numpy array as a tensor of the current backend. On JAX
    ``jax.device_put``: ``keras.ops.convert_to_tensor`` (``jnp.asarray``)
    compiles a conversion for every new shape, which an eager preprocessor
    met on each new batch shape; ``device_put`` compiles nothing and gives
    the same dtypes (int64 -> int32 without x64)."""
    if keras.backend.backend() == "jax":
        import jax

        return jax.device_put(value)
    return keras.ops.convert_to_tensor(value)


def _is_text(value):
    return isinstance(value, (str, bytes, np.str_, np.bytes_))


def _python_text(value):
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def to_python(x):
    """Converts one input to the form the Python implementations take.

    Text becomes ``str`` (bytes decoded as UTF-8, invalid bytes replaced by
    U+FFFD) or a (nested) list of ``str``; numbers a numpy array, or a list
    of numpy arrays when the rows differ in length; a tuple stays a tuple of
    converted members and a dict a dict; tensors of any backend become
    numpy.
    """
    if x is None:
        return None
    if _is_text(x):
        return _python_text(x)
    if isinstance(x, dict):
        return {k: to_python(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(to_python(v) for v in x)
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "USO":
            return to_python(x.tolist())
        return x
    if isinstance(x, list):
        if not x:
            return []
        if any(_is_text(v) for v in x):
            for i, v in enumerate(x):
                if not _is_text(v):
                    raise TypeError(
                        f"Item {i} of the text batch is {type(v).__name__} "
                        f"{v!r}, not a str: every item must be a str (use \"\" "
                        "for an empty text).")
            return [_python_text(v) for v in x]
        if any(isinstance(v, list) and v and _is_text(v[0]) for v in x):
            return [to_python(v) for v in x]
        if all(isinstance(v, (int, float, np.generic)) for v in x):
            return np.asarray(x)
        rows = [to_python(v) for v in x]
        if all(isinstance(r, np.ndarray) for r in rows):
            if len({r.shape for r in rows}) == 1:
                return np.stack(rows)
            if all(r.ndim == 1 for r in rows):
                return rows
        return rows
    if isinstance(x, (int, float, np.generic)):
        return np.asarray(x)
    if is_tensorflow_value(x):
        if isinstance(x, tf.RaggedTensor):
            return to_python(x.to_list())
        return to_python(x.numpy())
    return np.asarray(keras.ops.convert_to_numpy(x))


def from_python(x):
    """Converts one eager Python output to the user-facing form: dense
    numeric arrays to tensors of the current backend (numpy inside
    ``numpy_outputs()``), ragged rows to nested lists, text to ``str``."""
    if isinstance(x, dict):
        return {k: from_python(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(from_python(v) for v in x)
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "USO":
            return x.tolist()
        if getattr(_STATE, "numpy_outputs", False):
            return x
        return _to_backend(x)
    if isinstance(x, list):
        return [v.tolist() if isinstance(v, np.ndarray) else v for v in x]
    return x


def pad_rows(rows, length, pad_value=0, dtype="int32"):
    """Ragged rows (a list of 1-D sequences) as a dense
    ``[len(rows), length]`` numpy array: each row truncated to ``length`` or
    padded with ``pad_value`` (``length=None``: the longest row's length)."""
    if length is None:
        length = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), length), pad_value, dtype=dtype)
    for i, row in enumerate(rows):
        row = row[:length]
        out[i, :len(row)] = row
    return out


@contextlib.contextmanager
def numpy_outputs():
    """Eager Python-engine calls in the block return numpy arrays instead of
    backend tensors (an input pipeline feeding Keras wants numpy)."""
    previous = getattr(_STATE, "numpy_outputs", False)
    _STATE.numpy_outputs = True
    try:
        yield
    finally:
        _STATE.numpy_outputs = previous


def _has_tensorflow_input(args, kwargs):
    """Whether an argument (or a member of a tuple / dict argument) is a
    TensorFlow value; lists hold data, not tensors, and are not walked."""
    if not tensorflow_imported():
        return False
    stack = list(args) + list(kwargs.values())
    while stack:
        value = stack.pop()
        if isinstance(value, tuple):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif is_tensorflow_value(value):
            return True
    return False


def use_python(args=(), kwargs=None, engine_name=None):
    """Whether a call on these arguments runs the Python implementation:
    not inside a TensorFlow graph nor on TensorFlow values, and the engine
    (``engine_name``, default ``engine()``) is Python."""
    if in_tensorflow_graph() or _has_tensorflow_input(args, kwargs or {}):
        return False
    return (engine_name or engine()) == "python"


def _python_name(fn):
    return "python_" + fn.__name__.lstrip("_")


def _not_converted(fn):
    """Marks ``fn`` as one that TensorFlow's autograph calls as it is (what
    ``tf.autograph.experimental.do_not_convert`` marks, without importing
    TensorFlow): a ``tf.data`` map or ``tf.function`` that calls a layer
    must not rewrite the engine dispatch into graph control flow."""
    fn.autograph_info__ = frozenset()
    return fn


def preprocessing_function(fn):
    """Wraps a method so it converts its inputs and eager outputs, and runs
    the TensorFlow body or the layer's Python implementation
    (``python_<name>``), as the engine says (see the module doc).

    Only the outermost wrapped call converts, so a wrapped method may call
    another wrapped method and keep working on TF tensors (or Python values).
    """
    python_name = _python_name(fn)

    def tensorflow_call(self, args, kwargs):
        outermost = _depth() == 0
        dtype = getattr(self, "input_dtype", None)
        if outermost:
            args = tuple(tf.nest.map_structure(lambda v: to_tf(v, dtype), a)
                         if isinstance(a, dict) else to_tf(a, dtype)
                         for a in args)
        _STATE.depth = _depth() + 1
        try:
            outputs = tf.autograph.experimental.do_not_convert(fn)(
                self, *args, **kwargs)
        finally:
            _STATE.depth = _depth() - 1
        if outermost and tf.executing_eagerly():
            outputs = tf.nest.map_structure(
                from_tf, outputs, expand_composites=False
            )
        return outputs

    def python_call(self, args, kwargs):
        implementation = getattr(self, python_name, None)
        if implementation is None:
            raise NotImplementedError(
                f"{type(self).__name__}.{fn.__name__} has no Python "
                "implementation yet: install TensorFlow to run it "
                "(pip install 'kzoo[tensorflow]').")
        outermost = _depth() == 0
        if outermost:
            args = tuple(to_python(a) for a in args)
        _STATE.depth = _depth() + 1
        try:
            outputs = implementation(*args, **kwargs)
        finally:
            _STATE.depth = _depth() - 1
        if outermost:
            outputs = from_python(outputs)
        return outputs

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        if _depth() > 0:  # a nested call runs where its caller runs
            python = getattr(_STATE, "python", False)
            return (python_call if python else tensorflow_call)(self, args, kwargs)
        python = use_python(args, kwargs)
        if (python and getattr(self, python_name, None) is None
                and tensorflow_installed()):
            python = False  # no Python implementation: TensorFlow's
        _STATE.python = python
        try:
            return (python_call if python else tensorflow_call)(self, args, kwargs)
        finally:
            _STATE.python = False

    wrapper.python_name = python_name
    return _not_converted(wrapper)


def _wrapped_call(cls):
    wrapped = cls.__dict__.get("_kzoo_wrapped_call")
    if wrapped is None:
        wrapped = preprocessing_function(cls.call)
        setattr(cls, "_kzoo_wrapped_call", wrapped)
    return wrapped


class PreprocessingLayer(keras.layers.Layer):
    """Base class of kzoo's preprocessing layers (no weights, TF ops inside).

    Subclasses implement ``call`` with TensorFlow ops on TF (ragged) tensors
    and set ``input_dtype`` (the dtype an empty Python list is read as).
    Calling the layer converts inputs and outputs as the module docstring
    says, on every Keras backend and inside ``tf.data``.
    """

    input_dtype = "int32"

    def __init__(self, **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    @_not_converted
    def __call__(self, *args, **kwargs):
        return _wrapped_call(type(self))(self, *args, **kwargs)

    def compute_output_spec(self, *args, **kwargs):
        raise NotImplementedError(
            f"{type(self).__name__} is a preprocessing layer: call it on data "
            "(eagerly or inside tf.data), not inside a functional model."
        )


def check_type(name, value, types, what):
    """Raises a TypeError naming the argument when ``value`` has a wrong type."""
    if not isinstance(value, types) or isinstance(value, bool) and bool not in (
        types if isinstance(types, tuple) else (types,)
    ):
        raise TypeError(
            f"`{name}` must be {what}, got {type(value).__name__} {value!r}."
        )
    return value


class RandomPreprocessingLayer(PreprocessingLayer):
    """A preprocessing layer that draws random numbers from a seeded stream.

    The stream is a ``tf.random.Generator`` (Philox) keyed by ``seed`` the
    first time the layer draws (keyed, not counter-offset, so that nearby
    seeds give independent streams): a layer built with the same seed gives the same outputs
    for the same sequence of calls, eagerly or inside a (non-parallel)
    ``tf.data`` map. ``seed=None`` draws from a non-deterministic state.

    The Python implementations draw from ``python_generator``, a numpy
    Philox generator keyed by the same seed: the same distributions, not
    the same draws as TensorFlow's stream.
    """

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        if seed is not None:
            check_type("seed", seed, int, "an int or None")
        self.seed = seed
        self._generator_holder = []  # a list keeps it out of Keras' tracking

    @property
    def python_generator(self):
        """The numpy ``Generator`` the Python implementation draws from."""
        holder = self.__dict__.get("_python_generator_holder")
        if holder is None:
            holder = []
            object.__setattr__(self, "_python_generator_holder", holder)
        if not holder:
            key = None if self.seed is None else self.seed % 2**64
            holder.append(np.random.Generator(np.random.Philox(key=key)))
        return holder[0]

    @property
    def generator(self):
        if not self._generator_holder:
            with tf.init_scope():
                if self.seed is None:
                    gen = tf.random.Generator.from_non_deterministic_state()
                else:
                    gen = tf.random.Generator.from_key_counter(
                        key=self.seed, counter=[0, 0], alg="philox"
                    )
            self._generator_holder.append(gen)
        return self._generator_holder[0]

    def reset_seed(self, seed=None):
        """Restarts the random stream (from ``seed``, or the layer's own)."""
        if seed is not None:
            self.seed = seed
        self._generator_holder.clear()
        self.__dict__.get("_python_generator_holder", []).clear()

    def set_python_generator(self, generator):
        """Makes the Python implementation draw from ``generator`` (a numpy
        ``Generator``) from now on: a data source that keys each batch's
        draws by the batch (``kzoo.data.ShardBatches``) hands its own."""
        if not isinstance(generator, np.random.Generator):
            raise TypeError(f"`generator` must be a numpy Generator, got "
                            f"{type(generator).__name__}.")
        self.python_generator  # noqa: B018 (makes the holder)
        self.__dict__["_python_generator_holder"][:] = [generator]

    def get_config(self):
        config = super().get_config()
        config.update({"seed": self.seed})
        return config
