"""``op.desc``, ``block.desc``, ``var.desc``: Fluid 1.8's desc interface over the one program.

Fluid keeps a C++ ``OpDesc``/``BlockDesc``/``VarDesc`` beside each Python object; scripts
and tests reach them through ``.desc`` and call methods (``desc.type()``,
``desc.input("X")``, ``block.desc.op_size()``). Here the Operator, Block and Variable *are*
the description, so each desc is a thin view: every read and write goes to the object it
wraps, and nothing is kept twice.

An ``OpDesc`` may also stand alone (not in any block): :func:`get_grad_op_desc` returns
grad op descs that way, ``BlockDesc.append_op()`` makes an empty op in its block, and
``copy_from`` fills it, as Fluid's backward builds gradient ops.

Example::

    op = block.append_op(type="scale", inputs={"X": x}, outputs={"Out": y},
                         attrs={"scale": 2.0})
    op.desc.type()              # 'scale'
    op.desc.attr("scale")       # 2.0
    grads, grad_to_var = get_grad_op_desc(op.desc, set(), [])
    grads[0].type()             # 'scale' (scale's gradient is a scale)
"""
from ..errors import InvalidArgument, InvalidType, NotFound, OutOfRange, expected
from ..tensor.dtypes import VarType
from .attrs import AttrType, guess_attr_type, normalize_attr
from .program import EMPTY_VAR_NAME, GRAD_SUFFIX, Block, Operator, rename_argument
from . import registry

#: attributes Fluid's op maker adds to every op, and the value an op has when nothing set
#: one (Fluid's Python side stamps op_role Forward and the root name scope on every op)
GENERATED_ATTRS = {"op_role": 0, "op_role_var": [], "op_namescope": "/",
                   "op_callstack": [], "op_device": ""}


def _text(name):
    """Fluid's desc methods take names as bytes or str."""
    if isinstance(name, bytes):
        return name.decode("utf-8")
    if not isinstance(name, str):
        raise InvalidType(expected("desc", "name", "a str or bytes",
                                   f"{name!r} ({type(name).__name__})"))
    return name


def _changed(op):
    if op.block is not None:
        op.block.program._changed()


