"""The one codec: Program <-> ``ProgramDesc`` bytes, lossless both ways.

Decoding keeps everything a file holds: unknown op types and attributes, attribute wire
types (INT vs LONG, FLOAT vs FLOAT64), optional fields written at their default value
(recorded in ``_presence``), variable attributes and variable kinds this package does not
model (kept as their serialized ``VarType``). So ``encode(decode(b))`` parses to the same
message as ``b``.
"""
from operator import attrgetter

from google.protobuf.message import DecodeError

from ..errors import InvalidArgument, InvalidType, expected
from .attrs import AttrType, attr_problems
from ..tensor.dtypes import VarType
from .program import Block, Operator, Parameter, Program, Variable
from ..proto import framework_pb2 as pb
from ..proto import wire
from .. import c_parts
from .callstack import SavedCallstack, paddle_strings

_TENSOR_KINDS = {VarType.LOD_TENSOR: "lod_tensor", VarType.LOD_TENSOR_ARRAY: "tensor_array",
                 VarType.SELECTED_ROWS: "selected_rows"}

# attribute type -> the Attr field that carries its value
_ATTR_FIELD = {
    AttrType.INT: "i", AttrType.FLOAT: "f", AttrType.STRING: "s", AttrType.INTS: "ints",
    AttrType.FLOATS: "floats", AttrType.STRINGS: "strings", AttrType.BOOLEAN: "b",
    AttrType.BOOLEANS: "bools", AttrType.BLOCK: "block_idx", AttrType.LONG: "l",
    AttrType.BLOCKS: "blocks_idx", AttrType.LONGS: "longs", AttrType.FLOAT64S: "float64s",
    AttrType.VAR: "var_name", AttrType.VARS: "vars_name", AttrType.FLOAT64: "float64",
    AttrType.SCALAR: "scalar", AttrType.SCALARS: "scalars",
}
_REPEATED = {AttrType.INTS, AttrType.FLOATS, AttrType.STRINGS, AttrType.BOOLEANS,
             AttrType.BLOCKS, AttrType.LONGS, AttrType.FLOAT64S, AttrType.VARS}
# wire number -> member: a program file holds tens of thousands of attributes, and calling
# the enum class is a lookup of its own each time (the wire check admits defined values only)
_ATTR_TYPES = {int(member): member for member in AttrType}
_VAR_TYPES = {int(member): member for member in VarType}
_records = c_parts.load("fluid_nb.proto._program_records",
                        "the program file reader and writer")


# --- encode ---------------------------------------------------------------------------
def encode_program(program, version=None, op_versions=None):
    """``ProgramDesc`` bytes of ``program``; ``version`` and ``op_versions`` (op name ->
    version) are written for a program that holds none of its own (a file's format stamp).

    Written from the program's records (the decode's records, see below) in C; records the
    writer leaves (SCALAR attributes, a value not of its field's type or range) are written
    by protobuf, which says what is wrong with a value it refuses."""
    records = _program_records(program, version, op_versions)
    data = _records.write_program(records)
    return data if data is not None else _message_of(records).SerializeToString()


def encode_block(block):
    """``BlockDesc`` bytes of ``block`` (Fluid's ``block.desc.serialize_to_string()``)."""
    message = pb.BlockDesc()
    _block_message(_block_out(block), message)
    return message.SerializeToString()


def encode_op(op):
    """``OpDesc`` bytes of ``op`` (Fluid's ``op.desc.serialize_to_string()``)."""
    message = pb.OpDesc()
    _op_message(_op_out(op), message)
    return message.SerializeToString()


def _program_records(program, version, op_versions):
    blocks = [_block_out(block) for block in program.blocks]
    if program.version is not None:
        version = program.version
    if program.op_version_map or "op_version_map" in (getattr(program, "_presence", None) or ()):
        op_versions = program.op_version_map
    return (blocks, version,
            None if op_versions is None else [(name, v) for name, v in op_versions.items()])


def _block_out(block):
    forward = block.forward_block_idx
    if forward == -1 and "forward_block_idx" not in (getattr(block, "_presence", None) or ()):
        forward = None
    return (block.idx, block.parent_idx, forward,
            [_var_out(var) for var in block.vars.values()], [_op_out(op) for op in block.ops])


