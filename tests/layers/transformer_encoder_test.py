"""TransformerEncoder against a numpy transcription of the BERT block."""

import contextlib
import math

import keras
import numpy as np
import pytest

import kzoo
from kzoo.layers.transformer_encoder import TransformerEncoder
from kzoo.testing import assert_allclose, gradient, to_numpy

HIDDEN, HEADS, INTERMEDIATE = 8, 2, 12
RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 5, HIDDEN)).astype("float32")
PADDING = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])


@contextlib.contextmanager
def _spied(module, name, calls):
    """``module.name`` recording each call in ``calls`` while inside."""
    original = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    setattr(module, name, spy)
    try:
        yield
    finally:
        setattr(module, name, original)


def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _reference(layer, x, padding_mask, activation, normalize_first=False):
    """The block written out in numpy from the layer's weights."""
    w = lambda v: to_numpy(v).astype("float64")  # noqa: E731
    att = layer.self_attention_layer
    b, t, h = x.shape
    n = HEADS
    d = h // n

    def project(dense, inputs):  # [B, T, H] -> [B, N, T, D]
        y = inputs @ w(dense.kernel).reshape(h, n * d) + w(dense.bias).reshape(n * d)
        return y.reshape(b, t, n, d).transpose(0, 2, 1, 3)

    def attention(inputs):
        q, k, v = (project(dn, inputs) for dn in
                   (att.query_dense, att.key_dense, att.value_dense))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
        keep = padding_mask.astype(bool)[:, None, None, :]
        scores = np.where(keep, scores, -1e30)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, t, n * d)
        return ctx @ w(att.output_dense.kernel).reshape(n * d, h) + w(
            att.output_dense.bias)

    ln1 = lambda y: _layer_norm(y, w(layer.self_attention_layer_norm.gamma),  # noqa: E731
                                w(layer.self_attention_layer_norm.beta), 1e-12)
    ln2 = lambda y: _layer_norm(y, w(layer.feedforward_layer_norm.gamma),  # noqa: E731
                                w(layer.feedforward_layer_norm.beta), 1e-12)

    def ffn(y):
        inner = activation(y @ w(layer.feedforward_intermediate_dense.kernel)
                           + w(layer.feedforward_intermediate_dense.bias))
        return inner @ w(layer.feedforward_output_dense.kernel) + w(
            layer.feedforward_output_dense.bias)

    x = x.astype("float64")
    if normalize_first:
        x = x + attention(ln1(x))
        return x + ffn(ln2(x))
    x = ln1(x + attention(x))
    return ln2(x + ffn(x))


def _randomised(**kwargs):
    layer = TransformerEncoder(
        intermediate_dim=INTERMEDIATE, num_heads=HEADS, layer_norm_epsilon=1e-12,
        **kwargs)
    layer.build(X.shape)
    rng = np.random.default_rng(1)
    # Random biases and layer-norm parameters too, so all of them are tested.
    layer.set_weights([
        (rng.normal(size=v.shape) * 0.5 + (1.0 if "gamma" in v.path else 0.0))
        .astype("float32") for v in layer.weights
    ])
    return layer


@pytest.mark.parametrize("dropout", [0.0, 0.3])  # fused and explicit attention
def test_post_norm_block_matches_numpy(dropout):
    layer = _randomised(activation="gelu", dropout=dropout)
    out = layer(X, padding_mask=PADDING, training=False)
    assert_allclose(out, _reference(layer, X, PADDING, _gelu), atol=2e-5, rtol=1e-4)