class OpDesc:
    """The desc view of one :class:`~fluid_nb.framework.program.Operator`."""

    __slots__ = ("_op",)

    def __init__(self, op):
        self._op = op

    def __eq__(self, other):
        return isinstance(other, OpDesc) and other._op is self._op

    def __hash__(self):
        return id(self._op)

    def __repr__(self):
        return f"OpDesc({self._op.type})"

    # --- type and arguments -------------------------------------------------------------
    def type(self):
        return self._op.type

    def set_type(self, op_type):
        self._op.type = _text(op_type)
        _changed(self._op)

    def input(self, slot):
        return list(self._op.inputs.get(_text(slot), ()))

    def output(self, slot):
        return list(self._op.outputs.get(_text(slot), ()))

    def input_names(self):
        return list(self._op.inputs)

    def output_names(self):
        return list(self._op.outputs)

    def inputs(self):
        return {slot: list(args) for slot, args in self._op.inputs.items()}

    def outputs(self):
        return {slot: list(args) for slot, args in self._op.outputs.items()}

    def input_arg_names(self):
        return [n for args in self._op.inputs.values() for n in args]

    def output_arg_names(self):
        return [n for args in self._op.outputs.values() for n in args]

    def set_input(self, slot, args):
        self._op.inputs[_text(slot)] = tuple(_text(a) for a in args)
        _changed(self._op)

    def set_output(self, slot, args):
        self._op.outputs[_text(slot)] = tuple(_text(a) for a in args)
        _changed(self._op)

    def remove_input(self, slot):
        self._op.inputs.pop(_text(slot), None)
        _changed(self._op)

    def remove_output(self, slot):
        self._op.outputs.pop(_text(slot), None)
        _changed(self._op)

    def _rename_input(self, old, new):
        old, new = _text(old), _text(new)
        rename_argument(self._op.inputs, old, new)
        _changed(self._op)

    def _rename_output(self, old, new):
        old, new = _text(old), _text(new)
        rename_argument(self._op.outputs, old, new)
        _changed(self._op)

    # --- attributes ---------------------------------------------------------------------
    def has_attr(self, name):
        name = _text(name)
        return name in self._op.attrs or name in GENERATED_ATTRS

    def attr(self, name):
        """The attribute's value (a block attribute as that block's desc)."""
        name = _text(name)
        op = self._op
        if name not in op.attrs:
            if name in GENERATED_ATTRS:
                default = GENERATED_ATTRS[name]
                return list(default) if isinstance(default, list) else default
            raise NotFound(expected(op.type, f"attribute '{name}'", "to exist",
                                    f"only {sorted(op.attrs)}"))
        value = op.attrs[name]
        kind = op.attr_type(name)
        if op.block is not None and kind == AttrType.BLOCK:
            return BlockDesc(op.block.program.block(value))
        if op.block is not None and kind == AttrType.BLOCKS:
            return [BlockDesc(op.block.program.block(i)) for i in value]
        return list(value) if isinstance(value, list) else value

    def attr_type(self, name):
        name = _text(name)
        if name not in self._op.attrs and name in GENERATED_ATTRS:
            return {"op_role": AttrType.INT, "op_namescope": AttrType.STRING,
                    "op_device": AttrType.STRING}.get(name, AttrType.STRINGS)
        return self._op.attr_type(name)

    def attr_names(self):
        return list(self._op.attrs) + [n for n in GENERATED_ATTRS if n not in self._op.attrs]

    def set_attr(self, name, value):
        """Set attribute ``name``, checked against the op's definition where it has one."""
        name = _text(name)
        op = self._op
        if isinstance(value, BlockDesc):
            value = value._block
        spec = registry.find(op.type)
        if spec is not None and name in spec.attrs:
            value = normalize_attr(op.type, name, spec.attrs[name].type, value)
        else:
            attr_type = guess_attr_type(value)
            value = normalize_attr(op.type, name, attr_type, value)
            op.attr_types[name] = attr_type
        op.attrs[name] = value
        _changed(op)

    _set_attr = set_attr

    def set_block_attr(self, name, block):
        name = _text(name)
        self._op.attrs[name] = block._block.idx if isinstance(block, BlockDesc) else block.idx
        self._op.attr_types[name] = AttrType.BLOCK
        _changed(self._op)

    _set_block_attr = set_block_attr

    def set_blocks_attr(self, name, blocks):
        name = _text(name)
        self._op.attrs[name] = [(b._block if isinstance(b, BlockDesc) else b).idx
                                for b in blocks]
        self._op.attr_types[name] = AttrType.BLOCKS
        _changed(self._op)

    _set_blocks_attr = set_blocks_attr

    def remove_attr(self, name):
        name = _text(name)
        self._op.attrs.pop(name, None)
        self._op.attr_types.pop(name, None)
        _changed(self._op)

    _remove_attr = remove_attr

    def _block_attr_id(self, name):
        return self._op.attrs[_text(name)]

    block_attr_id = _block_attr_id

    def _blocks_attr_ids(self, name):
        return list(self._op.attrs[_text(name)])

    # --- compile-time inference ------------------------------------------------------------
    def infer_shape(self, block):
        """Run the op's shape (and variable-type) inference against ``block``'s variables."""
        self._with_block(block, lambda spec: spec.run_infer_shape(self._op),
                         lambda spec: spec.infer_shape is not None)

    def infer_var_type(self, block):
        """Run the op's variable-type inference against ``block``'s variables."""
        from .infer import InferShapeContext
        self._with_block(block, lambda spec: spec.infer_var_type(
            InferShapeContext(self._op, spec)), lambda spec: spec.infer_var_type is not None)

    def _with_block(self, block, run, applies):
        op = self._op
        spec = registry.get(op.type)
        if not applies(spec):
            return
        target = block._block if isinstance(block, BlockDesc) else block
        if not isinstance(target, Block):
            raise InvalidType(expected(op.type, "block", "a BlockDesc or Block",
                                       type(block).__name__))
        saved, op.block = op.block, target
        try:
            run(spec)
        finally:
            op.block = saved

    def check_attrs(self):
        """Complete the attributes with the definition's defaults and check them."""
        spec = registry.find(self._op.type)
        if spec is not None:
            attrs, types = spec.complete_attrs(self._op.attrs)
            self._op.attrs.update(attrs)
            self._op.attr_types.update(types)

    # --- copies and bytes -------------------------------------------------------------------
    def copy_from(self, other):
        """Make this op a copy of ``other`` (type, arguments, attributes)."""
        source = other._op if isinstance(other, OpDesc) else other
        if not isinstance(source, Operator):
            raise InvalidType(expected("OpDesc.copy_from", "other", "an OpDesc",
                                       type(other).__name__))
        op = self._op
        op.type = source.type
        op.inputs = dict(source.inputs)  # (argument tuples are never changed in place)
        op.outputs = dict(source.outputs)
        op.attrs = {name: (list(v) if isinstance(v, list) else v)
                    for name, v in source.attrs.items()}
        op.attr_types = dict(source.attr_types)
        op.is_target = source.is_target
        _changed(op)

    def serialize_to_string(self):
        """The op's ``OpDesc`` protobuf bytes."""
        from . import codec
        return codec.encode_op(self._op)

    def set_is_target(self, is_target):
        self._op.is_target = bool(is_target)

    def block(self):
        return BlockDesc(self._op.block) if self._op.block is not None else None

    def id(self):
        return id(self._op)


