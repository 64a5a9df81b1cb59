"""The Transformer's inner products, norms and activations as single ops.

Each function here has one reference written with ``keras.ops`` (the
``*_reference`` functions, what the tests hold every backend to) and, on a
backend with a fused kernel that Keras does not reach, that kernel
(``transformer_torch``, ``transformer_jax``, ``transformer_tensorflow``;
only the active backend's module is imported):

- ``linear``: a matrix product with its bias (and optionally its
  activation or a residual sum) in the same kernel (PyTorch's oneDNN linear with a fused
  bias and GELU / ReLU at inference, ``F.linear``'s ``addmm`` otherwise;
  TensorFlow's ``BiasAdd``), where ``keras.ops`` runs the bias addition as
  a second pass over the output.
- ``linears``: one input's products with several kernels (a Transformer
  block's query, key and value projections) as one product with the
  kernels side by side; PyTorch at inference keeps that concatenation
  between calls (until a kernel changes) and runs one oneDNN linear.
- ``layer_norm``: PyTorch's fused layer norm in the input's dtype (it
  accumulates in float32 itself), without Keras' casts to float32 and back.
- ``gelu``: the backend's own GELU kernel, exact or tanh-approximate.
- ``attention``: PyTorch's fused scaled dot-product attention; on JAX
  each of its two products as one ``lax.dot_general`` with the batch and
  head axes leading (a batched matrix product to XLA:CPU, where
  ``jax.nn.dot_product_attention`` and ``jnp.einsum`` alone run 3-5x
  slower at BERT's shapes); on the ``[batch, length, heads, head_dim]`` layout, also
  on a head-major cache; in training with ``kzoo.ops.dropout`` on the
  probabilities (PyTorch's bfloat16 batched products on a CPU with
  autograd too: the fused kernel's backward is slow there).
- ``update_cache``: a generation step's keys and values written into a
  head-major key/value cache at a position; on PyTorch, with
  ``in_place=True`` and no gradient wanted, written into the cache's own
  storage (``keras.ops.slice_update`` copies the whole cache to change a
  few rows).
- ``cached_self_attention``: a generation step's attention from its fused
  query/key/value projection: the keys and values written into the cache,
  the queries attending causally over it, the heads merged back. One call
  per layer and step where the written-out form is a dozen small ops; on
  PyTorch (eager) it reads only the cache's filled positions, and a
  one-token step needs no mask at all (every filled position is visible).

Eager PyTorch runs every Keras op with its own dtype and conversion checks;
these call the kernel directly, so a small op (a generation step's) costs
little more than the kernel itself.
"""

import importlib
import math

import keras
from keras import ops

from kzoo.ops import dropout_mask

#: added to the attention scores of masked keys (finite: a query row with
#: no allowed key attends uniformly instead of producing NaN)
MASKED_SCORE = -1e9


#: ``linear``'s ``activation`` values
ACTIVATIONS = (None, "relu", "gelu", "gelu_approximate")


def check_activation(activation):
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"`activation` must be one of {ACTIVATIONS} (apply any other "
            f"to `linear`'s output), got {activation!r}.")


def activate(y, activation):
    """``y`` through ``linear``'s ``activation`` (kzoo.ops kernels)."""
    if activation is None:
        return y
    if activation == "relu":
        return ops.relu(y)
    return gelu(y, approximate=activation == "gelu_approximate")


def linear_reference(x, kernel, bias=None, activation=None, residual=None):
    """``activation(matmul(x, kernel) + bias) + residual`` with ``keras.ops``."""
    check_activation(activation)
    y = ops.matmul(x, kernel)
    if bias is not None:
        y = ops.add(y, bias)
    if activation == "relu":
        y = ops.relu(y)
    elif activation is not None:
        y = gelu_reference(y, approximate=activation == "gelu_approximate")
    return y if residual is None else ops.add(y, residual)


