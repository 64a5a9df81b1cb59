"""Rewrites of a traced ONNX graph into the operators onnxruntime runs fastest.

torch's exporter writes what the torch backend computes, op by op: the
attention kernels kept 3-D (``[hidden, heads, head_dim]``) and reshaped at
every call, the exact GELU as five elementwise ops, and scaled dot-product
attention as two scale products, a key transpose through 3-D reshapes, a
mask add, a softmax and two batched products. ``simplify`` rewrites them:

- ``fold_constant_reshapes``: a ``Reshape`` of an initializer by a constant
  shape becomes an initializer of the new shape (every projection kernel is
  then a 2-D ``MatMul`` weight, which int8 quantization reaches);
- ``fuse_gelu``: the exact GELU's ops become one ``com.microsoft.Gelu``
  (onnxruntime then fuses it with the bias add before it, ``BiasGelu``);
- ``fuse_attention``: the attention core between the query, key and value
  projections and the output projection becomes one
  ``com.microsoft.MultiHeadAttention`` (with the additive mask as its
  ``attention_bias``, broadcast to ``[batch, 1, query, key]``);
- ``sum_before_layer_norm``: each residual add before a layer norm becomes
  one ``Sum`` (with the bias add before it), which keeps onnxruntime from
  fusing them into its ``SkipLayerNormalization`` (slower on CPU than the
  add and the layer norm apart).

Each rewrite matches its pattern exactly and leaves anything else as it
is; the ``com.microsoft`` operators run on onnxruntime, the runtime the
export targets.
"""

import collections
import math

import numpy as np

#: the domain of onnxruntime's fused operators
MS_DOMAIN = "com.microsoft"
#: the version of the ``com.microsoft`` operator set the rewrites use
MS_OPSET = 1


class Graph:
    """Look-ups over an ``onnx.GraphProto``: producers, consumers, constants."""

    def __init__(self, graph):
        from onnx import numpy_helper

        self.graph = graph
        self._numpy_helper = numpy_helper
        self.initializers = {i.name: i for i in graph.initializer}
        self.producer = {}
        for node in graph.node:
            for name in node.output:
                self.producer[name] = node
        self.consumers = collections.defaultdict(list)
        for node in graph.node:
            for name in node.input:
                self.consumers[name].append(node)
        self.outputs = {o.name for o in graph.output}
        self._names = set(self.producer) | set(self.initializers) | {
            i.name for i in graph.input}
        self._count = 0

    def constant(self, name):
        """The numpy value of ``name`` where it is constant (an initializer
        or a ``Constant`` node's tensor), else None."""
        if name in self.initializers:
            return self._numpy_helper.to_array(self.initializers[name])
        node = self.producer.get(name)
        if node is not None and node.op_type == "Constant":
            for attribute in node.attribute:
                if attribute.name == "value":
                    return self._numpy_helper.to_array(attribute.t)
        return None

    def rank(self, name):
        """``name``'s rank where the graph records its shape, else None."""
        for info in (*self.graph.value_info, *self.graph.input, *self.graph.output):
            if info.name == name and info.type.tensor_type.HasField("shape"):
                return len(info.type.tensor_type.shape.dim)
        return None

    def scalar(self, name):
        value = self.constant(name)
        if value is None or value.size != 1:
            return None
        return float(value.reshape(()))

    def node(self, name, op_type):
        """The node of ``op_type`` that makes ``name``, or None."""
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op_type else None

    def only_consumer(self, name):
        consumers = self.consumers.get(name, [])
        if len(consumers) != 1 or name in self.outputs:
            return None
        return consumers[0]

    def fresh(self, stem):
        while True:
            self._count += 1
            name = f"{stem}_kzoo_{self._count}"
            if name not in self._names:
                self._names.add(name)
                return name


def _attribute(node, name, default=None):
    from onnx import helper

    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default


def _other_input(node, name):
    """The input of a two-input ``node`` that is not ``name`` (None when
    ``name`` is not one of them)."""
    if list(node.input).count(name) != 1 or len(node.input) != 2:
        return None
    return node.input[1] if node.input[0] == name else node.input[0]


def remove_dead_nodes(graph):
    """Drops the nodes none of whose outputs is used, then the unused
    initializers."""
    outputs = {o.name for o in graph.output}
    while True:
        used = {name for node in graph.node for name in node.input} | outputs
        keep = [node for node in graph.node if any(o in used for o in node.output)]
        if len(keep) == len(graph.node):
            break
        del graph.node[:]
        graph.node.extend(keep)
    used = {name for node in graph.node for name in node.input} | outputs
    keep = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    made = {name for node in graph.node for name in node.output}
    keep = [v for v in graph.value_info if v.name in made]
    del graph.value_info[:]
    graph.value_info.extend(keep)