def _var_out(var):
    presence = var._presence or ()
    flags = {}
    for field in _VAR_FLAGS:
        value = var.is_parameter if field == "is_parameter" else getattr(var, field)
        if value or field in presence:
            flags[field] = bool(value)
    if var._type_extra is not None:  # (as protobuf writes it again: a file's may differ)
        var_type = (int(var.type), False, None, (), None,
                    pb.VarType.FromString(var._type_extra).SerializeToString())
    else:
        modeled = var.type in _TENSOR_KINDS
        lod_level = var.lod_level if modeled and var.type != VarType.SELECTED_ROWS and (
            var.lod_level or "lod_level" in presence) else None
        var_type = (int(var.type), modeled, int(var.dtype), tuple(var.shape), lod_level, None)
    return (var.name, flags, var_type,
            [pb.VarDesc.Attr.FromString(raw).SerializeToString() for raw in var._attrs])


def _op_out(op):
    stack = op.callstack
    saved_at = stack.position if isinstance(stack, SavedCallstack) else None
    attrs = []
    for position, (name, value) in enumerate(op.attrs.items()):
        if position == saved_at:
            attrs.append(_callstack_out(stack))
        attrs.append((name, int(op.attr_type(name)), value))
    if stack and (saved_at is None or saved_at >= len(op.attrs)):
        attrs.append(_callstack_out(stack))  # Fluid saves where each op was built
    return (op.type, list(op.inputs.items()), list(op.outputs.items()), attrs,
            bool(op.is_target))


def _callstack_out(stack):
    return ("op_callstack", int(AttrType.STRINGS), paddle_strings(stack))


def _message_of(records):
    """The ``ProgramDesc`` message of a program's records, built through protobuf's objects
    (for records the C writer leaves: protobuf judges their values)."""
    blocks, version, op_versions = records
    msg = pb.ProgramDesc()
    for block in blocks:
        _block_message(block, msg.blocks.add())
    if version is not None:
        msg.version.version = version
    if op_versions is not None:
        msg.op_version_map.SetInParent()
        for name, number in op_versions:
            pair = msg.op_version_map.pair.add()
            pair.op_name = name
            pair.op_version.version = number
    return msg


def _block_message(record, b):
    idx, parent_idx, forward_block_idx, variables, ops = record
    b.idx, b.parent_idx = idx, parent_idx
    if forward_block_idx is not None:
        b.forward_block_idx = forward_block_idx
    for var in variables:
        _var_message(var, b.vars.add())
    for op in ops:
        _op_message(op, b.ops.add())


def _var_message(record, v):
    name, flags, (kind, modeled, data_type, dims, lod_level, type_bytes), attrs = record
    v.name = name
    if type_bytes is not None:
        v.type.ParseFromString(type_bytes)
    else:
        v.type.type = kind
        field = _TENSOR_KINDS.get(_VAR_TYPES[kind]) if modeled else None
        if field is not None:
            tensor = desc = getattr(v.type, field)
            if field != "selected_rows":
                tensor = desc.tensor
                if lod_level is not None:
                    desc.lod_level = lod_level
            tensor.data_type = data_type
            tensor.dims.extend(dims)
    for flag, value in flags.items():
        setattr(v, flag, value)
    for raw in attrs:
        v.attrs.add().ParseFromString(raw)


def _op_message(record, o):
    op_type, inputs, outputs, attrs, is_target = record
    o.type = op_type
    for slots, args_of in ((o.inputs, inputs), (o.outputs, outputs)):
        for slot, args in args_of:
            item = slots.add()
            item.parameter = slot
            item.arguments.extend(args)
    for name, attr_type, value in attrs:
        a = o.attrs.add()
        a.name, a.type = name, attr_type
        if attr_type == AttrType.SCALAR:
            _encode_scalar(value, a.scalar)
        elif attr_type == AttrType.SCALARS:
            for x in value:
                _encode_scalar(x, a.scalars.add())
        elif attr_type in _REPEATED:
            getattr(a, _ATTR_FIELD[attr_type]).extend(value)
        else:
            setattr(a, _ATTR_FIELD[attr_type], value)
    if is_target:
        o.is_target = True


def _encode_scalar(value, s):
    if isinstance(value, bool):
        s.type, s.b = pb.Scalar.BOOLEAN, value
    elif isinstance(value, int):
        s.type, s.i = pb.Scalar.LONG, value
    elif isinstance(value, complex):
        s.type = pb.Scalar.COMPLEX128
        s.c.r, s.c.i = value.real, value.imag
    else:
        s.type, s.r = pb.Scalar.FLOAT64, float(value)


