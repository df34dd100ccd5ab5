"""Checking an ONNX model that came from outside, before anything reads or draws it.

:func:`check_model` is the one point that decides whether a model is well formed enough to
be read: its opset imports, every graph and subgraph (each node reads only names that exist
by then and makes names nothing else makes, so the graph has no cycle), every tensor
(element type, dims against the bytes or values that hold its data), every attribute's type
and every external-data reference (a regular file inside the model's folder, large enough
for the tensor; it is looked at, never opened). Limits bound what a file may make the reader
allocate or recurse into. It raises a typed error naming the graph, node, initializer or
attribute; the caller has changed nothing by then.
"""
import os
import stat

from ...errors import InvalidArgument, NotFound, ResourceExhausted, Unimplemented, expected

#: nested subgraphs (an If in a Loop's body is depth 2); real models stay in single digits
MAX_DEPTH = 16
#: nodes in all graphs and functions together
MAX_NODES = 500_000
#: entries in one repeated field: a node's inputs, an attribute's ints, a graph's inputs
MAX_ITEMS = 100_000
#: dims of one tensor or value
MAX_RANK = 64
#: a model file: protobuf cannot hold a larger message
MAX_FILE_BYTES = 2 ** 31 - 1

#: ONNX element type -> (fluid_nb dtype, bytes per element, the typed field holding the
#: values when there is no raw_data, values per element in it)
ELEMENT_TYPES = {
    1: ("float32", 4, "float_data", 1), 2: ("uint8", 1, "int32_data", 1),
    3: ("int8", 1, "int32_data", 1), 5: ("int16", 2, "int32_data", 1),
    6: ("int32", 4, "int32_data", 1), 7: ("int64", 8, "int64_data", 1),
    9: ("bool", 1, "int32_data", 1), 10: ("float16", 2, "int32_data", 1),
    11: ("float64", 8, "double_data", 1), 14: ("complex64", 8, "float_data", 2),
    15: ("complex128", 16, "double_data", 2), 16: ("bfloat16", 2, "int32_data", 1),
}
_TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data",
                 "uint64_data")


def _onnx():
    from .export import _onnx as load
    return load()


def element_type(code, where, what):
    """The fluid_nb dtype of ONNX element type ``code``: InvalidArgument for UNDEFINED or a
    number ONNX does not define, Unimplemented for a type fluid_nb has no dtype for."""
    names = _onnx().TensorProto.DataType
    if code in ELEMENT_TYPES:
        return ELEMENT_TYPES[code][0]
    if code not in names.values() or code == 0:
        raise InvalidArgument(expected(where, f"{what} element type", "a defined ONNX type",
                                       f"{code}" + (" (UNDEFINED)" if code == 0 else "")))
    known = ", ".join(names.Name(c) for c in ELEMENT_TYPES)
    raise Unimplemented(expected(where, f"{what} element type", f"one of {known}",
                                 f"{names.Name(code)}, which fluid_nb has no dtype for"))


