"""The compile-time view an op's ``infer_shape`` gets of its op: shapes, dtypes, attributes.

Shapes are tuples of ints; ``-1`` is a size known only at run time. Checks treat ``-1`` as
compatible with anything (:func:`dims_match`). Errors come out in the project's one format,
naming the op, the slot and the shapes.
"""
from ..errors import InvalidArgument, expected
from . import transaction
from ..tensor.dtypes import VarType, convert_dtype
from .program import EMPTY_VAR_NAME, Variable


def dims_match(a, b):
    """True when two dims can be equal at run time (either is -1, or they are equal)."""
    return a == b or a < 0 or b < 0


def shapes_match(a, b):
    return len(a) == len(b) and all(dims_match(x, y) for x, y in zip(a, b))


class InferShapeContext:
    """Reads input variables and writes output variables of one op at compile time."""

    __slots__ = ("op", "opdef", "block")

    is_runtime = False

    def __init__(self, op, opdef):
        self.op = op
        self.opdef = opdef
        self.block = op.block

    @property
    def op_type(self):
        return self.op.type

    # --- inputs ----------------------------------------------------------------------
    def has_input(self, slot):
        return bool(self.op.inputs.get(slot))

    def has_output(self, slot):
        args = self.op.outputs.get(slot)
        return bool(args) and any(a != EMPTY_VAR_NAME for a in args)

    def input_var(self, slot, index=0):
        args = self.op.inputs.get(slot)
        if not args:
            raise InvalidArgument(expected(self.op.type, f"input '{slot}'", "a variable", "none"))
        var = self.block.vars.get(args[index])  # most names live in the op's own block
        return var if var is not None else self.block.var_recursive(args[index])

    def input_vars(self, slot):
        return [self.block.var_recursive(n) for n in self.op.inputs.get(slot, ())]

    def input_shape(self, slot, index=0):
        return self.input_var(slot, index).shape

    def input_shapes(self, slot):
        return [v.shape for v in self.input_vars(slot)]

    def input_dtype(self, slot, index=0):
        return self.input_var(slot, index).dtype

    def input_dtypes(self, slot):
        return [v.dtype for v in self.input_vars(slot)]

    def input_lod_level(self, slot, index=0):
        return self.input_var(slot, index).lod_level

    def input_var_type(self, slot, index=0):
        return self.input_var(slot, index).type

    def attr(self, name):
        return self.op.attrs[name]

    def attrs(self):
        return self.op.attrs

    # --- outputs ---------------------------------------------------------------------
    def output_var(self, slot, index=0):
        return self.block.var_recursive(self.op.outputs[slot][index])

    def set_output(self, slot, shape, dtype=None, lod_level=None, index=0, type=None):
        """Give output ``slot`` (argument ``index``) its shape, and dtype/LoD level if given."""
        args = self.op.outputs.get(slot)
        if not args or args[index] == EMPTY_VAR_NAME:
            return
        var = self.block.vars.get(args[index])
        if var is None:
            var = self.block.var_recursive(args[index])
        _set_var(var, shape, dtype, lod_level, type)

    def set_outputs(self, slot, shapes, dtype=None, lod_level=None):
        for i, name in enumerate(self.op.outputs.get(slot, ())):
            if name != EMPTY_VAR_NAME:
                _set_var(self.block.var_recursive(name), shapes[i], dtype, lod_level, None)

    def share_lod(self, src, dst):
        """``dst`` gets ``src``'s LoD level (compile time carries only the level)."""
        sources = self.op.inputs.get(src)
        targets = self.op.outputs.get(dst)
        if not sources or not targets:
            return
        block = self.block
        source = block.vars.get(sources[0])
        level = (source if source is not None else block.var_recursive(sources[0])).lod_level
        for name in targets:
            if name != EMPTY_VAR_NAME:
                var = block.vars.get(name)
                var = var if var is not None else block.var_recursive(name)
                if var.lod_level != level:  # most outputs already say so: nothing to journal
                    journal = transaction.journal
                    if journal is not None and id(var) not in journal:
                        transaction.note_change(var)
                    var.lod_level = level

    # --- checks ----------------------------------------------------------------------
    def fail(self, what, want, got):
        raise InvalidArgument(expected(self.op.type, what, want, got))

    def check(self, cond, what, want, got):
        if not cond:
            self.fail(what, want, got)


#: ProgramDesc.version from which Paddle has 0-D tensors (2.0.0); older files and programs
#: built here with the Fluid 1.x API have none
FIRST_0D_VERSION = 2000000


def fluid1_shapes(program):
    """True when ``program`` follows Fluid 1.x's shapes: built here (no file version) or
    decoded from a file older than Paddle 2.0."""
    version = program.version
    return version is None or version < FIRST_0D_VERSION


def set_fields(var, shape, dtype, lod_level):
    """Give ``var`` the shape (a tuple), dtype (a VarType) and LoD level an earlier
    inference found (an open transaction keeps what they were)."""
    journal = transaction.journal
    if journal is not None and id(var) not in journal:
        transaction.note_change(var)
    var.shape, var.dtype, var.lod_level = shape, dtype, lod_level


def _set_var(var: Variable, shape, dtype, lod_level, type):
    journal = transaction.journal
    if journal is not None and id(var) not in journal:
        transaction.note_change(var)  # a layer may yet fail: keep what the var said
    if shape is not None and len(shape) == 0 and fluid1_shapes(var.block.program):
        shape = (1,)  # a scalar of Fluid 1.x (a mean, a full reduction) has shape [1]
    var.shape = shape if shape.__class__ is tuple else tuple(map(int, shape))
    if dtype is not None:
        var.dtype = dtype if dtype.__class__ is VarType else convert_dtype(dtype)
    if lod_level is not None:
        var.lod_level = lod_level
    if type is not None:
        var.type = VarType(type)
