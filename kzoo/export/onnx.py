"""ONNX export: ``model.onnx`` for onnxruntime plus ``tokenizer.json``.

``onnx(task, path)`` writes a folder that a user with only ``onnxruntime``
and ``tokenizers`` runs from strings::

    tokenizer = tokenizers.Tokenizer.from_file(f"{path}/tokenizer.json")
    runtime = onnxruntime.InferenceSession(f"{path}/model.onnx")
    encodings = tokenizer.encode_batch(["a sentence", "another one"])
    outputs = runtime.run(None, {
        "token_ids": np.array([e.ids for e in encodings]),
        "segment_ids": np.array([e.type_ids for e in encodings]),
        "padding_mask": np.array([e.attention_mask for e in encodings])})

The graph is the task's ``onnx_call`` on its ``onnx_inputs()`` (the
task's own inputs; a masked LM's are its backbone's, and the graph finds
the mask tokens in ``token_ids``): a BERT task's ``token_ids``,
``segment_ids``, ``padding_mask``, each ``int64 [batch, sequence]`` as
``tokenizers`` gives them; batch and sequence length are free (up to the
backbone's ``max_sequence_length``). Its outputs are the task's numeric
serving outputs, named as in the SavedModel (a classifier's ``logits`` and
``probabilities``, an embedder's ``embeddings``, a masked LM's ``logits``
at the masks); string outputs (a classifier's ``labels``) are left out and
the label names go to the model's metadata (``label_names``, a JSON list). The tokenizer runs
outside the graph: ``tokenizer.json`` (``kzoo.export.tokenizer_json``)
gives the ids the task's preprocessor gives.

The graph is traced by PyTorch's ONNX exporter (``torch.onnx.export``,
``dynamo=True``, which needs ``onnxscript``) on the torch backend. On the
other backends a torch-backed copy of the task (a preset: the same
weights, so the same outputs) is exported in a subprocess
(``KERAS_BACKEND=torch``), as ``kzoo.export.saved_model`` does with
TensorFlow; ``onnx_many`` exports several tasks through one subprocess.

An object that is not a task takes part through the same hooks:
``onnx_inputs()`` and ``onnx_call(inputs)``, plus ``onnx_sequence_axis``
(the free axis of its inputs besides the batch; the last by default). An
object with ``serving_model()`` and none of these hooks is exported as the
object that method gives (an ELMo backbone or embedder as its
``ElmoEmbedding``: ``character_ids`` ``[batch, tokens, max_word_length]``
in, TF-Hub ELMo's outputs out). Without a preprocessor no
``tokenizer.json`` is written. A recurrent layer's ``keras.ops.scan`` is
traced as PyTorch's ``scan`` operator (an ONNX ``Scan``), so the number of
steps stays free (``_traceable_ops``).

The traced graph is then rewritten for onnxruntime (``onnx_graph.simplify``):
projection kernels folded to 2-D weights, the exact GELU as one ``Gelu``,
each attention core as one ``MultiHeadAttention`` (``com.microsoft``
operators, which onnxruntime runs), and the residual adds before the layer
norms as ``Sum``.
"""

import contextlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import keras

from kzoo.export import onnx_graph
from kzoo.export.onnx_int8 import quantize_int8
from kzoo.presets.atomic_files import replace_folder

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
#: the ONNX opset the graph is written in
OPSET = 18


def onnx(model, path, sequence_length=None, quantize=None):
    """Writes ``model`` as ``<path>/model.onnx`` and ``<path>/tokenizer.json``.

    Args:
        model: a kzoo ``Task`` with its preprocessor (a BERT task, text
            embedder, GPT classifier, multiple choice or causal LM), an
            ELMo backbone, embedding or embedder (``model.onnx`` only: its
            input is character ids), or an object with
            ``onnx_files(folder)`` that writes both files itself (word
            vectors: ``kzoo.export.word_table.write_onnx``).
        path: the folder to write (replaced atomically).
        sequence_length: int or None. The length ``tokenizer.json`` pads and
            truncates to (default the preprocessor's); the graph takes any
            length up to the backbone's maximum.
        quantize: None, or ``"int8"``: ``model.onnx`` holds int8 weights
            (``kzoo.export.onnx_int8``): every projection's and the
            embedding tables', but for a few outlier channels computed
            apart in float32.

    Returns:
        The absolute ``path``.
    """
    return onnx_many([(model, path)], sequence_length, quantize)[0]


