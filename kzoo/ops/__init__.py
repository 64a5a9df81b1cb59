"""Operations model code may call beside ``keras.ops``: where a backend has
a kernel Keras does not reach, it lives here, behind one function that
every backend runs.

Sparse row updates (``kzoo.ops.sparse_rows``): word2vec's training step
adds each row's gradient to only the rows of a table a batch touches.

Backend choices that model code leaves to ``kzoo.ops`` (no backend check
under ``kzoo/layers``, ``kzoo/models``, ``kzoo/losses``): cross-entropy on
logits (``kzoo.ops.cross_entropy``) and the sparse step's per-backend
defaults (``default_update_size``, ``sparse_step_compile_defaults``).

The int8 product of quantized layers (``kzoo.ops.quantized``):
``int8_matmul``, int8 x int8 with int32 sums, on a fast kernel where the
backend has one.

Dropout (``kzoo.ops.dropout_mask``): ``kzoo.layers.Dropout``'s mask from
16-bit random fields, drawn by a fast generator where the backend's own
is slow.

The C allocator setting under PyTorch's training steps
(``kzoo.ops.memory``): ``reuse_freed_memory``, glibc's malloc keeping freed
CPU memory for the next step.

The greedy choice (``kzoo.ops.sampling``): ``argmax`` over the last axis,
in the form that is fast on the backend. The generation loop
(``kzoo.ops.loop``): ``while_loop``, ``keras.ops.while_loop`` with its
scalar position a Python int where the loop runs on the host.

Transformer primitives (``kzoo.ops.transformer``): ``linear`` (with its
bias, activation and residual), ``linears`` (one input, several kernels),
``layer_norm``, ``gelu``, ``attention``,
``update_cache`` (a generation step's keys and values into its cache) and
``cached_self_attention`` (a generation step's whole attention over its
cache), each a ``keras.ops`` reference plus the backend's fused kernel where
it has one.

A causal Transformer block's generation step (``kzoo.ops.decoder_block``):
``cached_decoder_block``, the whole block over its key/value cache as one
op, its weights a ``DecoderBlockWeights``; the step's input
and its logits (``kzoo.ops.embedding``): ``token_position_embedding``,
``embedding_logits``. Weights packed for such a loop
(``kzoo.ops.packed``): ``packed_weights()``, the scope in which the step
kernels read weight matrices from a copy in the CPU kernel's own layout,
and ``release_packed_weights()``.
"""

from kzoo.ops.sparse_rows import (  # noqa: F401
    add_to_rows,
    assign_table,
    distributed,
    no_grad,
    stateful_train_step,
    table_value,
)

# Backend choices that model code leaves to kzoo.ops: the faster
# cross-entropy formulation, the sparse step's per-backend defaults.
from kzoo.ops.cross_entropy import (  # noqa: F401
    sparse_logits_cross_entropy,
    sparse_logits_cross_entropy_reference,
)
from kzoo.ops.sparse_rows import (  # noqa: F401
    default_update_size,
    sparse_step_compile_defaults,
)

from kzoo.ops.sampling import argmax, argmax_reference  # noqa: F401, E402
from kzoo.ops.loop import while_loop, while_loop_reference  # noqa: F401, E402

from kzoo.ops.dropout_mask import dropout, dropout_reference  # noqa: F401, E402

# The allocator setting of PyTorch's training steps.
from kzoo.ops.memory import reuse_freed_memory  # noqa: F401, E402

# Transformer primitives.
from kzoo.ops.transformer import (  # noqa: F401, E402
    attention,
    cached_self_attention,
    gelu,
    layer_norm,
    linear,
    linears,
    update_cache,
)

# A causal Transformer block's generation step.
from kzoo.ops.decoder_block import (  # noqa: F401, E402
    DecoderBlockWeights,
    cached_decoder_block,
    cached_decoder_block_reference,
)
from kzoo.ops.packed import packed_weights, release_packed_weights  # noqa: F401, E402
from kzoo.ops.embedding import (  # noqa: F401, E402
    embedding_logits,
    embedding_logits_reference,
    token_position_embedding,
    token_position_embedding_reference,
)

# The int8 product of quantized layers.
from kzoo.ops.quantized import int8_matmul, int8_matmul_reference  # noqa: F401, E402
