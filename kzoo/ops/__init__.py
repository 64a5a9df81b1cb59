"""Operations model code may call beside ``keras.ops``: where a backend has
a kernel Keras does not reach, it lives here, behind one function that
every backend runs.

Sparse row updates (``kzoo.ops.sparse_rows``): word2vec's training step
adds each row's gradient to only the rows of a table a batch touches.
"""

from kzoo.ops.sparse_rows import (  # noqa: F401
    add_to_rows,
    assign_table,
    distributed,
    no_grad,
    stateful_train_step,
    table_value,
)

# Transformer primitives.
from kzoo.ops.transformer import (  # noqa: F401, E402
    attention,
    gelu,
    layer_norm,
    linear,
)