# --- decode ---------------------------------------------------------------------------
# A file is read into records (plain tuples: see _program_records.c), checked, then built:
#   program (blocks, version or None, op_version_map pairs or None)
#   block   (idx, parent_idx, forward_block_idx or None, vars, ops)
#   var     (name, {flag: bool} of the flags written, (kind, modeled, data_type, dims,
#            lod_level or None, the VarType's bytes unless modeled), [VarDesc.Attr bytes])
#   op      (type, [(slot, (argument, ...))] inputs, outputs, [(name, AttrType, value)],
#            is_target)
# The C reader reads them from the bytes; the few files it leaves to protobuf's parser
# (see _program_records.c) are read from the parsed message by _records_of.
def decode_program(data, where="ProgramDesc"):
    """A Program from ``ProgramDesc`` bytes.

    The one validation point for program files: the wire bytes are walked first
    (:mod:`.wire`: truncation, bad tags, non-UTF-8 strings, undefined enum values, missing
    required fields), then the structure (:func:`check_structure`: block numbering and
    parents, block attributes, unique variable names, attributes against the op
    definitions). Every refusal is an InvalidArgument naming ``where`` and a byte offset.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidType(expected(where, "ProgramDesc", "bytes", type(data).__name__))
    data = bytes(data)
    root = wire.check_file(data, pb.ProgramDesc.DESCRIPTOR, where)
    records = _records.read_program(data)
    if records is None:  # (bytes the C reader leaves to protobuf's parser)
        msg = pb.ProgramDesc()
        try:
            msg.ParseFromString(data)
        except DecodeError as exc:  # the walk accepted it, so this is the runtime's own limit
            raise InvalidArgument(expected(f"{where}: byte 0", "a ProgramDesc the protobuf "
                                           "runtime parses", "bytes it refuses", exc)) from None
        records = _records_of(msg)
    return records_to_program(records, check_structure(records, root, where))


def check_structure(records, root, where="ProgramDesc"):
    """Refuse a file's records (see above) that no program can be: ``root`` (from
    :func:`.wire.check_message`) gives the byte offsets the errors name.

    Paddle creates a block after its parent, so block 0's parent is -1 and every other
    block's parent is an earlier block (no lookup can then loop); an op's BLOCK/BLOCKS
    attribute names a later block (so running it never re-enters its own block or an
    ancestor); a grad block's forward block is another, earlier block.

    Returns each op's attributes as it read them to check them, ``(values, types)`` per
    op per block, which :func:`records_to_program` keeps.
    """
    def fail(offset, what, want, got):
        raise InvalidArgument(expected(f"{where}: byte {offset}", what, want, got))

    blocks = records[0]
    count = len(blocks)
    if not count:
        fail(0, "ProgramDesc", "at least one block", "none")
    from . import registry
    attributes = []
    fitting = set()  # (see _check_op)
    for i, (idx, parent_idx, forward_block_idx, variables, ops) in enumerate(blocks):
        node = root.at("blocks", i)
        if idx != i:
            fail(node.offset("idx"), f"block {i} idx", i, idx)
        if i == 0 and parent_idx != -1:
            fail(node.offset("parent_idx"), "block 0 parent_idx", "-1", parent_idx)
        if i > 0 and not 0 <= parent_idx < i:
            fail(node.offset("parent_idx"), f"block {i} parent_idx",
                 f"an earlier block in [0, {i})", parent_idx)
        if forward_block_idx is not None and forward_block_idx != -1 \
                and not 0 <= forward_block_idx < i:
            fail(node.offset("forward_block_idx"), f"block {i} forward_block_idx",
                 f"-1 or an earlier block in [0, {i})", forward_block_idx)
        names = set()
        for k, var in enumerate(variables):
            if var[0] in names:
                fail(node.at("vars", k).offset("name"), f"block {i} variable name",
                     "a name not declared earlier in the block", repr(var[0]))
            names.add(var[0])
        attributes.append([_check_op(op, i, j, count, node.at("ops", j),
                                     registry.find(op[0]), fail, fitting)
                           for j, op in enumerate(ops)])
    return attributes


def _check_op(op, block_idx, op_idx, count, node, opdef, fail, fitting):
    """The attributes of op record ``op`` as a dict, checked against ``opdef``: ``(values,
    types)``. ``fitting`` holds the attribute keys (:func:`_fit_key`) already found to fit
    their definitions in this file: one check serves every op that repeats them."""
    # an attribute written twice is read as Paddle's OpDesc reads it: the later value wins
    # (Paddle 2.6 itself saves reshape2 with mkldnn_data_type twice)
    op_type = op[0]
    attrs, types = {}, {}
    for k, (name, wire_type, value) in enumerate(op[3]):
        attr_type = types[name] = _ATTR_TYPES[wire_type]
        if attr_type is AttrType.BLOCK or attr_type is AttrType.BLOCKS:
            for target in [value] if attr_type is AttrType.BLOCK else value:
                if not block_idx < target < count:
                    fail(node.at("attrs", k).offset(),
                         f"block {block_idx} op {op_idx} '{op_type}': attribute '{name}'",
                         f"a later block in ({block_idx}, {count})", target)
        attrs[name] = value
    if opdef is not None:  # (unknown op types are kept; running one reports it)
        key = _fit_key(op_type, attrs, types, opdef.attrs)
        if key is None or key not in fitting:
            for name, message in attr_problems(op_type, attrs, types, opdef.attrs):
                positions = {attr[0]: k for k, attr in enumerate(op[3])}
                offset = node.at("attrs", positions[name]).offset() if name in positions \
                    else node.offset()
                fail(offset, f"block {block_idx} op {op_idx} '{op_type}'",
                     "attributes that fit the op's definition", message)
            if key is not None:
                fitting.add(key)
    return attrs, types


def _fit_key(op_type, attrs, types, specs):
    """What :func:`.attrs.attr_problems` answers from, as a key: the op type and, for each
    attribute the definition declares, its name, wire type and value (a list as a tuple).
    Within a wire type a file's values have one Python type (the wire type decides it), so
    equal keys get equal answers. None for a SCALAR attribute, whose value's type varies."""
    key = [op_type]
    for name, value in attrs.items():
        if name in specs:
            attr_type = types[name]
            if attr_type is AttrType.SCALAR or attr_type is AttrType.SCALARS:
                return None
            key.append((name, attr_type, tuple(value) if value.__class__ is list else value))
    return tuple(key)


