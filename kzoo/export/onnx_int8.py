"""int8 weights for an exported ONNX graph (``onnx(..., quantize="int8")``).

``quantize_int8`` runs onnxruntime's dynamic quantization (int8 weights per
output channel, activations quantized per call at run time) on the graph
``onnx_graph.simplify`` wrote, where every projection is a plain ``MatMul``
with a 2-D constant weight.

Dynamic quantization gives each activation one scale for all its
channels. In a transformer a few channels of some activations take values
several times larger than the rest (the same channels whatever the text),
and that one scale, set by them, is too coarse for the others. Given
calibration inputs, ``split_outlier_channels`` finds those channels where
they cost the most and computes them apart in a narrow float32 product
beside the int8 one (same sums, so the float32 outputs are unchanged):

- the GELU activations between a feed-forward network's two products;
- the input of each attention value projection (a layer norm's output):
  the value projection's output reaches the attention's result without the
  softmax in between, so its error moves the outputs the most.

Without calibration inputs the value projections stay float32 instead.
"""

import os
import tempfile

import numpy as np

from kzoo.export.onnx_graph import MS_DOMAIN, Graph, remove_dead_nodes, topological_sort

#: a channel whose largest calibration activation is this many times the
#: median channel's is an outlier (``split_outlier_channels``)
OUTLIER_RATIO = 4.0


def quantize_int8(source, target, calibration=None):
    """Writes ``source``'s graph (an ONNX file) with int8 weights to
    ``target``: onnxruntime's dynamic quantization, per output channel.

    Every matrix product with a constant weight becomes an int8 one (the
    query, key, value and output projections and both feed-forward products
    of each layer, and a head's), as do the embedding tables, except the
    narrow float32 products that ``split_outlier_channels`` adds given
    ``calibration`` (the graph's inputs, ``{name: array}``). Without
    ``calibration`` the attention value projections stay float32
    (``value_projections``).
    """
    import onnx as onnx_lib
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx_lib.load(os.fspath(source))
    if calibration is None:
        keep = value_projections(model)
    else:
        keep = split_outlier_channels(model, calibration)
    with tempfile.TemporaryDirectory() as tmp:
        split = os.path.join(tmp, "split.onnx")
        onnx_lib.save(model, split)
        quantize_dynamic(split, os.fspath(target),
                         weight_type=QuantType.QInt8, per_channel=True,
                         nodes_to_exclude=keep,
                         extra_options={"DefaultTensorType": onnx_lib.TensorProto.FLOAT})


def _value_projection(graph, attention):
    """The ``MatMul`` (constant weight) that makes ``attention``'s value
    input, directly or through a bias ``Add``, and the node whose output
    is that input; ``(None, None)`` when there is none."""
    producer = graph.producer.get(attention.input[2])
    product = producer
    if producer is not None and producer.op_type == "Add":
        product = next((graph.producer[name] for name in producer.input
                        if graph.node(name, "MatMul") is not None), None)
    if product is None or product.op_type != "MatMul" or (
            product.input[1] not in graph.initializers):
        return None, None
    return product, producer


def _value_projections(graph):
    found = []
    for node in graph.graph.node:
        if node.op_type == "MultiHeadAttention" and node.domain == MS_DOMAIN:
            product, last = _value_projection(graph, node)
            if product is not None:
                found.append((product, last))
    return found


def value_projections(model):
    """The names of the ``MatMul`` nodes that make the value input of each
    ``MultiHeadAttention`` of ``model`` (directly or through a bias
    ``Add``)."""
    return [product.name for product, _ in _value_projections(Graph(model.graph))]


def _feed_forwards(graph):
    """Each feed-forward network ``MatMul(x, W1) -> Add(b1) -> Gelu ->
    MatMul(W2) -> Sum`` of ``graph`` (constant weights and bias), as a
    tuple of those five nodes and ``b1``'s name."""
    found = []
    for gelu in graph.graph.node:
        if gelu.op_type != "Gelu" or gelu.domain != MS_DOMAIN:
            continue
        down = graph.only_consumer(gelu.output[0])
        add = graph.node(gelu.input[0], "Add")
        if down is None or down.op_type != "MatMul" or add is None or (
                down.input[1] not in graph.initializers or down.input[0] != gelu.output[0]):
            continue
        up = next((graph.producer[name] for name in add.input
                   if graph.node(name, "MatMul") is not None), None)
        bias = next((name for name in add.input if name in graph.initializers), None)
        total = graph.only_consumer(down.output[0])
        if up is None or bias is None or up.input[1] not in graph.initializers or (
                total is None or total.op_type != "Sum"):
            continue
        found.append((up, add, gelu, down, total, bias))
    return found