def topological_sort(graph):
    """Puts ``graph``'s nodes in an order where each follows its inputs'
    producers (new nodes are appended at the end)."""
    available = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    available.add("")
    pending = list(graph.node)
    ordered = []
    while pending:
        remaining = []
        for node in pending:
            if all(name in available for name in node.input):
                ordered.append(node)
                available.update(node.output)
            else:
                remaining.append(node)
        if len(remaining) == len(pending):
            raise RuntimeError("The rewritten ONNX graph has a cycle or a missing input.")
        pending = remaining
    del graph.node[:]
    graph.node.extend(ordered)


def fold_constant_reshapes(model):
    """Replaces each ``Reshape`` of an initializer by a constant shape with
    an initializer of the reshaped value. Returns how many it folded."""
    from onnx import numpy_helper

    graph = Graph(model.graph)
    folded = 0
    keep = []
    for node in model.graph.node:
        if node.op_type == "Reshape" and node.input[0] in graph.initializers:
            data = graph.constant(node.input[0])
            shape = graph.constant(node.input[1])
            if shape is not None:
                shape = [int(s) for s in shape]
                if not _attribute(node, "allowzero", 0):  # 0 copies the input's size
                    shape = [data.shape[i] if s == 0 else s for i, s in enumerate(shape)]
                model.graph.initializer.append(
                    numpy_helper.from_array(data.reshape(shape), node.output[0]))
                folded += 1
                continue
        keep.append(node)
    del model.graph.node[:]
    model.graph.node.extend(keep)
    remove_dead_nodes(model.graph)
    return folded


def _beside_scalar(graph, node, value):
    """The inputs of the binary ``node`` whose other input is the constant
    scalar ``value``."""
    return [name for name in node.input
            if graph.scalar(_other_input(node, name) or "") == value]


def _match_gelu(graph, node):
    """``x * (0.5 * (erf(x / sqrt(2)) + 1))`` (torch's exact GELU, the
    factors in any order) ending at the ``Mul`` ``node``: returns ``x``."""
    if node.op_type != "Mul":
        return None
    for x in node.input:
        half = graph.node(_other_input(node, x) or "", "Mul")
        if half is None or not graph.only_consumer(half.output[0]):
            continue
        for add_name in _beside_scalar(graph, half, 0.5):
            add = graph.node(add_name, "Add")
            if add is None or not graph.only_consumer(add.output[0]):
                continue
            for erf_name in _beside_scalar(graph, add, 1.0):
                erf = graph.node(erf_name, "Erf")
                if erf is None or not graph.only_consumer(erf.output[0]):
                    continue
                inner = graph.producer.get(erf.input[0])
                if inner is None or inner.input[0] != x:
                    continue
                factor = graph.scalar(inner.input[1])
                if factor is None:
                    continue
                if inner.op_type == "Div" and math.isclose(factor, math.sqrt(2), rel_tol=1e-6):
                    return x
                if inner.op_type == "Mul" and math.isclose(factor, math.sqrt(0.5),
                                                           rel_tol=1e-6):
                    return x
    return None


def fuse_gelu(model):
    """Replaces each exact GELU written out in elementwise ops with one
    ``com.microsoft.Gelu``. Returns how many it fused."""
    from onnx import helper

    graph = Graph(model.graph)
    fused = 0
    for node in list(model.graph.node):
        x = _match_gelu(graph, node)
        if x is None:
            continue
        model.graph.node.append(helper.make_node(
            "Gelu", [x], [node.output[0]], name=graph.fresh("gelu"), domain=MS_DOMAIN))
        model.graph.node.remove(node)
        fused += 1
    if fused:
        remove_dead_nodes(model.graph)
        topological_sort(model.graph)
    return fused


def _split_heads(graph, name):
    """``name`` = Transpose(perm 0,2,1,3) of Reshape(x, [batch, length,
    heads, head_dim]): returns ``(x, heads, head_dim)``, or None."""
    transpose = graph.node(name, "Transpose")
    if transpose is None or list(_attribute(transpose, "perm", [])) != [0, 2, 1, 3]:
        return None
    reshape = graph.node(transpose.input[0], "Reshape")
    if reshape is None:
        return None
    sizes = _trailing_sizes(graph, reshape.input[1])
    if sizes is None:
        return None
    return reshape.input[0], sizes[0], sizes[1]


