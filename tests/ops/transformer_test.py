"""kzoo.ops' Transformer primitives equal their keras.ops references (and the
references equal numpy written out by hand), forward and gradient, float32
and bfloat16, on the active backend."""

import math

import keras
import numpy as np
import pytest
from keras import ops

import kzoo.ops
from kzoo.ops import transformer
from kzoo.testing import assert_allclose, gradient, to_numpy

# float32: reassociated sums; bfloat16: 8-bit mantissas, rounded per op
TOLERANCE = {"float32": 2e-5, "bfloat16": 3e-2}
DTYPES = tuple(TOLERANCE)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _close(actual, expected, dtype, scale=1.0):
    tol = TOLERANCE[dtype] * scale
    assert_allclose(np.asarray(to_numpy(ops.cast(actual, "float32")))
                    if not isinstance(actual, np.ndarray) else actual,
                    expected, atol=tol, rtol=tol)


def _in(dtype, value):
    return ops.cast(ops.convert_to_tensor(value), dtype)


def _check(fn, reference, x, dtype, scale=1.0):
    """fn(x) equals reference(x) in ``dtype``, and so do their gradients
    with respect to x (x is float32 numpy, cast to ``dtype`` inside)."""
    _close(fn(_in(dtype, x)), to_numpy(ops.cast(reference(_in(dtype, x)),
                                                "float32")), dtype, scale)
    got = gradient(lambda z: ops.cast(fn(ops.cast(z, dtype)), "float32"), x)
    want = gradient(
        lambda z: ops.cast(reference(ops.cast(z, dtype)), "float32"), x)
    _close(got, want, dtype, scale)


# --- linear ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_bias", (True, False))
@pytest.mark.parametrize("activation", transformer.ACTIVATIONS)
@pytest.mark.parametrize("with_residual", (False, True))
def test_linear_equals_reference(dtype, with_bias, activation, with_residual):
    # The forward pass runs without autograd (PyTorch's inference kernel),
    # the gradient with it.
    # Pre-activations kept away from 0 (positive inputs, each output column
    # of one sign), where ReLU's gradient would flip on a rounding.
    rng = _rng(1)
    x = (np.abs(rng.normal(size=(2, 5, 8))) + 0.5).astype("float32")
    signs = np.array([1, -1, 1, -1, 1, -1])
    kernel = _in(dtype, (np.abs(rng.normal(size=(8, 6))) * signs / 3).astype("float32"))
    bias = _in(dtype, (np.abs(rng.normal(size=(6,))) * signs).astype("float32")
               ) if with_bias else None
    residual = _in(dtype, rng.normal(size=(2, 5, 6)).astype("float32")
                   ) if with_residual else None
    _check(lambda z: kzoo.ops.linear(z, kernel, bias, activation, residual),
           lambda z: transformer.linear_reference(z, kernel, bias, activation,
                                                  residual),
           x, dtype)


@pytest.mark.parametrize("with_bias", (True, False))
@pytest.mark.parametrize("activation", (None, "gelu"))
def test_float32_linear_gradients_on_many_rows_match_numpy(with_bias, activation,
                                                            monkeypatch):
    # 3 x 40 rows with autograd: on PyTorch the product and both gradients
    # are oneDNN's linear (a spy checks it ran); numpy by hand, float64.
    rng = _rng(13)
    x = rng.normal(size=(3, 40, 16)).astype("float32")
    kernel = rng.normal(size=(16, 24)).astype("float32")
    bias = rng.normal(size=(24,)).astype("float32") if with_bias else None
    weights = rng.normal(size=(3, 40, 24)).astype("float32")
    ran = []
    if keras.backend.backend() == "torch":
        from kzoo.ops import transformer_torch

        original = transformer_torch._OneDNNLinear.apply
        monkeypatch.setattr(transformer_torch._OneDNNLinear, "apply",
                            lambda *a: ran.append(1) or original(*a))

    def loss(z, k, b):
        return ops.multiply(kzoo.ops.linear(z, k, b, activation), weights)

    pre = x.astype("float64") @ kernel + (0 if bias is None else bias)
    if activation == "gelu":
        erf = np.vectorize(math.erf)
        d_act = (0.5 * (1 + erf(pre / np.sqrt(2)))
                 + pre * np.exp(-pre ** 2 / 2) / np.sqrt(2 * np.pi))
    else:
        d_act = np.ones_like(pre)
    upstream = weights * d_act  # d loss / d (x @ kernel + bias)
    got_x = gradient(lambda z: loss(z, kernel, bias), x)
    assert_allclose(got_x, upstream @ kernel.T.astype("float64"), atol=1e-4, rtol=1e-4)
    got_k = gradient(lambda k: loss(x, k, bias), kernel)
    want_k = np.einsum("bri,bro->io", x.astype("float64"), upstream)
    assert_allclose(got_k, want_k, atol=1e-3, rtol=1e-4)
    if bias is not None:
        got_b = gradient(lambda b: loss(x, kernel, b), bias)
        assert_allclose(got_b, upstream.sum((0, 1)), atol=1e-3, rtol=1e-4)
    if keras.backend.backend() == "torch":
        assert ran