def linears_reference(x, kernels, biases=None):
    """``linears`` with ``keras.ops``: each kernel flattened to
    ``[in, out]``, ``linear_reference`` with its bias, the product
    unflattened to ``[..., *kernel.shape[1:]]``."""
    biases = _check_linears(x, kernels, biases)
    outputs = []
    for kernel, bias in zip(kernels, biases):
        out_shape = tuple(kernel.shape[1:])
        width = math.prod(out_shape)
        kernel = ops.reshape(kernel, (kernel.shape[0], width))
        if bias is not None:
            bias = ops.reshape(bias, (width,))
        y = linear_reference(x, kernel, bias)
        outputs.append(ops.reshape(y, tuple(ops.shape(y)[:-1]) + out_shape))
    return outputs


def _check_linears(x, kernels, biases):
    """``biases`` as a list of one entry per kernel (None for none); an
    error unless the kernels and biases fit ``x`` and each other."""
    if not isinstance(kernels, (list, tuple)) or not kernels:
        raise ValueError(
            "`kernels` must be a non-empty list of [in, ...] kernels, got "
            f"{type(kernels).__name__}.")
    if biases is None:
        biases = [None] * len(kernels)
    if not isinstance(biases, (list, tuple)) or len(biases) != len(kernels):
        raise ValueError(
            "`biases` must be None or a list of one bias (or None) per "
            f"kernel: {len(kernels)} kernels, got {biases!r:.80}.")
    width_in = x.shape[-1]
    for i, (kernel, bias) in enumerate(zip(kernels, biases)):
        if len(kernel.shape) < 2 or (width_in is not None
                                     and kernel.shape[0] != width_in):
            raise ValueError(
                f"`kernels[{i}]` must be [in, ...] with in = the input's last "
                f"size {width_in}, got shape {tuple(kernel.shape)}.")
        if bias is not None and tuple(bias.shape) != tuple(kernel.shape[1:]):
            raise ValueError(
                f"`biases[{i}]` must have its kernel's output shape "
                f"{tuple(kernel.shape[1:])}, got {tuple(bias.shape)}.")
    return list(biases)


def layer_norm_reference(x, gamma=None, beta=None, epsilon=1e-5):
    """Layer norm over the last axis with ``keras.ops``, computed in float32
    (or wider) and returned in ``x``'s dtype."""
    dtype = keras.backend.standardize_dtype(x.dtype)
    compute = keras.backend.result_type(dtype, "float32")
    x = ops.cast(x, compute)
    mean = ops.mean(x, axis=-1, keepdims=True)
    variance = ops.mean(ops.square(x - mean), axis=-1, keepdims=True)
    y = (x - mean) * ops.rsqrt(variance + epsilon)
    if gamma is not None:
        y = y * ops.cast(gamma, compute)
    if beta is not None:
        y = y + ops.cast(beta, compute)
    return ops.cast(y, dtype)