def records_to_program(records, attributes):
    """The Program of a file's records that :func:`check_structure` accepted;
    ``attributes`` is what it returned (each op's attributes, read once)."""
    from . import registry
    blocks, version, op_versions = records
    program = Program()
    defaults = {}  # op type -> its definition's defaults (see _decode_op)
    program.blocks = [_decode_block(program, block, attributes[i], registry.find, defaults)
                      for i, block in enumerate(blocks)]
    if version is not None:
        program.version = version
    if op_versions is not None:
        program._presence = {"op_version_map"}
        program.op_version_map = dict(op_versions)
    return program


def _decode_block(program, record, attributes, find, defaults):
    idx, parent_idx, forward_block_idx, variables, ops = record
    block = Block(program, idx, parent_idx, -1 if forward_block_idx is None
                  else forward_block_idx)
    if forward_block_idx is not None:
        block._presence = {"forward_block_idx"}
    for var in variables:
        var = _decode_var(block, var)
        block.vars[var.name] = var
    for j, op in enumerate(ops):
        block.ops.append(_decode_op(block, op, attributes[j], find, defaults))
    return block


#: the presence sets variables share (at most one per combination of the five fields): each
#: one apart would be a set the cyclic collector walks for as long as the program lives
_PRESENCES = {}


def _decode_var(block, record):
    name, flags, (kind, modeled, data_type, dims, lod_level, type_bytes), attrs = record
    kind = _VAR_TYPES[kind]
    presence = set(flags)
    if modeled:
        shape, dtype = dims, _VAR_TYPES[data_type]
        if lod_level is not None:
            presence.add("lod_level")
        else:
            lod_level = 0
    else:
        shape, dtype, lod_level = (), VarType.FP32, 0
    persistable = flags.get("persistable", False)
    stop_gradient = flags.get("stop_gradient", False)
    need_check_feed = flags.get("need_check_feed", False)
    if flags.get("is_parameter", False):
        var = object.__new__(Parameter)
        Variable.__init__(var, block, name=name, type=kind, shape=shape, dtype=dtype,
                          lod_level=lod_level, persistable=persistable,
                          stop_gradient=stop_gradient, need_check_feed=need_check_feed)
        var.trainable = not stop_gradient
        var.optimize_attr = {"learning_rate": 1.0}
        var.regularizer = var.do_model_average = var.initializer = None
        var.need_clip = True
    else:  # (Variable.__init__'s work for values already in canonical form)
        var = Variable._output(block, name)
        var.type, var.shape, var.dtype, var.lod_level = kind, shape, dtype, lod_level
        var.persistable, var.stop_gradient = persistable, stop_gradient
        var.need_check_feed = need_check_feed
    presence = frozenset(presence)
    var._presence = _PRESENCES.setdefault(presence, presence)
    if not modeled:
        var._type_extra = type_bytes
    if attrs:
        var._attrs = list(attrs)
    return var


