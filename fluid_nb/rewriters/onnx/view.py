"""An ONNX model as a Program, so the program views show it as they show Fluid's programs.

:func:`to_program` maps the graph onto the same records: each node an op of its ONNX type
(a domain other than the default is written ``domain::type``), its inputs and outputs under
the slot names the operator's schema gives them (``A``/``B`` of MatMul; a variadic slot a
list), its attributes as attributes; each value a variable with the type and shape shape
inference finds (a symbolic dim is -1), the initializers persistable parameters; the
bodies of ``If``, ``Loop`` and ``Scan`` sub-blocks, as a ``while``'s body is. The Program is
for reading and drawing: its ops are ONNX's, so the executor does not run it (the model
itself runs in onnxruntime: :mod:`.runtime`, ``fluid-nb run model.onnx``).
"""
import os

from ...errors import InvalidArgument, InvalidType, Unimplemented, expected
from ...framework.attrs import AttrType
from ...framework.program import Block, Operator, Parameter, Program, Variable
from ...tensor.dtypes import VarType, convert_dtype
from .checks import check_model, element_type, read_model_file


def _onnx():
    from .export import _onnx as load
    return load()


def _load(model, where=None):
    """The ModelProto ``model`` names, checked (see :mod:`.checks`); external data is never
    read: the views need only the tensors' types and dims. ``where`` names the caller in
    errors (default: ``onnx.to_program``)."""
    where = WHERE if where is None else where
    onnx = _onnx()
    if isinstance(model, onnx.ModelProto):
        check_model(model, where)
        return model
    if not isinstance(model, (str, os.PathLike)) or \
            not isinstance(os.fspath(model), str):
        raise InvalidType(expected(where, "model", "an ONNX file's path or an onnx.ModelProto",
                                   type(model).__name__))
    path = os.fspath(model)
    data = read_model_file(path, where)
    try:
        loaded = onnx.load_model_from_string(data)
    except Exception as exc:  # a damaged or foreign file: say which
        raise InvalidArgument(expected(where, f"model {path!r}", "an ONNX ModelProto file",
                                       f"bytes that do not decode ({exc})")) from None
    check_model(loaded, f"{where} ({path})", folder=os.path.dirname(os.path.abspath(path)))
    return loaded