def gelu_reference(x, approximate=False):
    """GELU written out: ``x/2 (1 + erf(x/sqrt 2))``, or with ``approximate``
    the tanh form ``x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    x = ops.convert_to_tensor(x)
    half = ops.cast(0.5, x.dtype)
    if approximate:
        inner = ops.cast((2.0 / 3.141592653589793) ** 0.5, x.dtype) * (
            x + ops.cast(0.044715, x.dtype) * x * x * x)
        return half * x * (ops.cast(1.0, x.dtype) + ops.tanh(inner))
    return half * x * (ops.cast(1.0, x.dtype)
                       + ops.erf(x * ops.cast(0.5 ** 0.5, x.dtype)))


def attention_reference(query, key, value, mask=None, scale=None,
                        key_layout="bkhd", dropout=0.0, seed=None):
    """Softmax attention written out with ``keras.ops``, the softmax in
    float32, ``kzoo.ops.dropout`` on the probabilities (see ``attention``
    for the arguments)."""
    _check_key_layout(key_layout)
    _check_dropout(dropout)
    if scale is None:
        scale = 1.0 / float(query.shape[-1]) ** 0.5
    scores = ops.einsum(f"bqhd,{key_layout}->bhqk", query, key)
    scores = ops.cast(scores, "float32") * scale
    if mask is not None:
        scores = scores + ops.where(ops.cast(mask, "bool"), 0.0, MASKED_SCORE)
    probabilities = ops.cast(ops.softmax(scores, axis=-1), query.dtype)
    if dropout:
        probabilities = dropout_mask.dropout(probabilities, dropout, seed)
    return ops.einsum(f"bhqk,{key_layout}->bqhd", probabilities, value)


def update_cache_reference(cache, key, value, index, in_place=False):
    """``update_cache`` with ``keras.ops.slice_update`` (a new tensor; the
    ``in_place`` hint is ignored)."""
    _check_cache_update(cache, key, value)
    update = ops.transpose(ops.stack([key, value], axis=1),
                           (0, 1, 3, 2, 4))  # [batch, 2, heads, length, head_dim]
    return ops.slice_update(cache, (0, 0, 0, index, 0),
                            ops.cast(update, cache.dtype))


def cached_self_attention_reference(qkv, cache, index, in_place=False):
    """``cached_self_attention`` with ``keras.ops``: ``update_cache_reference``
    then ``attention_reference`` over the whole cache with a causal mask
    (the ``in_place`` hint is ignored)."""
    batch, length, heads, head_dim = _check_cached_self_attention(qkv, cache)
    query, key, value = (ops.reshape(t, (batch, length, heads, head_dim))
                         for t in ops.split(qkv, 3, axis=-1))
    cache = update_cache_reference(cache, key, value, index)
    queries = ops.arange(length, dtype="int32") + ops.cast(index, "int32")
    keys = ops.arange(ops.shape(cache)[3], dtype="int32")
    mask = keys[None, None, None, :] <= queries[None, None, :, None]
    attended = attention_reference(query, cache[:, 0], cache[:, 1], mask,
                                   key_layout="bhkd")
    return ops.reshape(attended, (batch, length, heads * head_dim)), cache


def _check_cached_self_attention(qkv, cache):
    """``(batch, length, heads, head_dim)`` of valid inputs; else an error."""
    if len(cache.shape) != 5 or cache.shape[1] != 2:
        raise ValueError(
            "`cache` must be [batch, 2, heads, max_length, head_dim] (keys, "
            f"then values, head-major), got shape {tuple(cache.shape)}.")
    heads, head_dim = cache.shape[2], cache.shape[4]
    if len(qkv.shape) != 3 or qkv.shape[-1] != 3 * heads * head_dim:
        raise ValueError(
            "`qkv` must be [batch, length, 3 * heads * head_dim] = [batch, "
            f"length, {3 * heads * head_dim}] (queries, keys, values) for a "
            f"cache of {heads} heads of size {head_dim}, got shape "
            f"{tuple(qkv.shape)}.")
    shape = ops.shape(qkv)
    return shape[0], shape[1], heads, head_dim


def _check_cache_update(cache, key, value):
    if len(cache.shape) != 5 or cache.shape[1] != 2:
        raise ValueError(
            "`cache` must be [batch, 2, heads, max_length, head_dim] (keys, "
            f"then values, head-major), got shape {tuple(cache.shape)}.")
    if tuple(key.shape) != tuple(value.shape) or len(key.shape) != 4:
        raise ValueError(
            "`key` and `value` must both be [batch, length, heads, head_dim], "
            f"got shapes {tuple(key.shape)} and {tuple(value.shape)}.")


def attention_tensors(query, key, value, key_layout, dropout):
    """A backend kernel's checked ``attention`` inputs as tensors, or None
    where their dtypes differ (the kernel then defers to the reference,
    whose type promotion it would otherwise repeat)."""
    _check_key_layout(key_layout)
    _check_dropout(dropout)
    tensors = tuple(ops.convert_to_tensor(t) for t in (query, key, value))
    return tensors if tensors[0].dtype == tensors[1].dtype == tensors[2].dtype else None


def _check_dropout(dropout):
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"`dropout` must be in [0, 1), got {dropout!r}.")


def _check_key_layout(key_layout):
    if key_layout not in ("bkhd", "bhkd"):
        raise ValueError(
            f"`key_layout` must be 'bkhd' ([batch, keys, heads, head_dim]) or "
            f"'bhkd' ([batch, heads, keys, head_dim]), got {key_layout!r}.")


def _kernels():
    """The active backend's kernel module, or None where it has none."""
    backend = keras.backend.backend()
    if backend not in ("jax", "tensorflow", "torch"):
        return None
    return importlib.import_module(f"kzoo.ops.transformer_{backend}")