def _activations(model, names, feeds):
    """The values of the tensors ``names`` when onnxruntime runs ``model``
    on ``feeds``."""
    import onnxruntime
    from onnx import helper

    probe = type(model)()
    probe.CopyFrom(model)
    del probe.graph.output[:]
    for name in names:
        probe.graph.output.append(helper.make_empty_tensor_value_info(name))
    runtime = onnxruntime.InferenceSession(probe.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return dict(zip(names, runtime.run(list(names), feeds)))


def _outliers(values, ratio):
    """The last-axis channels of ``values`` whose largest magnitude is over
    ``ratio`` times the median channel's (None when none or all are)."""
    peaks = np.abs(values.reshape(-1, values.shape[-1])).max(axis=0)
    outliers = np.flatnonzero(peaks > ratio * np.median(peaks))
    if not len(outliers) or len(outliers) == len(peaks):
        return None
    return outliers


class _Writer:
    """Adds constants and nodes with fresh names to a model."""

    def __init__(self, model, graph):
        from onnx import helper, numpy_helper

        self.model, self.graph = model, graph
        self.helper, self.numpy_helper = helper, numpy_helper

    def constant(self, stem, value):
        name = self.graph.fresh(stem)
        self.model.graph.initializer.append(
            self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op_type, inputs, stem, output=None, **attributes):
        """Appends a node with one output (``output``, or a name of its
        own); returns the node as appended."""
        name = self.graph.fresh(stem)
        self.model.graph.node.append(self.helper.make_node(
            op_type, inputs, [output or name + "_output"], name=name, **attributes))
        return self.model.graph.node[-1]


def _split_feed_forward(writer, network, outliers):
    """``W1``'s outlier columns, ``b1``'s entries and ``W2``'s rows move
    into a second, narrow product pair added in the same ``Sum``."""
    up, add, gelu, down, total, bias = network
    graph = writer.graph
    w1, b1, w2 = (graph.constant(name) for name in (up.input[1], bias, down.input[1]))
    rest = np.setdiff1d(np.arange(w1.shape[1]), outliers)
    up.input[1] = writer.constant("up_kernel", w1[:, rest])
    add.input[list(add.input).index(bias)] = writer.constant("up_bias", b1[rest])
    down.input[1] = writer.constant("down_kernel", w2[rest])
    side_up = writer.node("MatMul", [up.input[0], writer.constant("up_kernel", w1[:, outliers])],
                          "outlier_up")
    biased = writer.node("Add", [side_up.output[0], writer.constant("up_bias", b1[outliers])],
                         "outlier_bias")
    activated = writer.node("Gelu", [biased.output[0]], "outlier_gelu", domain=MS_DOMAIN)
    side_down = writer.node(
        "MatMul", [activated.output[0], writer.constant("down_kernel", w2[outliers])],
        "outlier_down")
    total.input.append(side_down.output[0])
    return [side_up.name, side_down.name], {
        name for node in (up, add, gelu) for name in node.output}


def _split_value_input(writer, projection, outliers):
    """The projection's input with its outlier channels zeroed goes to the
    (int8) product; those channels' part, ``x[..., outliers] @
    W[outliers]``, is added to its output by a narrow float32 product."""
    product, last = projection
    source = product.input[0]
    weight = writer.graph.constant(product.input[1])
    keep = np.ones(weight.shape[0], "float32")
    keep[outliers] = 0.0
    masked = writer.node("Mul", [source, writer.constant("inlier_mask", keep)],
                         "value_inliers")
    product.input[0] = masked.output[0]
    picked = writer.node("Gather", [source, writer.constant(
        "outlier_channels", outliers.astype("int64"))], "value_outliers", axis=-1)
    side = writer.node("MatMul", [picked.output[0], writer.constant(
        "value_kernel", weight[outliers])], "outlier_value")
    value = last.output[0]
    last.output[0] = writer.graph.fresh("value_inliers")
    writer.node("Add", [last.output[0], side.output[0]], "value_sum", output=value)
    return [side.name]


def split_outlier_channels(model, feeds, ratio=OUTLIER_RATIO):
    """Computes the outlier channels of ``model`` apart (in place).

    Runs ``model`` on ``feeds`` (any valid inputs: random token ids do) and
    finds, in the GELU activations of each feed-forward network and in the
    input of each attention value projection, the channels whose largest
    value is over ``ratio`` times the median channel's; each such set moves
    into a narrow float32 product beside the int8 one (see the module
    docstring). The outputs are unchanged.

    Returns the names of the narrow products (to keep in float32).
    """
    graph = Graph(model.graph)
    networks = _feed_forwards(graph)
    projections = _value_projections(graph)
    probed = [network[2].output[0] for network in networks] + [
        product.input[0] for product, _ in projections]
    if not probed:
        return []
    values = _activations(model, dict.fromkeys(probed), feeds)
    writer = _Writer(model, graph)
    narrow, changed = [], set()
    for network in networks:
        outliers = _outliers(values[network[2].output[0]], ratio)
        if outliers is not None:
            products, reshaped = _split_feed_forward(writer, network, outliers)
            narrow += products
            changed |= reshaped
    for projection in projections:
        outliers = _outliers(values[projection[0].input[0]], ratio)
        if outliers is not None:
            narrow += _split_value_input(writer, projection, outliers)
    keep = [v for v in model.graph.value_info if v.name not in changed]
    del model.graph.value_info[:]
    model.graph.value_info.extend(keep)
    remove_dead_nodes(model.graph)
    topological_sort(model.graph)
    return narrow