def test_linear_activations_and_errors():
    x = np.linspace(-3, 3, 12, dtype="float32").reshape(2, 6)
    kernel = np.eye(6, dtype="float32")
    assert_allclose(to_numpy(kzoo.ops.linear(x, kernel, activation="relu")),
                    np.maximum(x, 0), atol=1e-6)
    assert_allclose(to_numpy(kzoo.ops.linear(x, kernel, activation="gelu")),
                    to_numpy(transformer.gelu_reference(x)), atol=1e-5)
    with pytest.raises(ValueError, match="`activation` must be one of"):
        kzoo.ops.linear(x, kernel, activation="tanh")
    # no rows at all
    empty = kzoo.ops.linear(np.zeros((0, 6), "float32"), kernel, np.ones(6, "float32"),
                            "gelu")
    assert tuple(empty.shape) == (0, 6)


def test_linear_reference_is_the_product_plus_bias():
    rng = _rng(2)
    x, kernel = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    bias = rng.normal(size=(2,))
    got = transformer.linear_reference(x.astype("float32"), kernel.astype("float32"),
                                       bias.astype("float32"))
    assert_allclose(to_numpy(got), x @ kernel + bias, atol=1e-5, rtol=1e-5)


def test_linear_takes_variables():
    rng = _rng(3)
    x = rng.normal(size=(2, 3)).astype("float32")
    kernel = keras.Variable(rng.normal(size=(3, 4)).astype("float32"))
    bias = keras.Variable(rng.normal(size=(4,)).astype("float32"))
    assert_allclose(to_numpy(kzoo.ops.linear(x, kernel, bias)),
                    x @ to_numpy(kernel) + to_numpy(bias), atol=1e-5, rtol=1e-5)



# --- linears ------------------------------------------------------------------

def _numpy_linears(x, kernels, biases):
    out = []
    for kernel, bias in zip(kernels, biases):
        y = x @ kernel.reshape(kernel.shape[0], -1)
        if bias is not None:
            y = y + bias.reshape(-1)
        out.append(y.reshape(x.shape[:-1] + kernel.shape[1:]))
    return out


def _linears_inputs(seed, with_biases):
    # 80 rows: PyTorch's concatenated oneDNN product at inference
    rng = _rng(seed)
    x = rng.normal(size=(2, 40, 8)).astype("float32")
    kernels = [rng.normal(size=s).astype("float32") / 3
               for s in ((8, 2, 3), (8, 2, 3), (8, 5))]
    biases = [rng.normal(size=k.shape[1:]).astype("float32") for k in kernels]
    if with_biases == "none":
        biases = [None] * 3
    elif with_biases == "some":
        biases[1] = None
    return x, kernels, biases