def onnx_many(models, sequence_length=None, quantize=None):
    """Writes several models as ``onnx`` does, each in its own folder.

    On JAX and TensorFlow the graphs of all of them are traced in one
    torch-backed subprocess (``onnx`` starts one per model). Each folder is
    put in place once every graph is written; on failure none is.

    Args:
        models: a list of ``(model, path)`` pairs, as ``onnx`` takes them.
        sequence_length, quantize: as ``onnx``'s, for every model.

    Returns:
        The absolute paths, in order.
    """
    if quantize not in (None, "int8"):
        raise ValueError(f"`quantize` must be None or 'int8', got {quantize!r}.")
    models = [(_onnx_object(model), os.path.abspath(os.fspath(path)))
              for model, path in models]
    paths = [path for _, path in models]
    if len(set(paths)) != len(paths):
        raise ValueError("Each model needs its own folder: two share one.")
    for model, _ in models:
        if getattr(model, "onnx_files", None) is None:  # word vectors write their own
            _check_exportable(model)
    folders = []
    try:
        from kzoo.export.tokenizer_json import tokenizer_json

        graphs = []  # (task, its model.onnx)
        for model, path in models:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.tmp-",
                                   dir=os.path.dirname(path))
            folders.append(tmp)
            write_files = getattr(model, "onnx_files", None)
            if write_files is not None:  # the object writes both files itself
                write_files(tmp)
                continue
            if getattr(model, "preprocessor", None) is not None:
                tokenizer_json(model.preprocessor, sequence_length).save(
                    os.path.join(tmp, TOKENIZER_FILE))
            graphs.append((model, os.path.join(tmp, MODEL_FILE)))
        if keras.config.backend() == "torch":
            for model, file in graphs:
                write_graph(model, file)
        elif graphs:
            _export_through_torch(graphs)
        if quantize == "int8":
            for (model, _), tmp in zip(models, folders):
                float_file = os.path.join(tmp, "float32.onnx")
                os.replace(os.path.join(tmp, MODEL_FILE), float_file)
                calibration = (None if getattr(model, "onnx_files", None) is not None
                               else calibration_inputs(model))
                quantize_int8(float_file, os.path.join(tmp, MODEL_FILE), calibration)
                os.remove(float_file)
        for tmp, path in zip(list(folders), paths):
            replace_folder(tmp, path)
            folders.remove(tmp)
    except BaseException:
        for tmp in folders:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    return paths


def _onnx_object(model):
    """``model``, or what its ``serving_model()`` gives when it has none of
    the ONNX hooks (an ELMo backbone or embedder: its ``ElmoEmbedding``)."""
    hooks = ("onnx_files", "onnx_call", "onnx_inputs")
    if not any(hasattr(model, hook) for hook in hooks) and hasattr(model, "serving_model"):
        return model.serving_model()
    return model


def _check_exportable(model):
    from kzoo.models.task import Task

    if not isinstance(model, Task):
        if not (hasattr(model, "onnx_inputs") and hasattr(model, "onnx_call")):
            raise TypeError(
                f"ONNX export takes a kzoo Task, word vectors or ELMo, got "
                f"{type(model).__name__}.")
    elif getattr(model, "preprocessor", None) is None:
        raise ValueError(
            "ONNX export needs the task's preprocessor (it is written as "
            "tokenizer.json): build the task with `preprocessor=`.")
    graph_inputs(model)
    for module in ("onnx", "torch", "tokenizers"):
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(
                f"ONNX export needs `{module}`: pip install 'kzoo[onnx]'.")


def graph_inputs(model):
    """The graph's inputs, ``{name: Keras input}``: the task's
    ``onnx_inputs()`` (its own inputs, a masked LM its backbone's)."""
    inputs = model.onnx_inputs()
    if not isinstance(inputs, dict):
        raise TypeError(
            f"{type(model).__name__} takes no dict of token tensors, which ONNX "
            "export needs (a task built on a kzoo backbone).")
    return inputs