class VarDesc:
    """The desc view of one :class:`~fluid_nb.framework.program.Variable`."""

    __slots__ = ("_var",)

    def __init__(self, var):
        self._var = var

    def __eq__(self, other):
        return isinstance(other, VarDesc) and other._var is self._var

    def __hash__(self):
        return id(self._var)

    def __repr__(self):
        return f"VarDesc({self._var.name})"

    def _changed(self):
        self._var.block.program._changed()

    def name(self):
        return self._var.name

    def type(self):
        return self._var.type

    def set_type(self, var_type):
        self._var.type = VarType(var_type)
        self._changed()

    def dtype(self):
        return self._var.dtype

    def set_dtype(self, dtype):
        from ..tensor.dtypes import convert_dtype
        self._var.dtype = convert_dtype(dtype)
        self._changed()

    def shape(self):
        return list(self._var.shape)

    def set_shape(self, shape):
        self._var.shape = tuple(int(d) for d in shape)
        self._changed()

    def lod_level(self):
        return self._var.lod_level

    def set_lod_level(self, level):
        self._var.lod_level = int(level)
        self._changed()

    def persistable(self):
        return self._var.persistable

    def set_persistable(self, persistable):
        self._var.persistable = bool(persistable)
        self._changed()

    def need_check_feed(self):
        return self._var.need_check_feed

    def set_need_check_feed(self, need):
        self._var.need_check_feed = bool(need)
        self._changed()

    def stop_gradient(self):
        return self._var.stop_gradient

    def set_stop_gradient(self, stop):
        self._var.stop_gradient = bool(stop)


class BlockDesc:
    """The desc view of one :class:`~fluid_nb.framework.program.Block`."""

    __slots__ = ("_block",)

    def __init__(self, block):
        self._block = block

    def __eq__(self, other):
        return isinstance(other, BlockDesc) and other._block is self._block

    def __hash__(self):
        return id(self._block)

    def __repr__(self):
        return f"BlockDesc({self._block.idx})"

    @property
    def id(self):
        return self._block.idx

    @property
    def parent(self):
        return self._block.parent_idx

    def get_forward_block_idx(self):
        return self._block.forward_block_idx

    def _set_forward_block_idx(self, idx):
        self._block.forward_block_idx = int(idx)
        self._block.program._changed()

    set_forward_block_idx = _set_forward_block_idx

    # --- ops --------------------------------------------------------------------------------
    def op_size(self):
        return len(self._block.ops)

    def op(self, index):
        ops = self._block.ops
        if not -len(ops) <= index < len(ops):
            raise OutOfRange(expected(f"block {self._block.idx}", "op index",
                                      f"in [0, {len(ops)})", index))
        return OpDesc(ops[index])

    def _insert_empty(self, index):
        op = Operator(self._block, "", {}, {}, {})
        self._block.ops.insert(index, op)
        self._block.program._changed()
        return OpDesc(op)

    def append_op(self):
        """A new, empty op at the end of the block (``copy_from`` or the setters fill it)."""
        return self._insert_empty(len(self._block.ops))

    def _prepend_op(self):
        return self._insert_empty(0)

    def _insert_op(self, index):
        return self._insert_empty(index)

    def _remove_op(self, start, end):
        del self._block.ops[start:end]
        self._block.program._changed()

    # --- variables ----------------------------------------------------------------------------
    def var(self, name):
        """The variable ``name`` of this block, created (a float32 LoD tensor) if missing."""
        name = _text(name)
        var = self._block.vars.get(name)
        if var is None:
            var = self._block.create_var(name=name)
        return VarDesc(var)

    def has_var(self, name):
        return self._block.has_var(_text(name))

    def has_var_recursive(self, name):
        return self._block._find_var_recursive(_text(name)) is not None

    def find_var(self, name):
        var = self._block.vars.get(_text(name))
        return VarDesc(var) if var is not None else None

    def find_var_recursive(self, name):
        var = self._block._find_var_recursive(_text(name))
        return VarDesc(var) if var is not None else None

    def all_vars(self):
        return [VarDesc(v) for v in self._block.vars.values()]

    def _rename_var(self, old, new):
        self._block._rename_var(_text(old), _text(new))

    def _remove_var(self, name):
        self._block._remove_var(_text(name))

    def serialize_to_string(self):
        """The block's ``BlockDesc`` protobuf bytes."""
        from . import codec
        return codec.encode_block(self._block)