@pytest.mark.parametrize("with_biases", ("all", "some", "none"))
def test_linears_match_numpy(with_biases):
    x, kernels, biases = _linears_inputs(11, with_biases)
    want = _numpy_linears(x, kernels, biases)
    for fn in (kzoo.ops.linears, transformer.linears_reference):
        got = fn(x, kernels, None if with_biases == "none" else biases)
        assert len(got) == 3
        for g, w in zip(got, want):
            assert tuple(g.shape) == w.shape
            assert_allclose(to_numpy(g), w, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_biases", ("all", "some"))
def test_linears_equal_reference(dtype, with_biases):
    # Forward without autograd (PyTorch's concatenated kernel), gradient
    # with it, of the outputs' sum of squares (every output takes part).
    x, kernels, biases = _linears_inputs(12, with_biases)
    kernels = [_in(dtype, k) for k in kernels]
    biases = [None if b is None else _in(dtype, b) for b in biases]

    def joined(fn):
        return lambda z: ops.concatenate(
            [ops.reshape(y, (2, 40, -1)) for y in fn(z, kernels, biases)], -1)

    _check(joined(kzoo.ops.linears), joined(transformer.linears_reference),
           x, dtype)


def test_linears_follow_changed_variables():
    # The same variables, assigned new values between calls (an optimizer
    # step, load_weights): each call uses the current values. Frozen, so
    # that PyTorch (no gradient wanted) runs its kept concatenation.
    x, kernels, biases = _linears_inputs(13, "all")
    k_vars = [keras.Variable(k, trainable=False) for k in kernels]
    b_vars = [keras.Variable(b, trainable=False) for b in biases]
    rng = _rng(14)
    for step in range(3):
        got = kzoo.ops.linears(x, k_vars, b_vars)
        want = _numpy_linears(x, [to_numpy(v) for v in k_vars],
                              [to_numpy(v) for v in b_vars])
        for g, w in zip(got, want):
            assert_allclose(to_numpy(g), w, atol=1e-5, rtol=1e-5)
        k_vars[step].assign(rng.normal(size=kernels[step].shape).astype("float32"))
        b_vars[2 - step].assign(rng.normal(size=biases[2 - step].shape)
                                .astype("float32"))


def test_linears_reject_mismatched_shapes():
    x, kernels, biases = _linears_inputs(15, "all")
    with pytest.raises(ValueError, match="non-empty list"):
        kzoo.ops.linears(x, [])
    with pytest.raises(ValueError, match=r"`kernels\[1\]` must be \[in, ...\]"):
        kzoo.ops.linears(x, [kernels[0], kernels[1][:4]])
    with pytest.raises(ValueError, match=r"`biases\[0\]` must have"):
        kzoo.ops.linears(x, kernels[:1], [biases[2]])
    with pytest.raises(ValueError, match="one bias"):
        kzoo.ops.linears(x, kernels, biases[:2])


@pytest.mark.backends("torch")
@pytest.mark.parametrize("activation,with_residual", [("gelu", False), (None, True)])
def test_linear_compiles_with_torch_compile(activation, with_residual):
    # At inference on enough rows the eager kernel is oneDNN's fused linear,
    # which inductor cannot lower: under torch.compile (Keras'
    # jit_compile=True on PyTorch) the op must leave the choice to inductor.
    import shutil

    import torch

    if not (shutil.which("g++") or shutil.which("c++")):
        pytest.skip("torch.compile's CPU code generation needs a C++ compiler")

    rng = _rng(4)
    x = rng.normal(size=(2, 40, 16)).astype("float32")  # 80 rows: oneDNN's size
    kernel = rng.normal(size=(16, 8)).astype("float32")
    bias = rng.normal(size=(8,)).astype("float32")
    residual = rng.normal(size=(2, 40, 8)).astype("float32") if with_residual else None
    args = [torch.from_numpy(a) if a is not None else None
            for a in (kernel, bias, residual)]
    compiled = torch.compile(lambda t: kzoo.ops.linear(
        t, args[0], args[1], activation=activation, residual=args[2]))
    with torch.no_grad():
        got = compiled(torch.from_numpy(x))
    expected = transformer.linear_reference(x, kernel, bias, activation, residual)
    assert_allclose(to_numpy(got), to_numpy(expected), atol=1e-5, rtol=1e-5)

# --- layer_norm --------------------------------------------------------------

def _numpy_layer_norm(x, gamma, beta, epsilon):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_equals_reference(dtype):
    rng = _rng(4)
    x = (rng.normal(size=(2, 5, 16)) * 3 + 1).astype("float32")
    gamma = _in(dtype, rng.normal(size=(16,)).astype("float32"))
    beta = _in(dtype, rng.normal(size=(16,)).astype("float32"))
    # the output's own rounding: values up to ~4, an ulp of bf16 there is 1/32
    _check(lambda z: kzoo.ops.layer_norm(z, gamma, beta, 1e-5),
           lambda z: transformer.layer_norm_reference(z, gamma, beta, 1e-5),
           x, dtype, scale=2.0)


def test_layer_norm_keeps_the_dtype_and_matches_numpy():
    rng = _rng(5)
    x = rng.normal(size=(3, 8)).astype("float32")
    gamma, beta = rng.normal(size=(8,)), rng.normal(size=(8,))
    want = _numpy_layer_norm(x.astype("float64"), gamma, beta, 1e-3)
    for fn in (kzoo.ops.layer_norm, transformer.layer_norm_reference):
        got = fn(x, gamma.astype("float32"), beta.astype("float32"), 1e-3)
        assert_allclose(to_numpy(got), want, atol=1e-5, rtol=1e-5)
        half = fn(_in("bfloat16", x), _in("bfloat16", gamma.astype("float32")),
                  _in("bfloat16", beta.astype("float32")), 1e-3)
        assert keras.backend.standardize_dtype(half.dtype) == "bfloat16"
    # without gamma / beta: the plain normalization
    assert_allclose(to_numpy(kzoo.ops.layer_norm(x, epsilon=1e-3)),
                    _numpy_layer_norm(x.astype("float64"), 1.0, 0.0, 1e-3),
                    atol=1e-5, rtol=1e-5)


# --- gelu --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", (False, True))
def test_gelu_equals_reference(dtype, approximate):
    x = np.linspace(-6, 6, 97, dtype="float32").reshape(1, 97)
    _check(lambda z: kzoo.ops.gelu(z, approximate),
           lambda z: transformer.gelu_reference(z, approximate), x, dtype)


def test_gelu_reference_matches_the_formulas():
    x = np.linspace(-5, 5, 41)
    exact = x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    for approximate, want in ((False, exact), (True, tanh)):
        for fn in (kzoo.ops.gelu, transformer.gelu_reference):
            assert_allclose(to_numpy(fn(x.astype("float32"), approximate)), want,
                            atol=1e-5, rtol=1e-5)


# --- attention ---------------------------------------------------------------

def _numpy_attention(q, k, v, mask, scale):
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) * scale
    scores = np.where(mask, scores, -1e9)
    scores = scores - scores.max(-1, keepdims=True)
    p = np.exp(scores)
    p = p / p.sum(-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", p, v)


def _attention_inputs(seed=6, empty_row=True):
    rng = _rng(seed)
    q, k, v = (rng.normal(size=(2, 4, 3, 8)).astype("float32") for _ in range(3))
    # [batch, 1, queries, keys]: padding, causal, and one row with no key
    # (whose output is defined, its gradient not)
    mask = np.tril(np.ones((4, 4), bool))[None, None].repeat(2, 0)
    mask[1, :, :, 3] = False
    if empty_row:
        mask[1, 0, 2, :] = False
    return q, k, v, mask


def test_attention_reference_matches_numpy():
    q, k, v, mask = _attention_inputs()
    want = _numpy_attention(q, k, v, mask, 0.3)
    for fn in (kzoo.ops.attention, transformer.attention_reference):
        got = fn(q, k, v, mask, 0.3)
        assert_allclose(to_numpy(got), want, atol=1e-5, rtol=1e-5)
        heads_first = [np.transpose(t, (0, 2, 1, 3)) for t in (k, v)]
        got = fn(q, *heads_first, mask, 0.3, key_layout="bhkd")
        assert_allclose(to_numpy(got), want, atol=1e-5, rtol=1e-5)
    # default scale: 1 / sqrt(head_dim); no mask: every key
    assert_allclose(to_numpy(kzoo.ops.attention(q, k, v)),
                    _numpy_attention(q, k, v, True, 8 ** -0.5), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("key_layout", ("bkhd", "bhkd"))
def test_attention_equals_reference(dtype, key_layout):
    q, k, v, mask = _attention_inputs(7, empty_row=False)
    if key_layout == "bhkd":
        k, v = (np.transpose(t, (0, 2, 1, 3)) for t in (k, v))
    k, v = _in(dtype, k), _in(dtype, v)
    _check(lambda z: kzoo.ops.attention(z, k, v, mask, key_layout=key_layout),
           lambda z: transformer.attention_reference(z, k, v, mask,
                                                     key_layout=key_layout),
           q, dtype)


@pytest.mark.parametrize("keys", (140, 300))  # PyTorch: batched products, then flash
@pytest.mark.parametrize("mask_kind", ("padding", "square", "none_padded", None))
@pytest.mark.parametrize("key_layout", ("bkhd", "bhkd"))
def test_bfloat16_attention_matches_numpy(keys, mask_kind, key_layout):
    # Inference in bfloat16 (no autograd): on PyTorch 2 x 3 x 40 x 140
    # scores run as batched products, 300 keys as the fused kernel; both
    # are the softmax attention of the bfloat16 inputs, to bfloat16 rounding.
    rng = _rng(8)
    q = rng.normal(size=(2, 40, 3, 8)).astype("float32")
    k, v = (rng.normal(size=(2, keys, 3, 8)).astype("float32") for _ in range(2))
    q, k, v = (to_numpy(ops.cast(_in("bfloat16", t), "float32")) for t in (q, k, v))
    if mask_kind == "padding":  # [batch, 1, 1, keys], a sequence of no token
        mask = np.ones((2, 1, 1, keys), bool)
        mask[0, ..., keys // 2:] = False
        mask[1] = False
    elif mask_kind == "square":  # [queries, keys]
        mask = rng.random((40, keys)) < 0.7
        mask[:, 0] = True
    elif mask_kind == "none_padded":  # every key allowed
        mask = np.ones((2, 1, 1, keys), bool)
    else:
        mask = None
    want = _numpy_attention(q, k, v, True if mask is None else mask, 0.3)
    if key_layout == "bhkd":
        k, v = (np.transpose(t, (0, 2, 1, 3)) for t in (k, v))
    got = kzoo.ops.attention(*(_in("bfloat16", t) for t in (q, k, v)), mask,
                             0.3, key_layout=key_layout)
    assert keras.backend.standardize_dtype(got.dtype) == "bfloat16"
    _close(got, want, "bfloat16")


@pytest.mark.backends("torch")
@pytest.mark.parametrize("mask_kind", ("padding", "none_padded", None))
def test_bfloat16_attention_compiles_with_torch_compile(mask_kind, monkeypatch):
    # Under torch.compile (Keras' jit_compile=True on PyTorch) the batched
    # products are traced too, an all-ones mask applied rather than checked.
    import shutil

    import torch

    from kzoo.ops import transformer_torch

    traced = []
    batched = transformer_torch._attention_by_batched_products
    monkeypatch.setattr(transformer_torch, "_attention_by_batched_products",
                        lambda *a: traced.append(1) or batched(*a))

    if not (shutil.which("g++") or shutil.which("c++")):
        pytest.skip("torch.compile's CPU code generation needs a C++ compiler")
    rng = _rng(10)
    q, k, v = (rng.normal(size=(2, 140, 3, 8)).astype("float32") for _ in range(3))
    q, k, v = (to_numpy(ops.cast(_in("bfloat16", t), "float32")) for t in (q, k, v))
    mask = None if mask_kind is None else np.ones((2, 1, 1, 140), bool)
    if mask_kind == "padding":
        mask[0, ..., 70:] = False
    want = _numpy_attention(q, k, v, True if mask is None else mask, 0.3)
    compiled = torch.compile(lambda *t: kzoo.ops.attention(*t, mask, 0.3))
    with torch.no_grad():
        got = compiled(*(_in("bfloat16", t) for t in (q, k, v)))
    assert got.dtype == torch.bfloat16 and traced
    _close(got, want, "bfloat16")


@pytest.mark.parametrize("masked", (False, True, "int"))
def test_bfloat16_self_attention_on_one_projection_matches_numpy(masked):
    # Queries, keys and values as the thirds of one product (what
    # kzoo.ops.linears gives): PyTorch lays all three out by heads at once.
    # A 0 / 1 integer mask reads as the boolean one.
    rng = _rng(9)
    qkv = rng.normal(size=(2, 140, 3 * 3 * 8)).astype("float32")
    qkv = to_numpy(ops.cast(_in("bfloat16", qkv), "float32"))
    q, k, v = (t.reshape(2, 140, 3, 8) for t in np.split(qkv, 3, axis=-1))
    mask = np.ones((2, 1, 1, 140), bool)
    if masked:
        mask[1, ..., 100:] = False
    want = _numpy_attention(q, k, v, mask, 8 ** -0.5)
    if masked == "int":
        mask = mask.astype("int32")
    parts = ops.split(_in("bfloat16", qkv), 3, axis=-1)
    got = kzoo.ops.attention(*(ops.reshape(t, (2, 140, 3, 8)) for t in parts),
                             mask)
    _close(got, want, "bfloat16")


def _dropped_attention_inputs(seed):
    # 2 x 3 x 140 x 140 scores: PyTorch's batched products in bfloat16
    rng = _rng(seed)
    q, k, v = (rng.normal(size=(2, 140, 3, 8)).astype("float32") for _ in range(3))
    mask = np.ones((2, 1, 1, 140), bool)
    mask[1, ..., 90:] = False
    return q, k, v, mask


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_dropout_matches_numpy(dtype):
    # The probabilities times kzoo.ops.dropout's scale mask of the same seed
    # (one draw per score, tests/ops/dropout_test.py), then the values.
    q, k, v, mask = _dropped_attention_inputs(11)
    q, k, v = (to_numpy(ops.cast(_in(dtype, t), "float32")) for t in (q, k, v))
    scale_mask = to_numpy(ops.cast(kzoo.ops.dropout(
        ops.ones((2, 3, 140, 140), dtype), 0.4, seed=5), "float32"))
    assert 0.3 < (scale_mask == 0).mean() < 0.5
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) * 0.3
    scores = np.where(mask, scores, -1e9)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True) * scale_mask
    want = np.einsum("bhqk,bkhd->bqhd", p, v)
    for fn in (kzoo.ops.attention, transformer.attention_reference):
        got = fn(*(_in(dtype, t) for t in (q, k, v)), mask, 0.3, dropout=0.4, seed=5)
        _close(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dropout", (0.0, 0.3))
def test_attention_gradient_equals_reference_in_training(dtype, dropout):
    # With autograd: on PyTorch bfloat16 keeps the batched products (the
    # fused kernel's backward is slow), float32 the fused kernel, or with
    # dropout the reference.
    q, k, v, mask = _dropped_attention_inputs(12)
    k, v = _in(dtype, k), _in(dtype, v)
    _check(lambda z: kzoo.ops.attention(z, k, v, mask, dropout=dropout, seed=7),
           lambda z: transformer.attention_reference(z, k, v, mask,
                                                     dropout=dropout, seed=7),
           q, dtype)


def test_attention_rejects_a_bad_dropout():
    q, k, v, mask = _attention_inputs()
    for fn in (kzoo.ops.attention, transformer.attention_reference):
        for rate in (-0.1, 1.0):
            with pytest.raises(ValueError, match=r"`dropout` must be in \[0, 1\)"):
                fn(q, k, v, mask, dropout=rate, seed=1)


def test_attention_rejects_an_unknown_key_layout():
    q, k, v, _ = _attention_inputs()
    with pytest.raises(ValueError, match="key_layout"):
        kzoo.ops.attention(q, k, v, key_layout="bqhd")


# --- update_cache ------------------------------------------------------------

def _cache_inputs(length, seed=8):
    rng = _rng(seed)
    cache = rng.normal(size=(2, 2, 3, 6, 4)).astype("float32")
    key, value = (rng.normal(size=(2, length, 3, 4)).astype("float32")
                  for _ in range(2))
    return cache, key, value


def _numpy_update_cache(cache, key, value, index):
    out = cache.copy()
    length = key.shape[1]
    out[:, 0, :, index:index + length] = np.transpose(key, (0, 2, 1, 3))
    out[:, 1, :, index:index + length] = np.transpose(value, (0, 2, 1, 3))
    return out


@pytest.mark.parametrize("in_place", (False, True))
@pytest.mark.parametrize("length, index", ((1, 0), (1, 5), (3, 2)))
@pytest.mark.parametrize("tensor_index", (False, True))
def test_update_cache_matches_numpy(in_place, length, index, tensor_index):
    cache, key, value = _cache_inputs(length)
    want = _numpy_update_cache(cache, key, value, index)
    at = ops.convert_to_tensor(index, "int32") if tensor_index else index
    for fn in (kzoo.ops.update_cache, transformer.update_cache_reference):
        given = ops.convert_to_tensor(cache.copy())
        got = fn(given, ops.convert_to_tensor(key), ops.convert_to_tensor(value),
                 at, in_place=in_place)
        assert_allclose(to_numpy(got), want, atol=0, rtol=0)
        if not in_place:  # the caller's cache is left as it was
            assert_allclose(to_numpy(given), cache, atol=0, rtol=0)


@pytest.mark.parametrize("in_place", (False, True))
def test_update_cache_of_repeated_rows(in_place):
    # A beam search's cache: one row repeated (a broadcast view on PyTorch,
    # whose rows share memory), each copy then written with its own keys.
    cache, key, value = _cache_inputs(1)
    repeated = np.repeat(cache[:1], 2, axis=0)
    got = kzoo.ops.update_cache(
        ops.repeat(ops.convert_to_tensor(cache[:1]), 2, axis=0),
        ops.convert_to_tensor(key), ops.convert_to_tensor(value), 4,
        in_place=in_place)
    assert_allclose(to_numpy(got), _numpy_update_cache(repeated, key, value, 4),
                    atol=0, rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_place", (False, True))
def test_update_cache_equals_reference(dtype, in_place):
    # No gradient wanted: PyTorch's in-place write when asked. (The
    # reference's slice_update has no gradient on TensorFlow; a generation
    # loop needs none.)
    cache, key, value = _cache_inputs(2, seed=9)
    key, value = _in(dtype, key), _in(dtype, value)
    got = kzoo.ops.update_cache(_in(dtype, cache.copy()), key, value, 3,
                                in_place=in_place)
    want = transformer.update_cache_reference(_in(dtype, cache.copy()), key,
                                              value, 3)
    assert keras.backend.standardize_dtype(got.dtype) == dtype
    assert_allclose(to_numpy(ops.cast(got, "float32")),
                    to_numpy(ops.cast(want, "float32")), atol=0, rtol=0)


def test_update_cache_rejects_bad_shapes():
    cache, key, value = _cache_inputs(1)
    with pytest.raises(ValueError, match=r"`cache` must be \[batch, 2"):
        kzoo.ops.update_cache(cache[:, :1], key, value, 0)
    with pytest.raises(ValueError, match="`key` and `value`"):
        kzoo.ops.update_cache(cache, key, value[:, :, :2], 0)


# --- cached_self_attention -----------------------------------------------------

def _numpy_cached_self_attention(qkv, cache, index):
    """The cache write, then each query over cache positions up to its own."""
    batch, length, _ = qkv.shape
    heads, head_dim = cache.shape[2], cache.shape[4]
    q, k, v = (t.reshape(batch, length, heads, head_dim)
               for t in np.split(qkv, 3, axis=-1))
    cache = _numpy_update_cache(cache, k, v, index)
    keys, values = (np.transpose(cache[:, i], (0, 2, 1, 3)) for i in (0, 1))
    positions = np.arange(cache.shape[3])
    mask = positions[None, :] <= index + np.arange(length)[:, None]
    out = _numpy_attention(q, keys, values, mask[None, None], head_dim ** -0.5)
    return out.reshape(batch, length, heads * head_dim), cache


# (length, index): a one-token step, a prefill from 0, a few tokens later on
CACHED_STEPS = ((1, 0), (1, 4), (3, 0), (3, 2), (6, 0))


@pytest.mark.parametrize("length, index", CACHED_STEPS)
@pytest.mark.parametrize("in_place", (False, True))
@pytest.mark.parametrize("tensor_index", (False, True))
def test_cached_self_attention_matches_numpy(length, index, in_place, tensor_index):
    # The cache holds other values after the written positions: they get
    # no weight.
    cache, _, _ = _cache_inputs(1, seed=10)
    qkv = _rng(11).normal(size=(2, length, 36)).astype("float32")
    want, want_cache = _numpy_cached_self_attention(qkv, cache, index)
    at = ops.convert_to_tensor(index, "int32") if tensor_index else index
    for fn in (kzoo.ops.cached_self_attention,
               transformer.cached_self_attention_reference):
        given = ops.convert_to_tensor(cache.copy())
        got, got_cache = fn(ops.convert_to_tensor(qkv), given, at,
                            in_place=in_place)
        assert_allclose(to_numpy(got), want, atol=1e-5, rtol=1e-5)
        assert_allclose(to_numpy(got_cache), want_cache, atol=0, rtol=0)
        if not in_place:
            assert_allclose(to_numpy(given), cache, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("length, index", CACHED_STEPS)
def test_cached_self_attention_equals_reference(dtype, length, index):
    cache, _, _ = _cache_inputs(1, seed=12)
    cache = _in(dtype, cache)
    qkv = _in(dtype, _rng(13).normal(size=(2, length, 36)).astype("float32"))
    got = kzoo.ops.cached_self_attention(qkv, cache, index)
    want = transformer.cached_self_attention_reference(qkv, cache, index)
    for tensor in got:
        assert keras.backend.standardize_dtype(tensor.dtype) == dtype
    _close(got[0], to_numpy(ops.cast(want[0], "float32")), dtype)
    assert_allclose(to_numpy(ops.cast(got[1], "float32")),
                    to_numpy(ops.cast(want[1], "float32")), atol=0, rtol=0)


# TensorFlow's slice_update (XlaDynamicUpdateSlice) has no gradient: there
# the op is its reference, and a generation step wants none.
@pytest.mark.backends("jax", "torch")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("length, index", CACHED_STEPS)
def test_cached_self_attention_gradient_equals_reference(dtype, length, index):
    cache, _, _ = _cache_inputs(1, seed=14)
    cache = _in(dtype, cache)
    qkv = _rng(15).normal(size=(2, length, 36)).astype("float32")
    # Both outputs in the sum: the keys and values reach it through both.
    def run(fn):
        def total(z):
            attended, updated = fn(z, cache, index)
            return (ops.sum(ops.cast(attended, "float32"))
                    + ops.sum(ops.cast(updated, "float32") ** 2))
        return total
    _check(run(kzoo.ops.cached_self_attention),
           run(transformer.cached_self_attention_reference), qkv, dtype)


# A one-token step over a long cache (PyTorch computes it with separate
# kernels in reduced precision from `WRITTEN_OUT_MIN_KEYS` keys on).
def _long_cache_step():
    rng = _rng(16)
    return (rng.normal(size=(2, 2, 3, 80, 4)).astype("float32"),
            rng.normal(size=(2, 1, 36)).astype("float32"), 70)


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_token_step_over_a_long_cache(dtype):
    cache, qkv, index = _long_cache_step()
    got, got_cache = kzoo.ops.cached_self_attention(
        _in(dtype, qkv), _in(dtype, cache), index, in_place=True)
    reference, _ = transformer.cached_self_attention_reference(
        _in(dtype, qkv), _in(dtype, cache), index)
    assert keras.backend.standardize_dtype(got.dtype) == dtype
    _close(got, to_numpy(ops.cast(reference, "float32")), dtype)
    if dtype == "float32":
        want, want_cache = _numpy_cached_self_attention(qkv, cache, index)
        assert_allclose(to_numpy(got), want, atol=1e-5, rtol=1e-5)
        assert_allclose(to_numpy(got_cache), want_cache, atol=0, rtol=0)


@pytest.mark.backends("jax", "torch")  # see the gradient test above
@pytest.mark.parametrize("dtype", DTYPES)
def test_one_token_step_over_a_long_cache_gradient(dtype):
    cache, qkv, index = _long_cache_step()

    def run(fn):
        return lambda z: ops.sum(ops.cast(
            fn(z, _in(dtype, cache), index)[0], "float32") ** 2)
    _check(run(kzoo.ops.cached_self_attention),
           run(transformer.cached_self_attention_reference), qkv, dtype)


def test_cached_self_attention_rejects_bad_shapes():
    cache, _, _ = _cache_inputs(1)
    qkv = np.zeros((2, 1, 36), "float32")
    with pytest.raises(ValueError, match=r"`qkv` must be \[batch, length, 3 \* heads"):
        kzoo.ops.cached_self_attention(qkv[..., :24], cache, 0)
    with pytest.raises(ValueError, match=r"`cache` must be \[batch, 2"):
        kzoo.ops.cached_self_attention(qkv, cache[:, :1], 0)