def write_graph(model, file):
    """Traces ``model``'s numeric serving outputs into the ONNX ``file``
    (torch backend, in this process)."""
    import onnx as onnx_lib
    import torch

    inputs = graph_inputs(model)
    names = list(inputs)
    dtypes = {name: inputs[name].dtype for name in names}
    outputs = {}

    class Graph(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.task = model

        def forward(self, *tensors):
            x = {name: tensor.to(_torch_dtype(torch, dtypes[name]))
                 for name, tensor in zip(names, tensors)}
            named = model.onnx_call(x)
            outputs.setdefault("names", list(named))
            return tuple(named.values())

    backbone = getattr(model, "backbone", None)
    max_length = int(getattr(backbone, "max_sequence_length", 0) or 0) or None
    length = min(8, max_length) if max_length else 8
    # Batch (first) and sequence (the last axis, or the object's
    # ``onnx_sequence_axis``) are free; any other dimension is the task's
    # own (a multiple-choice task's choices; 3 in the example where free).
    example, shapes, axes = [], [], []
    batch = torch.export.Dim("batch")
    sequence = torch.export.Dim("sequence", min=2, max=max_length)
    for name in names:
        shape = list(inputs[name].shape)
        axis = getattr(model, "onnx_sequence_axis", -1) % len(shape)
        sizes = [2] + [3 if size is None else int(size) for size in shape[1:]]
        sizes[axis] = length
        example.append(torch.ones(sizes, dtype=torch.int64))
        shapes.append({0: batch, axis: sequence})
        axes.append(axis)
    example = tuple(example)
    graph = Graph().eval()
    with torch.no_grad():
        graph(*example)  # the output names
    with _traceable_ops(torch):
        torch.onnx.export(
            graph, example, file, dynamo=True, input_names=names,
            output_names=outputs["names"], dynamic_shapes=(tuple(shapes),),
            opset_version=OPSET, external_data=False, verbose=False)
    written = onnx_lib.load(file)
    _check_free_dimensions(written, dict(zip(names, axes)))
    onnx_graph.simplify(written)
    metadata = {"producer": "kzoo", "input_names": json.dumps(names)}
    label_names = getattr(model, "label_names", None)
    if label_names:
        metadata["label_names"] = json.dumps(list(label_names))
    onnx_lib.helper.set_model_props(written, metadata)
    onnx_lib.save(written, file)


@contextlib.contextmanager
def _traceable_ops(torch):
    """While torch's exporter traces: three ``keras.ops`` functions replaced
    by equal ones it can trace with a free batch and length.

    * ``scan``: Keras' torch ``scan`` is a Python loop, which the trace
      unrolls for the example's length; ``torch``'s ``scan`` operator
      becomes one ONNX ``Scan`` (its step may not return its carry, nor
      create constants: hence the copies and ``clip`` below).
    * ``take_along_axis`` with nothing to broadcast (the indices' other
      axes as the input's): ``torch.gather`` (torch's ``take_along_dim``
      fixes the batch size in the trace).
    * ``clip`` between two Python numbers: ``torch.clamp`` with those numbers.

    Any other call goes to Keras' own function.
    """
    from torch._higher_order_ops.scan import scan as torch_scan
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    ops = keras.ops
    originals = {name: getattr(ops, name) for name in ("scan", "take_along_axis", "clip")}

    def contiguous(tree):
        return keras.tree.map_structure(lambda t: torch.as_tensor(t).contiguous(), tree)

    def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
        if xs is None:
            return originals["scan"](f, init, xs, length, reverse, unroll)

        def step(carry, x):
            carry, y = f(carry, x)
            return contiguous(carry), keras.tree.map_structure(
                lambda t: torch.as_tensor(t).clone(), y)

        return torch_scan(step, contiguous(init), xs, reverse=reverse)

    def take_along_axis(x, indices, axis=None):
        if (axis is not None and isinstance(x, torch.Tensor)
                and isinstance(indices, torch.Tensor) and x.ndim == indices.ndim):
            axis %= x.ndim
            # Nothing to broadcast (known without adding a guard to the trace).
            if all(statically_known_true(a == b) for d, (a, b)
                   in enumerate(zip(x.shape, indices.shape)) if d != axis):
                indices = indices.long()
                # Keras' take_along_axis counts a negative index from the end.
                indices = torch.where(indices < 0, indices + x.shape[axis], indices)
                return torch.gather(x, axis, indices)
        return originals["take_along_axis"](x, indices, axis=axis)

    def clip(x, x_min, x_max):
        if isinstance(x_min, (int, float)) and isinstance(x_max, (int, float)):
            return torch.clamp(torch.as_tensor(x), x_min, x_max)
        return originals["clip"](x, x_min, x_max)

    replacements = {"scan": scan, "take_along_axis": take_along_axis, "clip": clip}
    try:
        for name, function in replacements.items():
            setattr(ops, name, function)
        yield
    finally:
        for name, function in originals.items():
            setattr(ops, name, function)


def calibration_inputs(model, batch=8, length=64, seed=0):
    """Inputs for ``quantize_int8``'s ``calibration``: random token ids
    (below the backbone's vocabulary size), a padding mask of ones and
    zeros for the other inputs, ``[batch, ..., length]`` (the length at
    most the backbone's maximum); None where the task has no
    ``backbone.vocabulary_size``."""
    import numpy as np

    backbone = getattr(model, "backbone", None)
    vocabulary_size = getattr(backbone, "vocabulary_size", None)
    if not vocabulary_size:
        return None
    length = min(length, int(getattr(backbone, "max_sequence_length", 0) or length))
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, tensor in graph_inputs(model).items():
        middle = [3 if size is None else int(size) for size in tensor.shape[1:-1]]
        shape = [batch, *middle, length]
        if name == "token_ids":
            feeds[name] = rng.integers(0, vocabulary_size, shape, dtype="int64")
        elif name == "padding_mask":
            feeds[name] = np.ones(shape, "int64")
        else:
            feeds[name] = np.zeros(shape, "int64")
    return feeds


def _check_free_dimensions(written, axes):
    """torch's exporter falls back to fixed shapes when the trace fixes
    one: refuse such a graph rather than write one that takes only the
    example's batch and length. ``axes``: ``{input name: its sequence
    axis}``."""
    for graph_input in written.graph.input:
        dims = graph_input.type.tensor_type.shape.dim
        axis = axes.get(graph_input.name)
        if axis is not None and not (dims[0].dim_param and dims[axis].dim_param):
            raise RuntimeError(
                f"The traced ONNX graph fixed the batch or sequence length of "
                f"`{graph_input.name}` ({[d.dim_value or d.dim_param for d in dims]}): "
                "some op of the model reads a dimension as a Python int on the "
                "torch backend.")


def _torch_dtype(torch, dtype):
    dtype = keras.backend.standardize_dtype(dtype)
    return torch.bool if dtype == "bool" else getattr(torch, dtype)


def _export_through_torch(graphs):
    """Writes each ``(task, file)`` of ``graphs`` from a torch-backed copy
    of the task, all in one subprocess."""
    from kzoo.export.saved_model import _save_copy

    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "kzoo.export.onnx_main"]
        for i, (model, file) in enumerate(graphs):
            folder = os.path.join(tmp, str(i))
            os.mkdir(folder)
            cls = type(model)
            command += [f"{cls.__module__}:{cls.__qualname__}",
                        _save_copy(model, folder), file]
        env = dict(os.environ, KERAS_BACKEND="torch")
        result = subprocess.run(command, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(
                "Exporting ONNX through a torch-backed copy failed:\n"
                + result.stderr[-3000:])


def main(argv):
    """``python -m kzoo.export.onnx_main MODULE:CLASS COPY FILE [MODULE:CLASS
    COPY FILE ...]``: rebuilds each ``CLASS`` task saved in the preset
    ``COPY`` and writes its graph to ``FILE`` (torch backend)."""
    import kzoo.models  # noqa: F401  (registers kzoo's classes)
    from kzoo.export.saved_model import _load_copy

    if not argv or len(argv) % 3:
        raise SystemExit("usage: python -m kzoo.export.onnx_main "
                         "MODULE:CLASS COPY FILE [MODULE:CLASS COPY FILE ...]")
    for start in range(0, len(argv), 3):
        module, _, qualname = argv[start].partition(":")
        cls = importlib.import_module(module)
        for name in qualname.split("."):
            cls = getattr(cls, name)
        write_graph(_load_copy(cls, argv[start + 1]), argv[start + 2])