def get_grad_op_desc(op_desc, no_grad_set, grad_sub_block):
    """``(grad op descs, {gradient name: forward variable name})`` of one forward op.

    The descs stand alone (in no block), made by the op's grad maker exactly as
    ``append_backward`` makes them. ``no_grad_set`` holds *gradient* names
    (``"x@GRAD"``): those gradients are not computed (their slots are left without them).
    ``grad_sub_block``: the grad block(s) of an op with a sub-block (``while``). An op
    no gradient flows through has none.
    """
    op = op_desc._op if isinstance(op_desc, OpDesc) else op_desc
    if not isinstance(op, Operator):
        raise InvalidType(expected("get_grad_op_desc", "op_desc", "an OpDesc",
                                   type(op_desc).__name__))
    spec = registry.get(op.type)
    if spec.grad is None:  # no gradient flows through the op (a constant, a comparison)
        return [], {}
    forward_no_grad = frozenset(_text(n)[:-len(GRAD_SUFFIX)] for n in no_grad_set
                                if _text(n).endswith(GRAD_SUFFIX))
    context = registry.GradContext(op, forward_no_grad)
    if "has_sub_block" in spec.traits:
        if not grad_sub_block:
            raise InvalidArgument(expected("get_grad_op_desc", "grad_sub_block",
                                           f"the grad block of '{op.type}'", "none"))
        first = grad_sub_block[0]
        context.grad_block = first._block if isinstance(first, BlockDesc) else first
    descs, grad_to_var = [], {}
    forward_inputs = set(op.input_arg_names)
    for grad in spec.grad(context):
        outputs = {slot: tuple(a for a in args if a != EMPTY_VAR_NAME)
                   for slot, args in grad.outputs.items()}
        for name in (a for args in outputs.values() for a in args):
            base = name[:-len(GRAD_SUFFIX)]
            if name.endswith(GRAD_SUFFIX) and base in forward_inputs:
                grad_to_var[name] = base
        attr_types = {n: t for n, t in op.attr_types.items() if n in grad.attrs}
        descs.append(OpDesc(Operator(None, grad.type,
                                     {slot: tuple(args) for slot, args in grad.inputs.items()},
                                     outputs, dict(grad.attrs), attr_types)))
    return descs, grad_to_var


class OpRole:
    """Fluid's op roles, the bits of the ``op_role`` attribute."""
    Forward = 0x0000
    Backward = 0x0001
    Optimize = 0x0002
    RPC = 0x0004
    Dist = 0x0008
    LRSched = 0x0010
    Loss = 0x0100
    NotSpecified = 0x1000


class OpProtoAndCheckerMaker:
    """``core.op_proto_and_checker_maker``: the names of the attributes every op carries."""
    OpRole = OpRole

    @staticmethod
    def kOpRoleAttrName():
        return "op_role"

    @staticmethod
    def kOpRoleVarAttrName():
        return "op_role_var"

    @staticmethod
    def kOpNameScopeAttrName():
        return "op_namescope"

    @staticmethod
    def kOpCreationCallstackAttrName():
        return "op_callstack"

    @staticmethod
    def kOpDeviceAttrName():
        return "op_device"
