"""kzoo.ops.packed_weights: the generation step's products read packed
copies of the weights on PyTorch, give the unpacked step's result, and a
weight written since it was packed (assign, an optimizer step,
load_weights) is read anew; nothing is packed outside the scope, from a
temporary or under autograd; a copy goes with its weight."""

import gc

import keras
import numpy as np
import pytest
from keras import ops

import kzoo
import kzoo.ops
from kzoo.ops import packed
from kzoo.testing import assert_allclose, to_numpy
from tests.ops.decoder_block_test import HEADS, HIDDEN, MAX_LENGTH, _weights

KERNELS = ("query_key_value_kernel", "attention_output_kernel",
           "intermediate_kernel", "output_kernel")


def _variables(dtype, seed=0):
    """The block's weights as Keras variables (what a layer holds)."""
    return kzoo.ops.DecoderBlockWeights(**{
        name: keras.Variable(value, dtype=dtype, trainable=True, name=name)
        for name, value in _weights(seed).items()})


def _step(weights, dtype, batch, seed=1):
    """One in-place one-token step at position 5 (what generation runs)."""
    rng = np.random.default_rng(seed)
    x = ops.cast(rng.normal(size=(batch, 1, HIDDEN)).astype("float32"), dtype)
    cache = ops.cast(rng.normal(size=(batch, 2, HEADS, MAX_LENGTH, HIDDEN // HEADS))
                     .astype("float32"), dtype)
    y, _ = kzoo.ops.cached_decoder_block(x, cache, 5, weights, in_place=True)
    return to_numpy(ops.cast(y, "float32"))


def _no_grad():
    import torch

    return torch.no_grad()


def test_the_scope():
    assert not packed.packing()
    with kzoo.ops.packed_weights():
        assert packed.packing()
        with kzoo.ops.packed_weights():
            assert packed.packing()
        assert packed.packing()
    assert not packed.packing()
    with pytest.raises(RuntimeError, match="inside"):
        with kzoo.ops.packed_weights():
            raise RuntimeError("inside")
    assert not packed.packing()


@pytest.mark.backends("torch")
@pytest.mark.parametrize("dtype", ("float32", "bfloat16"))
@pytest.mark.parametrize("batch", (1, 8))
def test_the_step_reads_packed_kernels_with_the_same_result(dtype, batch):
    kzoo.ops.release_packed_weights()
    weights = _variables(dtype)
    with _no_grad():
        plain = _step(weights, dtype, batch)
        assert kzoo.ops.release_packed_weights() == 0  # outside the scope
        with kzoo.ops.packed_weights():
            first = _step(weights, dtype, batch)
            again = _step(weights, dtype, batch)
    assert kzoo.ops.release_packed_weights() == len(KERNELS)
    # bfloat16: oneDNN's product either way, the same bits; float32: the
    # packed product's sums in another order than addmm's.
    tolerance = 0 if dtype == "bfloat16" else 1e-5
    assert_allclose(first, plain, atol=tolerance, rtol=tolerance)
    assert_allclose(again, first, atol=0, rtol=0)


@pytest.mark.backends("torch")
@pytest.mark.parametrize("write", ("assign", "optimizer"))
def test_a_written_kernel_is_packed_again(write):
    weights = _variables("float32")
    with _no_grad(), kzoo.ops.packed_weights():
        before = _step(weights, "float32", 2)
    if write == "assign":
        for name, value in _weights(7).items():
            getattr(weights, name).assign(value)
    else:  # an SGD step, Keras' in-place update of the torch parameters
        optimizer = keras.optimizers.SGD(learning_rate=0.5)
        optimizer.apply([ops.ones(v.shape) for v in weights], list(weights))
    with _no_grad():
        want = _step(weights, "float32", 2)  # unpacked, the new weights
        with kzoo.ops.packed_weights():
            got = _step(weights, "float32", 2)
    assert np.abs(want - before).max() > 0.1
    assert_allclose(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.backends("torch")
def test_temporaries_and_autograd_are_not_packed():
    import torch

    kzoo.ops.release_packed_weights()
    x = ops.ones((2, HIDDEN))
    table = keras.Variable(np.ones((10, HIDDEN), "float32"))
    with kzoo.ops.packed_weights():
        with _no_grad():
            # a cast or other tensor made for the call: never read twice
            kzoo.ops.embedding_logits(x, ops.convert_to_tensor(table) * 1.0)
        assert kzoo.ops.release_packed_weights() == 0
        with torch.enable_grad():  # training reads the weights as they are
            logits = kzoo.ops.embedding_logits(x, table)
        assert logits.requires_grad
        assert kzoo.ops.release_packed_weights() == 0
        with _no_grad():
            kzoo.ops.embedding_logits(x, table)
        assert kzoo.ops.release_packed_weights() == 1


@pytest.mark.backends("torch")
def test_a_packed_copy_goes_with_its_weight():
    kzoo.ops.release_packed_weights()
    table = keras.Variable(np.ones((10, HIDDEN), "float32"))
    with _no_grad(), kzoo.ops.packed_weights():
        kzoo.ops.embedding_logits(ops.ones((1, HIDDEN)), table)
    del table
    gc.collect()
    assert kzoo.ops.release_packed_weights() == 0


def _tiny_lm(seed):
    keras.utils.set_random_seed(seed)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=40, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=24)
    return kzoo.models.GPTCausalLM(backbone)


def test_generation_after_new_weights(tmp_path):
    # Generate (packing the weights on PyTorch), load other weights, generate
    # again: the tokens of a model built with those weights.
    prompts = [[3, 5, 7], [9, 2, 4]]
    lm, other = _tiny_lm(0), _tiny_lm(1)
    first = to_numpy(lm.generate_token_ids(prompts, max_length=14, stop_token_ids=None))
    if keras.backend.backend() == "torch":
        assert kzoo.ops.release_packed_weights() > 0
        lm.generate_token_ids(prompts, max_length=14, stop_token_ids=None)
    want = to_numpy(other.generate_token_ids(prompts, max_length=14, stop_token_ids=None))
    assert not np.array_equal(first, want)
    other.save_weights(tmp_path / "other.weights.h5")
    lm.load_weights(tmp_path / "other.weights.h5")
    got = to_numpy(lm.generate_token_ids(prompts, max_length=14, stop_token_ids=None))
    np.testing.assert_array_equal(got, want)


def test_streaming_leaves_the_scope_between_tokens():
    vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
        ["a cat sat on a mat"] * 3, vocabulary_size=270)
    backbone = kzoo.models.GPTBackbone(
        vocabulary_size=len(vocabulary), num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=16)
    lm = kzoo.models.GPTCausalLM(backbone, kzoo.models.GPTCausalLMPreprocessor(
        kzoo.models.GPTTokenizer(vocabulary, merges), sequence_length=8))
    pieces = []
    for piece in lm.generate_stream("a cat", max_length=10, stop_token_ids=None):
        assert not packed.packing()
        pieces.append(piece)
    assert "a cat" + "".join(pieces) == lm.generate("a cat", max_length=10,
                                                    stop_token_ids=None)