def _trailing_sizes(graph, shape):
    """The last two sizes of a 4-D reshape target ``shape`` (a constant, or
    a ``Concat`` whose last two parts are constant), or None."""
    value = graph.constant(shape)
    if value is not None:
        value = [int(v) for v in np.reshape(value, -1)]
        return tuple(value[2:]) if len(value) == 4 and min(value[2:]) > 0 else None
    concat = graph.node(shape, "Concat")
    if concat is None:
        return None
    parts = [graph.constant(name) for name in concat.input]
    tail = [int(v) for part in parts[-2:] if part is not None
            for v in np.reshape(part, -1)]
    leading = sum(1 if p is None else int(np.size(p)) for p in parts[:-2])
    if any(p is None for p in parts[-2:]) or len(tail) != 2 or leading != 2:
        return None
    return tuple(tail) if min(tail) > 0 else None


def _transposed_key(graph, name):
    """``name`` = the key in ``[batch, heads, head_dim, length]``, from
    ``_split_heads``'s layout: either one Transpose (perm 0,1,3,2 of it,
    or perm 0,2,3,1 of the unsplit reshape) or torch's 3-D form
    Reshape(Transpose(perm 0,2,1)(Reshape(split, [-1, length, head_dim])),
    [batch, heads, head_dim, length]). Returns ``_split_heads``'s triple."""
    transpose = graph.node(name, "Transpose")
    if transpose is not None:
        perm = list(_attribute(transpose, "perm", []))
        if perm == [0, 1, 3, 2]:
            return _split_heads(graph, transpose.input[0])
        if perm == [0, 2, 3, 1]:
            reshape = graph.node(transpose.input[0], "Reshape")
            sizes = reshape and _trailing_sizes(graph, reshape.input[1])
            return (reshape.input[0], *sizes) if sizes else None
        return None
    outer = graph.node(name, "Reshape")
    middle = outer and graph.node(outer.input[0], "Transpose")
    if middle is None or list(_attribute(middle, "perm", [])) != [0, 2, 1]:
        return None
    inner = graph.node(middle.input[0], "Reshape")
    return inner and _split_heads(graph, inner.input[0])


def _scaled(graph, name):
    """``name`` = Mul(x, constant scalar) (either order) -> ``(x, scalar)``;
    anything else -> ``(name, 1.0)``."""
    node = graph.node(name, "Mul")
    if node is not None:
        for x in node.input:
            factor = graph.scalar(_other_input(node, x) or "")
            if factor is not None:
                return x, factor
    return name, 1.0


def _match_attention(graph, softmax):
    """The attention core around ``softmax``: ``{query, key, value, mask,
    heads, scale, output}`` (query, key, value the ``[batch, length,
    hidden]`` projections, output the ``[batch, length, hidden]`` tensor
    the core ends in), or None."""
    axis = _attribute(softmax, "axis", -1)
    if axis not in (-1, 3):
        return None
    probabilities = graph.only_consumer(softmax.output[0])
    if probabilities is None or probabilities.op_type != "MatMul" or (
            probabilities.input[0] != softmax.output[0]):
        return None
    scores, mask = softmax.input[0], None
    add = graph.node(scores, "Add")
    if add is not None:
        for name in add.input:
            if graph.node(name, "MatMul") is not None:
                scores, mask = name, _other_input(add, name)
                break
        else:
            return None
    product = graph.node(scores, "MatMul")
    if product is None or graph.only_consumer(product.output[0]) is None:
        return None
    query_name, query_scale = _scaled(graph, product.input[0])
    key_name, key_scale = _scaled(graph, product.input[1])
    query = _split_heads(graph, query_name)
    key = _transposed_key(graph, key_name)
    value = _split_heads(graph, probabilities.input[1])
    if None in (query, key, value) or not query[1:] == key[1:] == value[1:]:
        return None
    merge = graph.only_consumer(probabilities.output[0])
    if merge is None or merge.op_type != "Transpose" or list(
            _attribute(merge, "perm", [])) != [0, 2, 1, 3]:
        return None
    output = graph.only_consumer(merge.output[0])
    if output is None or output.op_type != "Reshape":
        return None
    if any(graph.rank(x[0]) != 3 for x in (query, key, value)) or (
            mask is not None and graph.rank(mask) != 4):
        return None  # MultiHeadAttention takes [batch, length, hidden]
    heads, head_dim = query[1:]
    return {"query": query[0], "key": key[0], "value": value[0], "mask": mask,
            "heads": heads, "scale": query_scale * key_scale,
            "output": output.output[0], "merge_shape": output.input[1],
            "hidden": heads * head_dim}