def test_pre_norm_and_tanh_gelu_match_numpy():
    layer = _randomised(activation="gelu_approximate", normalize_first=True)
    out = layer(X, padding_mask=PADDING)
    expected = _reference(layer, X, PADDING, _gelu_tanh, normalize_first=True)
    assert_allclose(out, expected, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("setting", ["float32", "lora", "int8", "mixed_bfloat16"])
def test_inference_projections_compute_the_einsum_layers(setting):
    """At inference the attention's EinsumDense projections run as plain
    products (`_sublayer` with `fast`); each must equal the layer's own call
    (Keras' einsum), with LoRA's merged kernel, int8-quantized (the int8
    product as `kzoo.ops.int8_matmul`) and under a mixed policy too."""
    layer = _randomised(activation="gelu")
    if setting == "mixed_bfloat16":
        mixed = TransformerEncoder(intermediate_dim=INTERMEDIATE, num_heads=HEADS,
                                   layer_norm_epsilon=1e-12, dtype="mixed_bfloat16")
        mixed.build(X.shape)
        mixed.set_weights(layer.get_weights())
        layer = mixed
    att = layer.self_attention_layer
    if setting == "lora":
        for dense in (att.query_dense, att.value_dense, att.output_dense):
            dense.enable_lora(2)
            rng = np.random.default_rng(2)
            dense.lora_kernel_b.assign(rng.normal(size=dense.lora_kernel_b.shape)
                                       .astype("float32"))
    if setting == "int8":
        for dense in (att.query_dense, att.key_dense, att.value_dense,
                      att.output_dense):
            dense.quantize("int8")
    tolerance = {"atol": 2e-2, "rtol": 2e-2} if setting == "mixed_bfloat16" else {
        "atol": 1e-5, "rtol": 1e-5}
    heads = RNG.normal(size=(2, 5, HEADS, HIDDEN // HEADS)).astype("float32")
    cases = [(att.query_dense, X), (att.key_dense, X), (att.value_dense, X),
             (att.output_dense, heads)]
    for dense, inputs in cases:
        expected = dense(inputs)
        calls = []
        with keras.src.backend.AutocastScope(layer.compute_dtype), \
                _spied(kzoo.ops, "int8_matmul", calls):
            got = layer._sublayer(
                dense, keras.ops.cast(inputs, layer.compute_dtype), fast=True)
        assert bool(calls) == (setting == "int8")
        assert tuple(got.shape) == tuple(expected.shape)
        assert keras.backend.standardize_dtype(got.dtype) == layer.compute_dtype
        assert_allclose(keras.ops.cast(got, "float32"),
                        keras.ops.cast(expected, "float32"), **tolerance)
    # The query, key and value projections together (`_projections`: one
    # kzoo.ops.linears), frozen and on 80 rows: PyTorch's kept
    # concatenation of the kernels (LoRA's merged ones: new every call).
    layer.trainable = False
    wide = RNG.normal(size=(2, 40, HIDDEN)).astype("float32")
    projections = (att.query_dense, att.key_dense, att.value_dense)
    for _ in range(2):
        with keras.src.backend.AutocastScope(layer.compute_dtype):
            got = layer._projections(
                projections, keras.ops.cast(wide, layer.compute_dtype), fast=True)
        for dense, output in zip(projections, got):
            assert keras.backend.standardize_dtype(output.dtype) == layer.compute_dtype
            assert_allclose(keras.ops.cast(output, "float32"),
                            keras.ops.cast(dense(wide), "float32"), **tolerance)
    layer.trainable = True
    # The whole block at inference still matches the numpy transcription
    # (the LoRA kernels included, read through `kernel`).
    if setting in ("float32", "lora"):
        assert_allclose(layer(X, padding_mask=PADDING, training=False),
                        _reference(layer, X, PADDING, _gelu), atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("setting", ["float32", "lora", "int8", "mixed_bfloat16"])
@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate", "relu"])
def test_inference_dense_and_norms_compute_the_layers(setting, activation):
    """At inference the feed-forward Dense layers and the layer norms run
    as kzoo.ops kernels (`_sublayer` with `fast`); each must equal the
    layer's own call, with LoRA's merged kernel, int8-quantized, and under
    a mixed policy, and so must the whole block (against its training-mode
    call, where every sublayer runs its own `__call__`)."""
    layer = _randomised(activation=activation)
    if setting == "mixed_bfloat16":
        mixed = TransformerEncoder(intermediate_dim=INTERMEDIATE, num_heads=HEADS,
                                   activation=activation,
                                   layer_norm_epsilon=1e-12, dtype="mixed_bfloat16")
        mixed.build(X.shape)
        mixed.set_weights(layer.get_weights())
        layer = mixed
    dense_layers = (layer.feedforward_intermediate_dense,
                    layer.feedforward_output_dense)
    rng = np.random.default_rng(3)
    for dense in dense_layers:
        if setting == "lora":
            dense.enable_lora(2)
            dense.lora_kernel_b.assign(rng.normal(size=dense.lora_kernel_b.shape)
                                       .astype("float32"))
        if setting == "int8":
            dense.quantize("int8")
    for norm in (layer.self_attention_layer_norm, layer.feedforward_layer_norm):
        norm.gamma.assign(rng.normal(size=(HIDDEN,)).astype("float32"))
        norm.beta.assign(rng.normal(size=(HIDDEN,)).astype("float32"))
    tolerance = {"atol": 3e-2, "rtol": 3e-2} if setting == "mixed_bfloat16" else {
        "atol": 1e-5, "rtol": 1e-5}
    hidden = (RNG.normal(size=(2, 5, INTERMEDIATE)) * 3).astype("float32")
    cases = [(dense_layers[0], X), (dense_layers[1], hidden),
             (layer.self_attention_layer_norm, X * 5 + 1),
             (layer.feedforward_layer_norm, X)]
    for sublayer, inputs in cases:
        expected = sublayer(inputs)
        calls = []
        with keras.src.backend.AutocastScope(layer.compute_dtype), \
                _spied(kzoo.ops, "int8_matmul", calls):
            got = layer._sublayer(
                sublayer, keras.ops.cast(inputs, layer.compute_dtype), fast=True)
        # an int8 Dense's product runs as the int8 op (fast on every backend)
        assert bool(calls) == (setting == "int8" and sublayer in dense_layers)
        assert tuple(got.shape) == tuple(expected.shape)
        assert keras.backend.standardize_dtype(got.dtype) == layer.compute_dtype
        assert_allclose(keras.ops.cast(got, "float32"),
                        keras.ops.cast(expected, "float32"), **tolerance)
    whole = {"atol": 1e-1, "rtol": 5e-2} if setting == "mixed_bfloat16" else {
        "atol": 1e-5, "rtol": 1e-5}
    assert_allclose(keras.ops.cast(layer(X, padding_mask=PADDING, training=False),
                                   "float32"),
                    keras.ops.cast(layer(X, padding_mask=PADDING, training=True),
                                   "float32"), **whole)


def test_padded_keys_are_ignored():
    layer = _randomised(activation="relu")
    changed = X.copy()
    changed[1, 3:] = 100.0  # values behind the padding
    a = to_numpy(layer(X, padding_mask=PADDING))
    b = to_numpy(layer(changed, padding_mask=PADDING))
    assert_allclose(a[1, :3], b[1, :3], atol=1e-5)
    # A bool mask and an attention mask that allows everything agree.
    c = layer(X, padding_mask=PADDING.astype(bool),
              attention_mask=np.ones((2, 5, 5), "int32"))
    assert_allclose(c, a, atol=1e-6)


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_fully_padded_sequence_stays_finite(dropout):
    layer = _randomised(activation="relu", dropout=dropout)
    out = to_numpy(layer(X, padding_mask=np.zeros((2, 5), "int32")))
    # No real token: every key is attended (Hugging Face's behaviour).
    assert np.isfinite(out).all()
    assert_allclose(out, layer(X), atol=1e-5)


def test_dropout_is_active_only_in_training():
    layer = _randomised(activation="relu", dropout=0.5)
    eval_out = to_numpy(layer(X, padding_mask=PADDING, training=False))
    train_out = to_numpy(layer(X, padding_mask=PADDING, training=True))
    assert not np.allclose(eval_out, train_out)


def test_config_round_trip_and_serialization():
    layer = _randomised(activation="gelu_approximate", dropout=0.1,
                        kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02))
    config = layer.get_config()
    assert config["activation"] == "gelu_approximate"
    restored = TransformerEncoder.from_config(config)
    restored.build(X.shape)
    restored.set_weights(layer.get_weights())
    assert_allclose(restored(X, padding_mask=PADDING), layer(X, padding_mask=PADDING))
    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"] == "kzoo>TransformerEncoder"
    assert type(keras.saving.deserialize_keras_object(serialized)) is TransformerEncoder


def test_bad_arguments():
    with pytest.raises(ValueError, match="divisible by `num_heads`=3"):
        TransformerEncoder(intermediate_dim=4, num_heads=3)(X)
    with pytest.raises(ValueError, match="`num_heads` must be a positive int"):
        TransformerEncoder(intermediate_dim=4, num_heads=0)
    with pytest.raises(ValueError, match="`activation` must be"):
        TransformerEncoder(intermediate_dim=4, num_heads=2, activation="nope")
    with pytest.raises(ValueError, match=r"`dropout` must be in \[0, 1\)"):
        TransformerEncoder(intermediate_dim=4, num_heads=2, dropout=1.0)


@pytest.mark.parametrize("setting", ["float32", "lora", "mixed_bfloat16"])
def test_training_runs_the_fast_sublayers_with_the_same_step(setting):
    """In training the sublayers run as kzoo.ops kernels too
    (`_fast_sublayers`): the block's training-mode output, its gradient and
    one SGD step of a small model on it (every weight's gradient) equal
    those of the sublayers' own calls; a quantized sublayer keeps its
    own call (Keras' quantized calls carry their gradients)."""
    def model(fast):
        block = _randomised(activation="gelu")
        if setting == "lora":
            for dense in (block.self_attention_layer.query_dense,
                          block.feedforward_intermediate_dense):
                dense.enable_lora(2)
                for kernel in (dense.lora_kernel_a, dense.lora_kernel_b):
                    kernel.assign(np.random.default_rng(4).normal(
                        size=kernel.shape).astype("float32"))
        if setting == "mixed_bfloat16":
            mixed = TransformerEncoder(intermediate_dim=INTERMEDIATE, num_heads=HEADS,
                                       activation="gelu", layer_norm_epsilon=1e-12,
                                       dtype="mixed_bfloat16")
            mixed.build(X.shape)
            mixed.set_weights(block.get_weights())
            block = mixed
        if not fast:  # the sublayers' own calls in training
            block._fast_sublayers = lambda training: not training
        inputs = keras.Input(X.shape[1:])
        pooled = keras.layers.GlobalAveragePooling1D()(block(inputs, training=True))
        head = keras.layers.Dense(1, kernel_initializer="ones")
        net = keras.Model(inputs, head(pooled))
        net.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
        return block, net

    tolerance = {"atol": 3e-2, "rtol": 3e-2} if setting == "mixed_bfloat16" else {
        "atol": 2e-5, "rtol": 1e-4}
    (fast_block, fast_net), (own_block, own_net) = model(True), model(False)
    calls = []
    with _spied(kzoo.ops, "linear", calls):
        got = fast_block(X, padding_mask=PADDING, training=True)
    assert calls  # the fast path ran
    want = own_block(X, padding_mask=PADDING, training=True)
    assert_allclose(keras.ops.cast(got, "float32"), keras.ops.cast(want, "float32"),
                    **tolerance)
    grads = [gradient(lambda z: keras.ops.cast(
        block(z, padding_mask=PADDING, training=True), "float32"), X)
        for block in (fast_block, own_block)]
    assert_allclose(grads[0], grads[1], **tolerance)
    y = np.arange(2, dtype="float32")[:, None]
    for net in (fast_net, own_net):
        net.train_on_batch(X, y)
    for a, b in zip(fast_net.weights, own_net.weights):
        assert_allclose(keras.ops.cast(a, "float32"), keras.ops.cast(b, "float32"),
                        **tolerance)
    fast_block.feedforward_output_dense.quantize("int8")
    assert not fast_block._fast_sublayers(True) and fast_block._fast_sublayers(False)