def read_model_file(path, where):
    """The bytes of the model file ``path``: a regular file (a device or FIFO would never
    end) of at most :data:`MAX_FILE_BYTES`."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise InvalidArgument(expected(where, "model", "an ONNX file or a ModelProto",
                                       f"no file {path!r}")) from None
    except (OSError, ValueError) as exc:  # a NUL in the path, a name too long
        raise InvalidArgument(expected(where, "model", "a readable ONNX file path",
                                       f"{path!r} ({exc})")) from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidArgument(expected(where, f"model {path!r}", "a regular file",
                                       "a directory" if stat.S_ISDIR(info.st_mode)
                                       else "a device, FIFO or socket"))
    if info.st_size > MAX_FILE_BYTES:
        raise ResourceExhausted(expected(where, f"model {path!r}",
                                         f"at most {MAX_FILE_BYTES} bytes",
                                         f"{info.st_size} bytes"))
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise InvalidArgument(expected(where, f"model {path!r}", "a readable file",
                                       exc.strerror or str(exc))) from None


def check_model(model, where, folder=None):
    """Refuse ``model`` (an ``onnx.ModelProto``) unless every part is well formed; see the
    module docstring. ``folder``: where its external data must lie (None: a model given in
    memory; references are then checked only for their form)."""
    _Checker(_onnx(), where, folder).model(model)


class _Checker:
    def __init__(self, onnx, where, folder):
        self.onnx, self.where, self.folder = onnx, where, folder
        self.nodes = 0

    def fail(self, what, want, got, kind=InvalidArgument):
        raise kind(expected(self.where, what, want, got))

    def text(self, value, what):
        """Names are text: protobuf hands a name whose bytes are not UTF-8 over as bytes."""
        if not isinstance(value, str):
            self.fail(what, "a UTF-8 name", repr(value)[:80])

    def count(self, what, items, limit=None):
        limit = MAX_ITEMS if limit is None else limit  # (read when called: tests lower it)
        if len(items) > limit:
            self.fail(what, f"at most {limit} entries", f"{len(items)}", ResourceExhausted)

    # --- the model -------------------------------------------------------------------------
    def model(self, model):
        ir = model.ir_version
        if not 1 <= ir <= self.onnx.IR_VERSION:  # (a newer one is well formed, not known)
            self.fail("ir_version", f"an IR version in [1, {self.onnx.IR_VERSION}]", f"{ir}",
                      Unimplemented if ir > self.onnx.IR_VERSION else InvalidArgument)
        opsets = self.opsets(model.opset_import, "opset_import", required=ir >= 3)
        self.functions(model, opsets)
        self.graph(model.graph, "graph", frozenset(), 0, opsets)

    def opsets(self, imports, what, required):
        """{domain: version} of ``imports``; the default domain's in onnx's range."""
        self.count(what, imports)
        if not imports and required:
            self.fail(what, "the opsets the model uses", "none")
        found = {} if imports else {"": 1}
        for entry in imports:
            self.text(entry.domain, f"{what} domain")
            domain = "" if entry.domain in ("", "ai.onnx") else entry.domain
            if domain in found:
                self.fail(f"{what} of domain {entry.domain!r}", "one import per domain",
                          "two")
            top = self.onnx.defs.onnx_opset_version() if domain == "" else 2 ** 31 - 1
            if not 1 <= entry.version <= top:
                self.fail(f"{what} of domain {entry.domain!r}", f"a version in [1, {top}]",
                          f"{entry.version}",
                          Unimplemented if entry.version > top else InvalidArgument)
            found[domain] = entry.version
        return found

    def functions(self, model, opsets):
        """Check the model's local functions: each defined once, its body well formed, none
        calling itself through others (inlining it would never end)."""
        self.count("functions", model.functions)
        local = {}
        for function in model.functions:
            key = _callee(function.domain, function.name, function)
            if key in local:
                self.fail(f"function {function.domain}::{function.name}",
                          "a unique domain and name", "a second definition")
            local[key] = function
        for key, function in local.items():
            what = f"function {key[0]}::{key[1]}"
            own = dict(opsets)
            own.update(self.opsets(function.opset_import, f"{what} opset_import", False))
            self.count(f"{what} inputs", function.input)
            names = set(function.input)
            self.body(function.node, what, names, frozenset(), 0, own)
            for name in function.output:
                self.defined(name, names, frozenset(), f"{what} output {name!r}")
        self.acyclic(local)

    def acyclic(self, local):
        calls = {key: {_callee(n.domain, n.op_type, n) for n in f.node} & set(local)
                 for key, f in local.items()}
        state = {}  # key -> "open" while its callees are walked, "done" after
        for root in calls:
            stack = [(root, iter(calls[root]))]
            state.setdefault(root, "open")
            while stack:
                key, callees = stack[-1]
                step = next(callees, None)
                if step is None:
                    state[key] = "done"
                    stack.pop()
                elif state.get(step) == "open":
                    self.fail(f"function {step[0]}::{step[1]}",
                              "functions that do not call themselves", "a call cycle")
                elif step not in state:
                    state[step] = "open"
                    stack.append((step, iter(calls[step])))

    # --- graphs and nodes ------------------------------------------------------------------
    def graph(self, graph, what, outer, depth, opsets):
        if depth > MAX_DEPTH:
            self.fail(what, f"subgraphs nested at most {MAX_DEPTH} deep",
                      f"one at depth {depth}", ResourceExhausted)
        for field in ("input", "output", "initializer", "sparse_initializer", "value_info",
                      "node"):
            self.count(f"{what} {field}", getattr(graph, field))
        local = set()
        for init in graph.initializer:
            self.unique(init.name, local, f"{what} initializer")
            self.tensor(init, f"{what} initializer {init.name!r}")
        for sparse in graph.sparse_initializer:
            self.unique(sparse.values.name, local, f"{what} sparse initializer")
            self.sparse(sparse, f"{what} sparse initializer {sparse.values.name!r}")
        inputs = set()
        for value in graph.input:
            self.unique(value.name, inputs, f"{what} input")
            self.value(value, f"{what} input {value.name!r}", required=True)
        local |= inputs
        for value in graph.value_info:
            self.text(value.name, f"{what} value_info")
            self.value(value, f"{what} value_info {value.name!r}", required=False)
        self.body(graph.node, what, local, outer, depth, opsets)
        outputs = set()
        for value in graph.output:
            self.unique(value.name, outputs, f"{what} output")
            self.value(value, f"{what} output {value.name!r}", required=True)
            self.defined(value.name, local, outer, f"{what} output {value.name!r}")

    def unique(self, name, seen, what):
        self.text(name, what)
        if not name:
            self.fail(what, "a name", "an empty name")
        if name in seen:
            self.fail(f"{what} {name!r}", "a name given once", "it a second time")
        seen.add(name)

    def defined(self, name, local, outer, what):
        self.text(name, what)
        if name and name not in local and name not in outer:
            self.fail(what, "a graph input, an initializer or an earlier node's output",
                      "a name nothing before it makes (a dangling name, a cycle or nodes out "
                      "of order)")

    def body(self, nodes, what, local, outer, depth, opsets):
        """Check ``nodes`` in order, adding what each makes to ``local``."""
        self.nodes += len(nodes)
        if self.nodes > MAX_NODES:
            self.fail("nodes", f"at most {MAX_NODES} in all graphs", f"{self.nodes}",
                      ResourceExhausted)
        for index, node in enumerate(nodes):
            short = f"node {node.name or '#' + str(index)!r} ({node.op_type})"
            self.node(node, f"{what} {short}", short, local, outer, depth, opsets)

    def node(self, node, what, short, local, outer, depth, opsets):
        """``what``: the node's full label; ``short``: the node alone, which starts its
        subgraphs' labels (a label naming every enclosing node would grow with depth)."""
        for field in ("name", "op_type", "domain"):
            self.text(getattr(node, field), f"{what} {field}")
        if not node.op_type:
            self.fail(what, "an op_type", "an empty one")
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        if domain not in opsets:
            self.fail(f"{what} domain", "a domain the model imports",
                      f"{node.domain!r}, which opset_import lacks")
        self.count(f"{what} inputs", node.input)
        self.count(f"{what} outputs", node.output)
        self.count(f"{what} attributes", node.attribute)
        for name in node.input:
            self.defined(name, local, outer, f"{what} input {name!r}")
        names = set()
        for attribute in node.attribute:
            self.unique(attribute.name, names, f"{what} attribute")
            self.attribute(attribute, f"{what} attribute {attribute.name!r}",
                           f"{short} attribute {attribute.name!r}", local | outer, depth,
                           opsets)
        made = set()
        for name in node.output:
            self.text(name, f"{what} output")
            if not name:  # an optional output left out
                continue
            if name in local or name in made:
                self.fail(f"{what} output {name!r}", "a name no other value has",
                          "a name already made (a duplicate output)")
            made.add(name)
        local |= made

    def attribute(self, attribute, what, inside, visible, depth, opsets):
        A = self.onnx.AttributeProto
        kind = attribute.type
        if kind not in A.AttributeType.values() or kind == A.UNDEFINED:
            self.fail(what, "a defined attribute type", f"{kind}")
        for field in ("floats", "ints", "strings", "tensors", "graphs", "sparse_tensors",
                      "type_protos"):
            self.count(f"{what} {field}", getattr(attribute, field))
        if kind == A.GRAPH:
            self.graph(attribute.g, f"subgraph ({inside})", frozenset(visible), depth + 1,
                       opsets)
        elif kind == A.GRAPHS:
            for k, graph in enumerate(attribute.graphs):
                self.graph(graph, f"subgraph {k} ({inside})", frozenset(visible), depth + 1,
                           opsets)
        elif kind == A.TENSOR:
            self.tensor(attribute.t, f"{what} tensor")
        elif kind == A.TENSORS:
            for k, tensor in enumerate(attribute.tensors):
                self.tensor(tensor, f"{what} tensor {k}")
        elif kind == A.SPARSE_TENSOR:
            self.sparse(attribute.sparse_tensor, f"{what} sparse tensor")
        elif kind == A.SPARSE_TENSORS:
            for k, sparse in enumerate(attribute.sparse_tensors):
                self.sparse(sparse, f"{what} sparse tensor {k}")

    # --- values and tensors ----------------------------------------------------------------
    def value(self, value, what, required):
        """A ValueInfo's type: a tensor of a known element type and dims >= 0, or a sequence
        of one; other kinds fluid_nb does not draw."""
        kind = value.type.WhichOneof("value")
        if kind is None:
            if required:
                self.fail(what, "a type", "none")
            return
        if kind == "sequence_type":
            inner = value.type.sequence_type.elem_type
            if inner.WhichOneof("value") != "tensor_type":
                self.fail(what, "a tensor or a sequence of tensors",
                          f"a sequence of {inner.WhichOneof('value')}", Unimplemented)
            self.tensor_type(inner.tensor_type, f"{what} element")
            return
        if kind != "tensor_type":
            self.fail(what, "a tensor or a sequence of tensors", kind, Unimplemented)
        self.tensor_type(value.type.tensor_type, what)

    def tensor_type(self, tensor, what):
        element_type(tensor.elem_type, self.where, what)
        if tensor.HasField("shape"):
            self.count(f"{what} dims", tensor.shape.dim, MAX_RANK)
            for k, dim in enumerate(tensor.shape.dim):
                if dim.HasField("dim_value") and dim.dim_value < 0:
                    self.fail(f"{what} dim {k}", "a size >= 0 or a symbol",
                              f"{dim.dim_value}")

    def tensor(self, tensor, what):
        """Element type and dims, and the data's length against them: raw_data bytes, the
        typed field's values, or the external file's bytes."""
        dtype = element_type(tensor.data_type, self.where, what)
        _, size, field, per = ELEMENT_TYPES[tensor.data_type]
        self.count(f"{what} dims", tensor.dims, MAX_RANK)
        numel = 1
        for k, dim in enumerate(tensor.dims):
            if dim < 0:
                self.fail(f"{what} dim {k}", "a size >= 0", f"{dim}")
            numel *= dim
        if tensor.HasField("segment"):
            self.fail(what, "a whole tensor", "a segment of one", Unimplemented)
        shape = f"{list(tensor.dims)} {dtype}"
        if tensor.data_location == self.onnx.TensorProto.EXTERNAL:
            self.external(tensor, what, numel * size, shape)
        elif tensor.data_location != self.onnx.TensorProto.DEFAULT:
            self.fail(f"{what} data_location", "DEFAULT or EXTERNAL",
                      f"{tensor.data_location}")
        elif tensor.HasField("raw_data"):
            if len(tensor.raw_data) != numel * size:
                self.fail(f"{what} raw_data", f"{numel * size} bytes for {shape}",
                          f"{len(tensor.raw_data)} bytes")
        else:
            held = len(getattr(tensor, field))
            if held != numel * per:
                self.fail(f"{what} {field}", f"{numel * per} values for {shape}", f"{held}")
            stray = [f for f in _TYPED_FIELDS if f != field and len(getattr(tensor, f))]
            if stray:
                self.fail(what, f"its values in {field}", f"values in {stray[0]}")

    def sparse(self, sparse, what):
        self.tensor(sparse.values, f"{what} values")
        self.tensor(sparse.indices, f"{what} indices")
        self.count(f"{what} dims", sparse.dims, MAX_RANK)

    def external(self, tensor, what, nbytes, shape):
        """An external-data reference: a relative location inside the model's folder, a
        regular file there holding ``nbytes`` from its offset. Only stat is called."""
        entries = {entry.key: entry.value for entry in tensor.external_data}
        location = entries.get("location", "")
        if (not location or "\0" in location or os.path.isabs(location)
                or os.path.normpath(location).split(os.sep)[0] == os.pardir):
            self.fail(f"{what} external data location", "a relative path inside the "
                      "model's folder", repr(location))
        try:
            offset = int(entries.get("offset", "0"))
            length = int(entries["length"]) if "length" in entries else None
        except ValueError:
            self.fail(f"{what} external data offset/length", "integers",
                      f"{entries.get('offset')!r}/{entries.get('length')!r}")
        if offset < 0 or (length is not None and length != nbytes):
            self.fail(f"{what} external data", f"offset >= 0 and length {nbytes} for {shape}",
                      f"offset {offset}, length {length}")
        if self.folder is None:
            return
        folder = os.path.realpath(self.folder)
        file = os.path.realpath(os.path.join(folder, location))
        if os.path.commonpath([folder, file]) != folder:  # a link leading out
            self.fail(f"{what} external data location", "a file inside the model's folder",
                      f"{location!r}, which leads outside it")
        try:
            info = os.stat(file)
        except OSError:
            self.fail(f"{what} external data location", "an existing file",
                      f"{location!r}, which does not exist", NotFound)
        if not stat.S_ISREG(info.st_mode):
            self.fail(f"{what} external data location", "a regular file",
                      f"{location!r}, which is not one")
        if info.st_size - offset < nbytes or (length is None and info.st_size - offset
                                              != nbytes):
            self.fail(f"{what} external data", f"{nbytes} bytes at offset {offset} for "
                      f"{shape}", f"a file of {info.st_size} bytes")


def _callee(domain, name, proto):
    """The key of a local function, or of the function a node calls (an overload, from IR
    version 10, is a function of its own)."""
    overload = getattr(proto, "overload", "")
    return (domain, name, overload) if overload else (domain, name)