def fuse_attention(model):
    """Replaces each attention core (see the module docstring) with one
    ``com.microsoft.MultiHeadAttention``. Returns how many it fused."""
    from onnx import helper, numpy_helper

    graph = Graph(model.graph)
    matches = [m for m in (_match_attention(graph, node) for node in model.graph.node
                           if node.op_type == "Softmax") if m is not None]
    biases = {}  # mask -> its attention_bias
    for match in matches:
        inputs = [match["query"], match["key"], match["value"], "", ""]
        mask = match["mask"]
        if mask is not None:
            if mask not in biases:
                # [batch or 1, heads or 1, 1 or query, key] -> [.., .., query, key]
                length = graph.fresh("query_length")
                ones = graph.fresh("ones")
                shape = graph.fresh("bias_shape")
                biases[mask] = graph.fresh("attention_bias")
                model.graph.initializer.append(
                    numpy_helper.from_array(np.ones([1], "int64"), ones))
                model.graph.node.extend([
                    helper.make_node("Shape", [match["query"]], [length], start=1, end=2,
                                     name=graph.fresh("shape")),
                    helper.make_node("Concat", [ones, ones, length, ones], [shape], axis=0,
                                     name=graph.fresh("concat")),
                    helper.make_node("Expand", [mask, shape], [biases[mask]],
                                     name=graph.fresh("expand")),
                ])
            inputs.append(biases[mask])
        model.graph.node.append(helper.make_node(
            "MultiHeadAttention", inputs, [match["output"]],
            name=graph.fresh("attention"), domain=MS_DOMAIN,
            num_heads=match["heads"], scale=match["scale"]))
        old = graph.producer[match["output"]]
        model.graph.node.remove(old)
    if matches:
        remove_dead_nodes(model.graph)
        topological_sort(model.graph)
    return len(matches)


def sum_before_layer_norm(model):
    """Writes each ``Add`` that feeds a ``LayerNormalization`` as one
    ``Sum``, taking in the ``Add`` before it where that one feeds only it
    (a projection's bias add: ``Sum(x @ W, bias, residual)``). Returns how
    many it rewrote.

    onnxruntime fuses ``Add`` + ``LayerNormalization`` into its
    ``SkipLayerNormalization``, whose CPU kernel runs slower than the plain
    add and layer norm apart; it leaves a ``Sum`` alone."""
    from onnx import helper

    graph = Graph(model.graph)
    rewritten = 0
    for norm in list(model.graph.node):
        if norm.op_type != "LayerNormalization":
            continue
        add = graph.node(norm.input[0], "Add")
        if add is None or add not in model.graph.node:
            continue
        terms = []
        for name in add.input:
            inner = graph.node(name, "Add")
            if inner is not None and graph.only_consumer(name) is add:
                terms.extend(inner.input)
                model.graph.node.remove(inner)
            else:
                terms.append(name)
        model.graph.node.append(helper.make_node(
            "Sum", terms, [add.output[0]], name=graph.fresh("sum")))
        model.graph.node.remove(add)
        rewritten += 1
    if rewritten:
        topological_sort(model.graph)
    return rewritten


def simplify(model):
    """Applies the rewrites to ``model`` (an ``onnx.ModelProto``) in place
    and declares the ``com.microsoft`` operator set where they used it.
    Returns ``{rewrite: count}``.

    A graph with subgraphs (a recurrent layer's ONNX ``Scan``) is left as
    traced, ``{}``: the rewrites see the users of a value in the main graph
    only, not in the subgraphs that read it."""
    from onnx import AttributeProto, helper

    if any(attribute.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS)
           for node in model.graph.node for attribute in node.attribute):
        return {}
    graph = Graph(model.graph)
    for node in model.graph.node:  # quantization picks nodes by name
        if not node.name:
            node.name = graph.fresh(node.op_type.lower())
    counts = {"folded_reshapes": fold_constant_reshapes(model),
              "gelu": fuse_gelu(model),
              "attention": fuse_attention(model),
              "sums": sum_before_layer_norm(model)}
    if (counts["gelu"] or counts["attention"]) and MS_DOMAIN not in {
            o.domain for o in model.opset_import}:
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, MS_OPSET))
    return counts