def _decode_op(block, record, attributes, find, defaults):
    """The Operator of op record ``record``; ``attributes``: its ``(values, types)`` as
    ``_check_op`` read them; ``find``: the registry's lookup of a definition; ``defaults``:
    op type -> ``[(name, default)]`` of its definition, filled as types are met."""
    op_type, inputs, outputs, _, is_target = record
    callstack = ()
    attrs, attr_types = attributes
    if attr_types.get("op_callstack") == AttrType.STRINGS:
        # kept beside the attributes, with its place among them (see SavedCallstack)
        position = list(attrs).index("op_callstack")
        callstack = SavedCallstack(attrs.pop("op_callstack"), position)
        del attr_types["op_callstack"]
    given = defaults.get(op_type)
    if given is None:
        opdef = find(op_type)
        given = defaults[op_type] = [] if opdef is None else [
            (name, spec.default) for name, spec in opdef.attrs.items()
            if spec.default is not None]
    # as Paddle's attribute checker does when it creates the op (a list default copied)
    for name, default in given:
        if name not in attrs:
            attrs[name] = list(default) if isinstance(default, list) else default
    op = Operator(block, op_type, dict(inputs), dict(outputs), attrs, attr_types, is_target)
    op.callstack = callstack
    return op


# --- records from a parsed message (files the C reader leaves to protobuf's parser) ------
_VAR_FLAGS = ("persistable", "need_check_feed", "is_parameter", "stop_gradient")


def _records_of(msg):
    blocks = [(b.idx, b.parent_idx,
               b.forward_block_idx if b.HasField("forward_block_idx") else None,
               [_var_record(v) for v in b.vars], [_op_record(o) for o in b.ops])
              for b in msg.blocks]
    version = msg.version.version if msg.HasField("version") else None
    op_versions = [(pair.op_name, pair.op_version.version)
                   for pair in msg.op_version_map.pair] \
        if msg.HasField("op_version_map") else None
    return blocks, version, op_versions


def _var_record(v):
    var_type = v.type
    field = _TENSOR_KINDS.get(_VAR_TYPES[var_type.type])
    # modeled: a tensor kind whose VarType holds that kind's description and nothing else
    modeled = field is not None and \
        [f.name for f, _ in var_type.ListFields() if f.name != "type"] == [field]
    data_type, dims, lod_level = None, (), None
    if modeled:
        tensor = desc = getattr(var_type, field)
        if field != "selected_rows":
            tensor = desc.tensor
            lod_level = desc.lod_level if desc.HasField("lod_level") else None
        data_type, dims = tensor.data_type, tuple(tensor.dims)
    return (v.name, {flag: getattr(v, flag) for flag in _VAR_FLAGS if v.HasField(flag)},
            (var_type.type, modeled, data_type, dims, lod_level,
             None if modeled else var_type.SerializeToString()),
            [a.SerializeToString() for a in v.attrs])


def _op_record(o):
    return (o.type, [(item.parameter, tuple(item.arguments)) for item in o.inputs],
            [(item.parameter, tuple(item.arguments)) for item in o.outputs],
            [(a.name, a.type, _READ_ATTR[a.type](a)) for a in o.attrs], o.is_target)


def _repeated_reader(field):
    return lambda a: list(getattr(a, field))


#: wire number of an attribute type -> the function reading an Attr message's value
_READ_ATTR = {int(attr_type): _repeated_reader(field) if attr_type in _REPEATED
              else attrgetter(field) for attr_type, field in _ATTR_FIELD.items()}
_READ_ATTR[int(AttrType.SCALAR)] = lambda a: _decode_scalar(a.scalar)
_READ_ATTR[int(AttrType.SCALARS)] = lambda a: [_decode_scalar(s) for s in a.scalars]


def _decode_scalar(s):
    if s.type == pb.Scalar.BOOLEAN:
        return s.b
    if s.type == pb.Scalar.LONG:
        return s.i
    if s.type == pb.Scalar.COMPLEX128:
        return complex(s.c.r, s.c.i)
    return s.r