_KERNELS = _kernels()
_linear = getattr(_KERNELS, "linear", linear_reference)
_linears = getattr(_KERNELS, "linears", linears_reference)
_layer_norm = getattr(_KERNELS, "layer_norm", layer_norm_reference)
_gelu = getattr(_KERNELS, "gelu", gelu_reference)
_attention = getattr(_KERNELS, "attention", attention_reference)
_update_cache = getattr(_KERNELS, "update_cache", update_cache_reference)
_cached_self_attention = getattr(_KERNELS, "cached_self_attention",
                                 cached_self_attention_reference)


def linear(x, kernel, bias=None, activation=None, residual=None):
    """``activation(x @ kernel + bias) + residual``, the bias (and the
    activation, or the residual sum) applied inside the product's kernel
    where the backend has one.

    Args:
        x: float tensor ``[..., in]``.
        kernel: float tensor or variable ``[in, out]``.
        bias: optional float tensor or variable ``[out]``.
        activation: None, ``"relu"``, ``"gelu"`` (exact) or
            ``"gelu_approximate"`` (tanh form).
        residual: optional float tensor of the output's shape, added last
            (a Transformer block's skip connection).

    Returns:
        ``[..., out]``, in the dtype ``ops.matmul`` would give.
    """
    return _linear(x, kernel, bias, activation, residual)


def linears(x, kernels, biases=None):
    """One input's products with several kernels: ``x @ kernel + bias``
    for each, contracting ``x``'s last axis with each kernel's first, as
    one product with the kernels side by side where the backend has it.

    PyTorch at inference (no autograd, not under ``torch.compile``, on a
    CPU with oneDNN, on at least ``ONEDNN_MIN_ROWS`` rows) keeps the
    concatenated kernel and bias between calls, for as long as the same
    kernel and bias tensors are passed unchanged (an in-place update, such
    as a Keras variable's ``assign``, makes a new one), and runs one oneDNN
    linear; each output is then a view of that product. Elsewhere it is
    one ``linear`` per kernel.

    Args:
        x: float tensor ``[..., in]``.
        kernels: list of float tensors or variables ``[in, *out_shape]``
            (out shapes may differ), in ``x``'s dtype.
        biases: None, or a list of one bias (tensor, variable, or None) per
            kernel, each of its kernel's ``out_shape``.

    Returns:
        A list of tensors ``[..., *out_shape]``, one per kernel.
    """
    return _linears(x, kernels, biases)


def layer_norm(x, gamma=None, beta=None, epsilon=1e-5):
    """Layer normalization over the last axis:
    ``(x - mean) / sqrt(variance + epsilon) * gamma + beta``, the statistics
    accumulated in at least float32 and the result in ``x``'s dtype.

    Args:
        x: float tensor ``[..., dim]``.
        gamma: optional scale ``[dim]`` (tensor or variable).
        beta: optional offset ``[dim]`` (tensor or variable).
        epsilon: float added to the variance.

    Returns:
        A tensor of ``x``'s shape and dtype.
    """
    return _layer_norm(x, gamma, beta, epsilon)


