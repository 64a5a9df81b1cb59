"""Training steps that update only the rows of a table that a batch touches.

An embedding table's gradient has a row for each id a batch looks up and
zeros elsewhere; Keras' dense step still builds the whole `[vocabulary,
dim]` gradient and moves every row of the table each step. word2vec.c's
update is the sparse one: gather the rows, compute each row's gradient,
add it back where it came from. Two pieces here make that a Keras
`train_step` on every backend:

- `add_to_rows(table, indices, updates)`: the scatter-add (repeated ids
  add up), one native op per backend (`.at[].add` on JAX,
  `tensor_scatter_nd_add` on TensorFlow, `index_add_` on PyTorch, in place).
- `stateful_train_step(model, step, *args)`: runs a step written with
  `variable.assign` (TensorFlow and PyTorch call it as it is) as JAX's
  stateless `train_step(state, data) -> (logs, state)`, by mapping the
  state onto the model's variables in a `keras.StatelessScope`. With
  `KZOO_MALLOC_TUNING=1` on PyTorch it first makes
  `kzoo.ops.memory.reuse_freed_memory`'s allocator setting.

`default_update_size()` and `sparse_step_compile_defaults()` are the
per-backend settings the sparse step trains fastest with.
"""

import contextlib

import keras
from keras import ops

from kzoo.ops.memory import tune_malloc_if_asked

def add_to_rows(table, indices, updates):
    """`table` with `updates[i]` added to row `indices[i]` (repeats add up).

    Args:
        table: tensor `[rows, dim]`.
        indices: int tensor `[n]`.
        updates: tensor `[n, dim]`.

    Returns:
        The new table. On PyTorch the addition is made in place in `table`
        (its old value is gone, and no copy of the table is made): pass the
        variable's own tensor there, inside `no_grad()`.
    """
    backend = keras.backend.backend()
    updates = ops.cast(updates, table.dtype)
    if backend == "jax":
        return table.at[indices].add(updates)
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.tensor_scatter_nd_add(
            table, ops.expand_dims(ops.cast(indices, "int32"), -1), updates)
    if backend == "torch":
        return table.index_add_(0, indices.long(), updates)
    raise ValueError(f"No sparse row update on the {backend!r} backend "
                     "(it does not train).")


def default_update_size():
    """Examples per sparse update (`Word2VecTask.compile(update_size="auto")`)
    that train fastest on the backend, with bench/word2vec.py: 4096 on
    PyTorch, where each op's dispatch costs more than smaller updates save;
    128 on JAX and TensorFlow, whose XLA-compiled small batched dots get
    slower past about 160 rows."""
    return 4096 if keras.backend.backend() == "torch" else 128


def sparse_step_compile_defaults():
    """`compile()` arguments a model training with these sparse steps takes
    unless it is given others: on TensorFlow `jit_compile=True` (XLA, which
    Keras leaves off there on CPU by default), nothing elsewhere (JAX
    compiles its steps anyway; PyTorch runs them eagerly)."""
    if keras.backend.backend() == "tensorflow":
        return {"jit_compile": True}
    return {}


def table_value(variable):
    """The tensor `add_to_rows` should start from for `variable`: on PyTorch
    the variable's own storage (updated in place), elsewhere its value."""
    if keras.backend.backend() == "torch":
        return variable.value.data
    return ops.convert_to_tensor(variable)


def assign_table(variable, table):
    """Stores `table` in `variable` (nothing to do where `add_to_rows`
    already wrote into the variable's own storage)."""
    if keras.backend.backend() == "torch" and table is variable.value.data:
        return
    variable.assign(table)


def no_grad():
    """`torch.no_grad()` on PyTorch (the step computes its own gradients),
    nothing elsewhere."""
    if keras.backend.backend() == "torch":
        import torch

        return torch.no_grad()
    return contextlib.nullcontext()


def distributed():
    """Whether a `keras.distribution` or a `tf.distribute` strategy is
    active (the sparse steps leave those to Keras' dense step)."""
    if keras.distribution.distribution() is not None:
        return True
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.distribute.has_strategy()
    return False


def stateful_train_step(model, step, *args):
    """Calls `step(data) -> logs`, a train step that reads and assigns the
    model's variables, in the calling convention of the backend's trainer.

    TensorFlow and PyTorch call `train_step(data)` on live variables: `step`
    runs as it is. JAX calls `train_step(state, data)` with the trainable,
    non-trainable, optimizer and metrics variables' values and expects
    `(logs, new_state)`: `step` runs in a `keras.StatelessScope` that maps
    those values onto the variables, and the values it assigns are read back.
    """
    if keras.backend.backend() != "jax":
        tune_malloc_if_asked()
        with no_grad():
            return step(*args)
    state, data = args
    owners = (model.trainable_variables, model.non_trainable_variables,
              model.optimizer.variables, model.metrics_variables)
    mapping = [(variable, value) for variables, values in zip(owners, state)
               for variable, value in zip(variables, values)]
    with keras.StatelessScope(state_mapping=mapping) as scope:
        logs = step(data)
    new_state = []
    for variables, values in zip(owners, state):
        new_values = []
        for variable, value in zip(variables, values):
            current = scope.get_current_value(variable)
            new_values.append(value if current is None else current)
        new_state.append(new_values)
    return logs, tuple(new_state)
