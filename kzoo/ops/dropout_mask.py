"""Dropout from 16-bit random fields: ``kzoo.layers.Dropout``'s mask.

Each element is kept when a uniformly random 16-bit field is at least
``round(rate * 65536) - 32768``, and the kept elements are scaled by the
inverse of that realized keep probability: an element-wise independent
Bernoulli mask that leaves the input's expected value unchanged, exactly.

``dropout_reference`` draws one 32-bit integer per two fields with
``keras.random.randint`` (one draw per element is most of Keras' own
dropout's cost on a CPU), reads each as two 16-bit halves (``ops.view``)
and multiplies the input by one scale mask in its dtype (so the gradient
is one product too). ``dropout`` runs it on JAX and TensorFlow, whose
generators are counter-based and fast. PyTorch's CPU generator is a serial
Mersenne Twister behind a per-element loop, and its comparisons and
selections on boolean masks are slow: there ``dropout`` takes the fields
from numpy's PCG64 (64 bits a draw, four fields; on an accelerator from
PyTorch's own generator, 64 bits a draw as well) and turns them into the
scale mask with integer clamps, about three times faster than the
reference on the attention probabilities of a small BERT.

Seeds are Keras': an int, a ``keras.random.SeedGenerator`` (advanced by
each call), or None (Keras' global seed generator, which
``keras.utils.set_random_seed`` sets). A seed repeats its masks on one
backend and device; the backends' streams differ.
"""

import math

import keras
import numpy as np
from keras import ops

#: a mask element is a 16-bit field: the rate is kept to 1 / 65536
FIELD = 1 << 16


def dropout(inputs, rate, seed=None):
    """``inputs`` with each element zeroed with probability
    ``round(rate * 65536) / 65536`` and the others scaled to keep the
    expected value.

    Args:
        inputs: float tensor.
        rate: float in [0, 1), the fraction of elements to drop.
        seed: an int, a ``keras.random.SeedGenerator``, or None.

    Returns:
        tensor of ``inputs``' shape and dtype.

    Example:
    >>> y = kzoo.ops.dropout(np.ones((1000,), "float32"), 0.5, seed=1)
    >>> sorted(set(ops.convert_to_numpy(y).tolist()))
    [0.0, 2.0]
    """
    inputs = ops.convert_to_tensor(inputs)
    threshold = _threshold(rate)
    if keras.backend.backend() == "torch" and seed is not None and 0 < threshold < FIELD:
        return _torch_dropout(inputs, threshold, seed)
    return dropout_reference(inputs, rate, seed)  # and the rates 0 and 1


def dropout_reference(inputs, rate, seed=None):
    """``dropout`` in ``keras.ops``, from ``keras.random.randint``."""
    inputs = ops.convert_to_tensor(inputs)
    threshold = _threshold(rate)
    if threshold == 0:
        return inputs
    if threshold >= FIELD:
        return ops.zeros_like(inputs)
    shape = ops.shape(inputs)  # static, or with tensors for None dims
    size = math.prod(shape)
    bits = keras.random.randint(
        ((size + 1) // 2,), -(1 << 31), (1 << 31) - 1, dtype="int32", seed=seed)
    # Each 32-bit draw read as two signed 16-bit fields, each uniform in
    # [-32768, 32767]: a field >= t - 32768 with probability 1 - t / 65536.
    # (Viewed as [n, 1]: Keras' TensorFlow `view` needs a static last
    # dimension, which a batch of unknown size in `fit` lacks.)
    fields = ops.reshape(ops.view(ops.expand_dims(bits, -1), "int16"), (-1,))
    if not isinstance(size, int) or size % 2:
        fields = fields[:size]
    keep = ops.reshape(ops.greater_equal(fields, threshold - (FIELD >> 1)), shape)
    scale = ops.where(
        keep, ops.cast(FIELD / (FIELD - threshold), inputs.dtype),
        ops.cast(0, inputs.dtype))
    return inputs * scale


def _threshold(rate):
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"`rate` must be in [0, 1], got {rate!r}.")
    return int(round(rate * FIELD))


def _seed_words(seed):
    """The Keras seed as two non-negative 32-bit ints (a SeedGenerator
    advances, as Keras' own draws advance it)."""
    if isinstance(seed, keras.random.SeedGenerator):
        state = ops.convert_to_numpy(seed.next())
        return [int(v) & 0xFFFFFFFF for v in state.reshape(-1)]
    if isinstance(seed, int):
        return [seed & 0xFFFFFFFF, 0]
    raise ValueError(
        "`seed` must be an int, a `keras.random.SeedGenerator` or None, got "
        f"{type(seed).__name__}.")


def _torch_dropout(inputs, threshold, seed):
    import torch

    if inputs.device.type == "meta":  # Keras' symbolic pass: shapes only
        return torch.empty_like(inputs)
    shape, size = inputs.shape, inputs.numel()
    words = (size + 3) // 4  # 64-bit draws, four fields each
    seed_words = _seed_words(seed)
    if inputs.device.type == "cpu" and not torch.compiler.is_compiling():
        raw = np.random.Generator(np.random.PCG64(seed_words)).bit_generator.random_raw(words)
        fields = torch.from_numpy(raw.view(np.int16))
    else:
        generator = torch.Generator(device=inputs.device)
        generator.manual_seed(seed_words[0] | seed_words[1] << 32)
        # from the smallest int64 with no upper bound: the full 64-bit range
        fields = torch.empty(words, dtype=torch.int64, device=inputs.device).random_(
            -(1 << 63), None, generator=generator).view(torch.int16)
    # keep = field >= t as 0 / 1 by two integer passes (clamp to [t - 1, t],
    # subtract t - 1): several times faster than a comparison and a
    # selection through a boolean mask.
    low = threshold - (FIELD >> 1) - 1
    keep = fields[:size].reshape(shape).clamp_(low, low + 1).sub_(low)
    scale = keep.to(inputs.dtype).mul_(FIELD / (FIELD - threshold))
    return inputs * scale