def gelu(x, approximate=False):
    """The Gaussian error linear unit ``x * Phi(x)``: exact (erf), or with
    ``approximate=True`` its tanh approximation (GPT-2's, Hugging Face's
    ``"gelu_new"``). Same shape and dtype as ``x``."""
    return _gelu(x, approximate)


def attention(query, key, value, mask=None, scale=None, key_layout="bkhd",
              dropout=0.0, seed=None):
    """Scaled dot-product attention, ``softmax(q k^T * scale + masked) v``
    per head, in the inputs' dtype, with optional dropout on the attention
    probabilities (training).

    Args:
        query: float tensor ``[batch, queries, heads, head_dim]``.
        key, value: float tensors ``[batch, keys, heads, head_dim]``, or with
            ``key_layout="bhkd"`` ``[batch, heads, keys, head_dim]`` (a
            head-major cache, read where it lies).
        mask: optional bool tensor broadcasting to ``[batch, heads, queries,
            keys]``, true where a query may attend to a key. A query with no
            allowed key attends to all keys alike (finite, not NaN; its
            gradient there is not defined).
        scale: float multiplying the scores. Defaults to
            ``1 / sqrt(head_dim)``.
        key_layout: ``"bkhd"`` (default) or ``"bhkd"``.
        dropout: float in [0, 1): the rate of ``kzoo.ops.dropout`` on the
            probabilities (0: none).
        seed: the dropout's seed: an int, a ``keras.random.SeedGenerator``
            or None (as ``kzoo.ops.dropout``).

    Returns:
        ``[batch, queries, heads, head_dim]``.
    """
    return _attention(query, key, value, mask, scale, key_layout, dropout, seed)


def update_cache(cache, key, value, index, in_place=False):
    """The key/value cache with ``length`` positions written at ``index``.

    Args:
        cache: float tensor ``[batch, 2, heads, max_length, head_dim]``: the
            keys (``cache[:, 0]``) and values (``cache[:, 1]``), head-major.
        key, value: float tensors ``[batch, length, heads, head_dim]``, the
            keys and values of positions ``index .. index + length - 1``.
        index: int or scalar int tensor, the first position written.
        in_place: bool. The caller owns ``cache`` and never reads its old
            value again (a generation loop that made it): the backend may
            then write into ``cache`` itself and return it, which PyTorch
            does when no gradient is wanted. With False (default) ``cache``
            is left unchanged and a new tensor is returned.

    Returns:
        The cache ``[batch, 2, heads, max_length, head_dim]`` in ``cache``'s
        dtype, equal to ``keras.ops.slice_update`` of the head-major keys
        and values (``update_cache_reference``).
    """
    return _update_cache(cache, key, value, index, in_place)


def cached_self_attention(qkv, cache, index, in_place=False):
    """Causal self-attention of ``length`` new positions over a key/value
    cache: a generation step's attention, from its fused projection.

    The keys and values of ``qkv`` are written into ``cache`` at ``index``
    (``update_cache``); the query of position ``index + i`` then attends to
    cache positions ``0 .. index + i`` (``attention`` with the causal mask
    over the cache); the heads are merged back into one axis. Cache
    positions after ``index + length - 1`` get no weight.

    Args:
        qkv: float tensor ``[batch, length, 3 * heads * head_dim]``: the
            queries, keys and values of positions ``index .. index + length
            - 1``, in that order along the last axis, each
            ``[heads, head_dim]`` flattened (GPT-2's ``c_attn`` output).
        cache: float tensor ``[batch, 2, heads, max_length, head_dim]``, as
            ``update_cache`` takes it.
        index: int or scalar int tensor, the position of the first row.
        in_place: bool, as ``update_cache``'s.

    Returns:
        ``(attended, cache)``: ``[batch, length, heads * head_dim]`` in
        ``qkv``'s dtype, before the output projection, and the updated
        cache.
    """
    return _cached_self_attention(qkv, cache, index, in_place)