def to_program(model):
    """The Program drawing the ONNX ``model`` (a path or an ``onnx.ModelProto``); see the
    module docstring for how its parts map. A model that is not well formed (see
    :func:`fluid_nb.rewriters.onnx.checks.check_model`) is refused with a typed error before any
    Program is built."""
    onnx = _onnx()
    model = _load(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # a model onnx cannot infer (a custom domain's node): declared types
        inferred = model
    opsets = {o.domain or "": o.version for o in model.opset_import}
    program = Program()
    program.blocks = []
    _Reader(onnx, program, opsets).graph(inferred.graph, parent=-1)
    program._changed()
    return program


WHERE = "onnx.to_program"


class _Reader:
    def __init__(self, onnx, program, opsets):
        self.onnx, self.program, self.opsets = onnx, program, opsets

    def graph(self, graph, parent):
        block = Block(self.program, len(self.program.blocks), parent)
        self.program.blocks.append(block)
        for init in graph.initializer:  # (types and dims only: the data is never decoded)
            dtype = element_type(init.data_type, WHERE, f"initializer {init.name!r}")
            block.vars[init.name] = Parameter(block, shape=list(init.dims),
                                              dtype=convert_dtype(dtype), name=init.name,
                                              trainable=False)
        initialized = {i.name for i in graph.initializer}
        for value in list(graph.input) + list(graph.value_info) + list(graph.output):
            if value.name in initialized or value.name in block.vars:
                continue
            block.vars[value.name] = self._variable(block, value,
                                                    is_data=value in graph.input)
        for node in graph.node:
            block.ops.append(self._op(block, node))
        return block

    def _variable(self, block, value, is_data=False):
        """A tensor value as a variable; a sequence of tensors as a tensor array (shape
        inference may type a value so even where the model does not; other kinds, such as
        optional and map, fluid_nb does not draw)."""
        kind, tensor = VarType.LOD_TENSOR, value.type.tensor_type
        which = value.type.WhichOneof("value")
        if which is None:  # no type declared
            return Variable(block, name=value.name, is_data=is_data)
        if which == "sequence_type":
            kind, tensor = VarType.LOD_TENSOR_ARRAY, value.type.sequence_type.elem_type
            which, tensor = f"a sequence of {tensor.WhichOneof('value')}", tensor.tensor_type
        if which not in ("tensor_type", "a sequence of tensor_type"):
            raise Unimplemented(expected(WHERE, f"value {value.name!r}",
                                         "a tensor or a sequence of tensors", which))
        shape = None
        if tensor.HasField("shape"):
            shape = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
        dtype = element_type(tensor.elem_type, WHERE, f"value {value.name!r}")
        return Variable(block, name=value.name, type=kind, shape=shape,
                        dtype=convert_dtype(dtype), is_data=is_data)

    def _op(self, block, node):
        domain = node.domain or ""
        op_type = node.op_type if domain in ("", "ai.onnx") else f"{domain}::{node.op_type}"
        inputs, outputs = self._slots(node, domain)
        attrs, types = {}, {}
        for attribute in node.attribute:
            value, kind = self._attribute(attribute, block)
            attrs[attribute.name], types[attribute.name] = value, kind
        for names in list(inputs.values()) + list(outputs.values()):
            for name in names:
                if name and block._find_var_recursive(name) is None:
                    block.vars[name] = Variable(block, name=name)
        return Operator(block, op_type, {slot: tuple(names) for slot, names in inputs.items()},
                        {slot: tuple(names) for slot, names in outputs.items()}, attrs, types)

    def _slots(self, node, domain):
        """{slot: [names]} of the node's inputs and outputs, slots named by the schema."""
        try:
            schema = self.onnx.defs.get_schema(node.op_type, self.opsets.get(domain, 1),
                                               domain)
            formal_in, formal_out = list(schema.inputs), list(schema.outputs)
        except Exception:  # a domain onnx does not know (fluid_nb's own): positions
            formal_in, formal_out = [], []
        return _assign(node.input, formal_in, "X"), _assign(node.output, formal_out, "Out")

    def _attribute(self, attribute, block):
        A = self.onnx.AttributeProto
        kind = attribute.type
        # a block attribute holds the block's index, as a decoded ProgramDesc's does
        if kind == A.GRAPH:
            return self.graph(attribute.g, block.idx).idx, AttrType.BLOCK
        if kind == A.GRAPHS:
            return [self.graph(g, block.idx).idx for g in attribute.graphs], AttrType.BLOCKS
        if kind == A.FLOAT:
            return float(attribute.f), AttrType.FLOAT
        if kind == A.INT:
            return int(attribute.i), AttrType.LONG
        if kind == A.STRING:
            return attribute.s.decode("utf-8", "replace"), AttrType.STRING
        if kind == A.FLOATS:
            return [float(v) for v in attribute.floats], AttrType.FLOATS
        if kind == A.INTS:
            return [int(v) for v in attribute.ints], AttrType.LONGS
        if kind == A.STRINGS:
            return [s.decode("utf-8", "replace") for s in attribute.strings], AttrType.STRINGS
        if kind == A.TENSOR:  # a Constant's value: shown by its shape and type
            dtype = element_type(attribute.t.data_type, WHERE, f"attribute {attribute.name!r}")
            return f"tensor {dtype}{list(attribute.t.dims)}", AttrType.STRING
        return f"<{A.AttributeType.Name(kind)}>", AttrType.STRING


def _assign(names, formal, fallback):
    """Names given to slots: each formal parameter one, a variadic last one the rest."""
    slots = {}
    for k, name in enumerate(names):
        if not name:  # an optional input left out
            continue
        if k < len(formal):
            parameter = formal[k]
            variadic = parameter.option == parameter.option.__class__.Variadic
            slot = parameter.name
            if variadic:
                slots[slot] = list(names[k:])
                break
        else:
            slot = f"{fallback}{k}" if not formal else formal[-1].name
        slots.setdefault(slot, []).append(name)
    return slots

