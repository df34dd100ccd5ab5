"""Program, Block, Variable, Operator: the one in-memory form of a Fluid program.

These objects *are* the program description (Paddle keeps a C++ desc and Python mirrors in
step by hand; here there is a single copy). ``fluid_nb.framework.codec`` turns them into
``ProgramDesc`` bytes and back.

Invariants:
- ``program.blocks[i].idx == i``; block 0 is the global block, its ``parent_idx`` is -1.
- every op's input/output argument is a variable name; names are resolved through the
  block's parent chain (``Block.var_recursive``), so sub-blocks see their parents' variables.
- ``program._version`` grows on every structural change; executors key prepared plans on it.
"""
import contextlib

from ..errors import (InvalidArgument, InvalidType, NotFound, OutOfRange, PreconditionNotMet,
                      expected)
from . import callstack as _callstack
from .callstack import capture as _capture_stack, untrack_arguments as _untrack_arguments
from .callstack import _op_record
from . import annotations as _annotations
from . import transaction as _transaction
from . import unique_name
from .attrs import AttrType, guess_attr_type, normalize_attr
from ..tensor.dtypes import VarType, convert_dtype, dtype_name

#: name of a gradient variable: ``x`` -> ``x@GRAD``
GRAD_SUFFIX = "@GRAD"
EMPTY_VAR_NAME = "@EMPTY@"
#: an op's ``source`` until it is first read: the user's line is in its ``callstack``
SOURCE_FROM_CALLSTACK = object()
TEMP_VAR_NAME = "@TEMP@"


def grad_var_name(name):
    return name + GRAD_SUFFIX


_registry = None
#: the registry's op definitions by type (its own dict, bound on first use): append_op reads
#: it directly and asks ``registry.find`` only on a miss
_op_defs = {}


def _op_registry():
    global _registry, _op_defs
    if _registry is None:
        from . import registry  # imported late: the registry imports this module
        _registry = registry
        _op_defs = registry._OPS
    return _registry


class Variable:
    """A named slot in a block: its kind (``type``), data type, shape and LoD level.

    ``shape`` may hold ``-1`` for a size known only at run time (the batch, usually).
    In live mode ``numpy()``/``value``/``lod()`` read the variable's current value.
    """

    _presence = None  # optional VarDesc fields written although default (from a loaded file)
    _type_extra = None  # VarType payload of kinds this module does not model (READER, TUPLE)
    _attrs = ()  # raw VarDesc.Attr entries, kept for round trips

    def __init__(self, block, name=None, type=VarType.LOD_TENSOR, shape=None, dtype=None,
                 lod_level=None, persistable=None, stop_gradient=False, need_check_feed=False,
                 is_data=False, error_clip=None, **kwargs):
        # (a field given its default is left to the class attribute: a variable holds the
        # others; programs make thousands, most of them plain temporaries)
        self.block = block
        self.name = name if name is not None else unique_name.generate("_generated_var")
        if type is not VarType.LOD_TENSOR:
            self.type = type if type.__class__ is VarType else VarType(type)
        if shape:
            self.shape = tuple(map(int, shape))
        if dtype is not None:
            self.dtype = dtype if dtype.__class__ is VarType else convert_dtype(dtype)
        if lod_level:
            self.lod_level = int(lod_level)
        if persistable:
            self.persistable = True
        if stop_gradient:
            self.stop_gradient = True
        if need_check_feed:
            self.need_check_feed = True
        if is_data:
            self.is_data = True
        if error_clip is not None:
            self.error_clip = error_clip
        if _transaction.journal is not None:  # new in the open transaction: nothing to keep
            _transaction.journal[id(self)] = None

    is_parameter = False

    # the defaults of __init__, as class attributes: an output variable made by _output
    # holds only its block and name until infer_shape writes its shape and dtype
    type = VarType.LOD_TENSOR
    shape = ()
    dtype = VarType.FP32
    lod_level = 0
    persistable = False
    stop_gradient = False
    need_check_feed = False
    is_data = False
    error_clip = None

    @classmethod
    def _output(cls, block, name):
        """A fresh LoD-tensor variable for an op output named by string (infer_shape fills
        in its shape and dtype); the lean path of append_op."""
        var = cls.__new__(cls)
        var.block = block
        var.name = name
        if _transaction.journal is not None:
            _transaction.journal[id(var)] = None
        return var

    # --- Fluid 1.x surface -------------------------------------------------------------
    def _copy(self, block):
        """This variable as one of ``block``: the same fields (a Parameter stays one, as
        Paddle copies a parameter's information)."""
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy.block = block
        return copy

    @property
    def program(self):
        return self.block.program

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def grad_name(self):
        """The name backward gives this variable's gradient: ``<name>@GRAD``."""
        return self.name + GRAD_SUFFIX

    @property
    def op(self):
        """The last op of this variable's block that writes it (None when none does), as
        Fluid 1.8 records a variable's producer."""
        for op in reversed(self.block.ops):
            if self.name in op.output_arg_names:
                return op
        return None

    def to_string(self, throw_on_error=False, with_details=False):
        text = f"var {self.name} : {_type_text(self)}"
        if with_details:
            text += (f"  persistable={self.persistable} stop_gradient={self.stop_gradient}"
                     f" need_check_feed={self.need_check_feed}")
        return text

    def __str__(self):
        return self.to_string()

    def __repr__(self):
        provider = _value_provider
        preview = provider.preview(self) if provider is not None else None
        if not holds_tensor(self):
            return f"Variable({self.name}, type={self.type.name})"
        text = f"Variable({self.name}, shape={list(self.shape)}, dtype={dtype_name(self.dtype)}"
        if self.lod_level:
            text += f", lod_level={self.lod_level}"
        return text + (f", value={preview})" if preview else ")")

    # --- values (live mode) -------------------------------------------------------------
    def numpy(self):
        """The variable's current value as a NumPy array (live mode)."""
        return _require_provider(self).numpy(self)

    @property
    def value(self):
        """The variable's current LoDTensor (live mode)."""
        return _require_provider(self).value(self)

    def lod(self):
        """The LoD of the variable's current value (live mode)."""
        return _require_provider(self).value(self).lod()

    @property
    def desc(self):
        """Fluid's ``var.desc``: a VarDesc view of this variable (see ``framework.desc``)."""
        from .desc import VarDesc
        return VarDesc(self)

    # Python operators (x + y, x * 2, ...) are attached by fluid_nb.api.layers.math_op_patch.


class Parameter(Variable):
    """A persistable, trainable variable created in the global block.

    ``optimize_attr['learning_rate']`` scales the optimizer's rate for this parameter;
    ``regularizer`` overrides the optimizer's; ``trainable=False`` keeps it out of updates.
    """

    is_parameter = True

    def __init__(self, block, shape, dtype, name=None, trainable=True, optimize_attr=None,
                 regularizer=None, do_model_average=None, need_clip=True, initializer=None,
                 type=VarType.LOD_TENSOR, **kwargs):
        dims = tuple(map(int, shape)) if shape is not None else ()
        if shape is None or (dims and min(dims) < 0):
            raise InvalidArgument(f"create_parameter: shape expected all dims >= 0, "
                                  f"but received {shape} for parameter '{name}'")
        if kwargs or type is not VarType.LOD_TENSOR or name is None or dtype is None:
            kwargs.setdefault("persistable", True)
            super().__init__(block, name=name, type=type, shape=dims, dtype=dtype, **kwargs)
        else:
            # (the usual parameter's fields as Variable.__init__ writes them, without its
            # keywords: a model makes hundreds, each in two programs)
            self.block = block
            self.name = name
            if dims:
                self.shape = dims
            self.dtype = dtype if dtype.__class__ is VarType else convert_dtype(dtype)
            self.persistable = True
            if _transaction.journal is not None:
                _transaction.journal[id(self)] = None
        self.trainable = trainable
        self.stop_gradient = not trainable
        self.optimize_attr = optimize_attr if optimize_attr is not None else {"learning_rate": 1.0}
        self.regularizer = regularizer
        self.do_model_average = do_model_average
        self.need_clip = need_clip
        self.initializer = initializer


#: the kinds of variable that hold tensors (a shape and a dtype mean something)
TENSOR_KINDS = frozenset((VarType.LOD_TENSOR, VarType.SELECTED_ROWS, VarType.LOD_TENSOR_ARRAY))


def holds_tensor(var):
    """Whether ``var`` holds tensors; a LOD_RANK_TABLE, STEP_SCOPES, READER or feed/fetch
    list has no shape or dtype of its own, so views show its kind instead."""
    return var.type in TENSOR_KINDS


_TENSOR_KIND_NAMES = {VarType.LOD_TENSOR: "LOD_TENSOR", VarType.SELECTED_ROWS: "SELECTED_ROWS",
                      VarType.LOD_TENSOR_ARRAY: "LOD_TENSOR_ARRAY"}


def _type_text(var):
    if var.type in TENSOR_KINDS:
        kind = _TENSOR_KIND_NAMES[var.type]
        text = f"{kind}.shape{var.shape}.dtype({dtype_name(var.dtype)})"
        if var.type != VarType.SELECTED_ROWS:
            text += f".lod_level({var.lod_level})"
        return text
    return var.type.name


class Operator:
    """One op: its type, argument names per slot, and attributes.

    ``inputs``/``outputs`` map slot name -> tuple of variable names (a slot's tuple is
    replaced, never changed in place: tuples of names are records the cyclic collector
    stops walking, where lists stay in its way for the op's life); ``attrs`` maps attribute
    name -> canonical Python value (a block as its index). ``attr_types`` holds the wire type
    of attributes whose type the op's definition does not fix (unknown ops, loaded files).
    None of these refers back to the op, so the cyclic collector's walk of an op visits its
    block alone, the one way back (``_op_record.walk_block_only``): a live loop keeps every
    op, and each pass of the collector walked every field of every op.
    """

    __slots__ = ("block", "type", "inputs", "outputs", "attrs", "attr_types", "is_target",
                 "_source", "callstack", "__weakref__")

    def __init__(self, block, type, inputs, outputs, attrs, attr_types=None, is_target=False):
        self.block = block
        self.type = type
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.attr_types = attr_types if attr_types is not None else {}
        self.is_target = is_target
        self._source = None  # see ``source``
        # the Python stack that appended it, as framework.callstack keeps it (Fluid's
        # op_callstack); empty for ops read from a file, whose attribute holds it
        self.callstack = ()

    def _copy(self, block):
        """This op as an op of ``block``: argument and attribute dicts of its own (list
        attributes copied), the same stack, and its source line found from it when asked
        (a clone of a live session's program searches no stack)."""
        copy = Operator(block, self.type, dict(self.inputs), dict(self.outputs),
                        {k: (list(v) if isinstance(v, list) else v)
                         for k, v in self.attrs.items()},
                        dict(self.attr_types), self.is_target)
        copy._source = self._source
        copy.callstack = self.callstack
        return copy

    @property
    def source(self):
        """``(filename, lineno, line)`` of the user's code that added the op (a live
        session's ops), or None. A live session marks its ops with
        ``SOURCE_FROM_CALLSTACK``: the line is then found in ``callstack`` when first asked
        for, so an op nobody looks at costs no search."""
        source = self._source
        if source is SOURCE_FROM_CALLSTACK:
            source = self._source = _callstack.user_line(self.callstack)
        return source

    @source.setter
    def source(self, value):
        self._source = value

    # --- Fluid 1.x surface -------------------------------------------------------------
    def input(self, slot):
        return list(self.inputs.get(slot, ()))

    def output(self, slot):
        return list(self.outputs.get(slot, ()))

    @property
    def input_names(self):
        return list(self.inputs)

    @property
    def output_names(self):
        return list(self.outputs)

    @property
    def input_arg_names(self):
        return [n for args in self.inputs.values() for n in args]

    @property
    def output_arg_names(self):
        return [n for args in self.outputs.values() for n in args]

    def has_attr(self, name):
        return name in self.attrs

    def attr(self, name):
        if name not in self.attrs:
            raise NotFound(f"{self.type}: attribute '{name}' expected to exist, but the op has "
                           f"only {sorted(self.attrs)}")
        return self.attrs[name]

    def block_attr(self, name):
        return self.block.program.block(self.attrs[name])

    def _block_attr_id(self, name):
        return self.attrs[name]

    def attr_type(self, name):
        """The wire type of attribute ``name``."""
        if name in self.attr_types:
            return self.attr_types[name]
        spec = _op_registry().find(self.type)
        if spec is not None and name in spec.attrs:
            return spec.attrs[name].type
        return guess_attr_type(self.attrs[name])

    @property
    def attr_names(self):
        return list(self.attrs)

    def all_attrs(self):
        """Name -> value, a block attribute as its Block (a BLOCKS one as a list of them), as
        Fluid 1.8 hands them out."""
        attrs = dict(self.attrs)
        for name, value in attrs.items():
            kind = self.attr_type(name)
            if kind == AttrType.BLOCK:
                attrs[name] = self.block.program.block(value)
            elif kind == AttrType.BLOCKS:
                attrs[name] = [self.block.program.block(index) for index in value]
        return attrs

    def _set_attr(self, name, value):
        spec = _op_registry().find(self.type)
        if spec is not None and name in spec.attrs:
            value = normalize_attr(self.type, name, spec.attrs[name].type, value)
        else:
            attr_type = self.attr_types.get(name) or guess_attr_type(value)
            value = normalize_attr(self.type, name, attr_type, value)
            self.attr_types[name] = attr_type
        self.attrs[name] = value
        self.block.program._changed()

    set_attr = _set_attr

    def _rename_input(self, old, new):
        rename_argument(self.inputs, old, new)
        self.block.program._changed()

    def _rename_output(self, old, new):
        rename_argument(self.outputs, old, new)
        self.block.program._changed()

    def to_string(self, throw_on_error=False):
        return _op_line(self)

    def __str__(self):
        return _op_line(self)

    __repr__ = __str__

    @property
    def idx(self):
        return self.block.ops.index(self)

    @property
    def desc(self):
        """Fluid's ``op.desc``: an OpDesc view of this op (see ``framework.desc``)."""
        from .desc import OpDesc
        return OpDesc(self)


_op_record.walk_block_only(Operator)


def _op_line(op):
    outs = ", ".join(f"{k}={list(v)}" for k, v in op.outputs.items())  # (Paddle's lists)
    ins = ", ".join(f"{k}={list(v)}" for k, v in op.inputs.items())
    attrs = ", ".join(f"{k} = {_attr_text(op, k, v)}" for k, v in sorted(op.attrs.items()))
    return f"{{{outs}}} = {op.type}(inputs={{{ins}}}, {attrs})"


#: attribute values that are never a block's index (a BLOCK attribute holds an int): their
#: text needs no look-up of the attribute's type
_NOT_A_BLOCK = frozenset((str, float, bool, list))


def _attr_text(op, name, value):
    kind = value.__class__
    if kind is str:
        return f'"{value}"'
    if kind not in _NOT_A_BLOCK and op.attr_type(name) == AttrType.BLOCK:
        return f"block[{value}]"
    return str(value)


class Block:
    """A list of ops and the variables they name; sub-blocks (While, IfElse) nest by parent."""

    def __init__(self, program, idx, parent_idx=-1, forward_block_idx=-1):
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.forward_block_idx = forward_block_idx
        self.vars = {}
        self.ops = []
        #: ops an executor put before the user's in its run copy (feeds): views number the
        #: user's ops from 0 after them
        self.ops_prepended = 0

    @property
    def parent_block(self):
        return self.program.block(self.parent_idx) if self.parent_idx >= 0 else None

    # --- variables ----------------------------------------------------------------------
    def var(self, name):
        """The variable ``name`` of this block (not its parents)."""
        try:
            return self.vars[name]
        except KeyError:
            raise NotFound(f"block {self.idx}: variable '{name}' expected to exist, "
                           f"but it is not in this block") from None

    def has_var(self, name):
        return name in self.vars

    def _find_var_recursive(self, name):
        block = self
        while block is not None:
            var = block.vars.get(name)
            if var is not None:
                return var
            block = block.parent_block
        return None

    def var_recursive(self, name):
        var = self._find_var_recursive(name)
        if var is None:
            raise NotFound(f"block {self.idx}: variable '{name}' expected in this block or "
                           f"its parents, but it is in neither")
        return var

    _var_recursive = var_recursive

    def create_var(self, **kwargs):
        """Create (or return the existing) variable; see :class:`Variable` for the fields."""
        name = kwargs.get("name")
        if name is not None and name in self.vars:
            var = self.vars[name]
            # Fluid: asking again for a variable may not change what it was declared as
            shape = kwargs.get("shape")
            if shape is not None and holds_tensor(var) and tuple(shape) != tuple(var.shape):
                raise InvalidArgument(expected(f"create_var: variable '{name}'", "shape",
                                               f"{list(var.shape)} (as created before)",
                                               list(shape)))
            return var
        var = Variable(self, **kwargs)
        self.vars[var.name] = var
        self.program._changed()
        return var

    def _create_temporary(self, name, dtype):
        """A temporary ``name`` of ``dtype`` (a VarType) made as append_op makes its string
        outputs (block and name; the other fields are the class defaults until infer_shape
        writes them); the existing variable when the name is taken. Layers and the Variable
        operators make one or more per call."""
        var = self.vars.get(name)
        if var is None:
            var = self.vars[name] = Variable._output(self, name)
            var.dtype = dtype
            self.program._version += 1  # (program._changed(), inline)
        return var

    def create_parameter(self, **kwargs):
        """Create a Parameter in the global block (Fluid keeps all parameters there)."""
        glob = self.program.global_block()
        name = kwargs.get("name")
        param = glob.vars.get(name) if name is not None else None
        fresh = param is None
        if param is None or not param.is_parameter:
            # Fluid: a parameter made here has a known, non-empty shape and a dtype
            shape = kwargs.get("shape")
            if shape is None or not len(shape):
                raise InvalidArgument(expected("create_parameter", "shape", "a non-empty "
                                               "list of dims", f"{shape} for '{name}'"))
            if kwargs.get("dtype") is None:
                raise InvalidArgument(expected("create_parameter", "dtype", "a data type",
                                               f"None for '{name}'"))
            param = Parameter(glob, **kwargs)
            glob.vars[param.name] = param
            self.program._changed()
        initializer = kwargs.get("initializer")
        if initializer is not None:
            # Fluid's rule: the initializer's op goes into this block unless an op of the
            # global block already writes the parameter (creating it again adds nothing).
            # A name the block had no variable of has no writer: not looked for, or a
            # program of P parameters would look through its P initializers P times
            writers = [] if fresh else [op for op in glob.ops
                                        if param.name in op.output_arg_names]
            if len(writers) > 1:
                raise PreconditionNotMet(expected(
                    "create_parameter", f"parameter '{param.name}'", "at most one op "
                    "initialising it", f"{len(writers)}: " + ", ".join(op.type for op in writers)))
            if not writers:
                initializer(param, self)
        return param

    def _remove_var(self, name):
        self.vars.pop(name, None)
        self.program._changed()

    def _rename_var(self, old, new):
        var = self.var(old)
        del self.vars[old]
        var.name = new
        self.vars[new] = var
        for op in self.ops:
            op._rename_input(old, new)
            op._rename_output(old, new)
        self.program._changed()
        return var

    def all_parameters(self):
        return [v for v in self.vars.values() if v.is_parameter]

    def iter_parameters(self):
        return (v for v in self.vars.values() if v.is_parameter)

    # --- ops ----------------------------------------------------------------------------
    def append_op(self, type=None, inputs=None, outputs=None, attrs=None, _index=None,
                  _infer=True, **kwargs):
        """Append an op; check it against its definition and infer its outputs' shapes.

        On any error nothing is appended and no output variable is left behind.
        (``_index``, ``_infer``: the internal insert and no-inference variants.)
        """
        # every layer passes here: the registry's dict is read directly, and the arguments
        # are put in the form an op keeps them in one C call
        spec = _op_defs.get(type) if type.__class__ is str else None
        if spec is None:
            if not isinstance(type, str) or not type:
                raise InvalidArgument(f"append_op: type expected a non-empty op type "
                                      f"string, but received {type!r}")
            spec = _op_registry().find(type)
        arguments = _op_arguments(inputs, outputs, Variable)
        if arguments is None:  # (an argument of another kind: the Python way names it)
            in_args, single_in = _slot_arguments(type, "input", inputs)
            out_args, single = _slot_arguments(type, "output", outputs)
            single = single and single_in
        else:
            in_args, out_args, single = arguments
        own_vars = self.vars
        created = []
        for args in out_args.values():
            for name in args:
                if name not in own_vars and name != EMPTY_VAR_NAME and (
                        self.parent_idx < 0 or self._find_var_recursive(name) is None):
                    own_vars[name] = Variable._output(self, name)
                    created.append(name)
        return self._append_args(spec, type, in_args, out_args, attrs, single, created,
                                 _index, _infer, 3)

    def _append_args(self, spec, type, in_args, out_args, attrs, single=True, created=(),
                     _index=None, _infer=True, skip=2):
        """``append_op`` from its checks on, for arguments in the form an op keeps them
        (slot -> tuple of names; ``single``: one name per slot), whose output variables
        exist (``created``: the names append_op made, removed again on failure). A one-op
        layer enters here (``transaction.append_one_op``); ``skip``: frames between the
        stack's capture and the code the op's stack starts at."""
        try:
            if spec is not None:
                # (what a layer gives again, completed from the definition's memo in C)
                completed = _completed_attrs(spec, attrs)
                attrs, attr_types = completed if completed is not None else \
                    spec.complete_attrs(attrs or {}, self.program)
                if single:
                    key = (spec, *in_args, None, *out_args)  # (one tuple: made per op)
                    if key not in _single_slots_passed:
                        spec.check_slots(in_args, out_args)
                        _single_slots_passed.add(key)
                else:
                    spec.check_slots(in_args, out_args)
            else:
                attrs, attr_types = _untyped_attrs(type, attrs or {})
            op = Operator(self, type, in_args, out_args, attrs, attr_types)
            if spec is not None and _infer and spec.infer_shape is not None:
                spec.run_infer_shape(op)
        except BaseException:
            for name in created:
                self.vars.pop(name, None)
            raise
        op.callstack = _capture_stack(skip)
        _untrack_arguments(in_args, out_args)
        role = self.program._current_role
        if role and "op_role" not in attrs:
            op.attrs["op_role"] = role
        if _annotations.current:  # inside a name_scope or device_guard
            for name, value in _annotations.current.items():
                op.attrs.setdefault(name, value)
        if _index is None:
            self.ops.append(op)
        else:
            self.ops.insert(_index, op)
        program = self.program
        program._version += 1  # (program._changed(), inlined: every append passes here)
        hook = program._append_hook
        if hook is not None:
            try:
                hook(op)
            except BaseException:  # the hook (live mode) ran the op and it failed: undo
                self.ops.remove(op)
                for name in created:
                    self.vars.pop(name, None)
                self.program._changed()
                raise
        return op

    def _prepend_op(self, type=None, inputs=None, outputs=None, attrs=None, **kwargs):
        return self.append_op(type, inputs, outputs, attrs, 0)

    def _insert_op(self, index, type=None, inputs=None, outputs=None, attrs=None, **kwargs):
        return self.append_op(type, inputs, outputs, attrs, index)

    def _add_op(self, index, type, inputs, outputs, attrs, infer=True):
        return self.append_op(type, inputs, outputs, attrs, index, infer)

    def _remove_op(self, index, sync=True):
        del self.ops[index]
        self.program._changed()

    def _sync_with_cpp(self):
        """Kept for Fluid code that calls it; there is nothing to synchronise here."""

    @property
    def desc(self):
        """Fluid's ``block.desc``: a BlockDesc view of this block (see ``framework.desc``)."""
        from .desc import BlockDesc
        return BlockDesc(self)

    def to_string(self, throw_on_error=False, with_details=False):
        return "\n".join(_block_lines(self, "", with_details))

    __str__ = to_string


#: ``completed(opdef, attrs)``: ``opdef.complete_attrs(attrs)``'s answer from its memo, or
#: None when the memo has none (``_op_record.c``)
_completed_attrs = _op_record.completed

#: (op definition, input slots..., None, output slots...) that passed ``check_slots`` with one argument
#: per slot: whether they pass depends on nothing else, and layers repeat a few of them
_single_slots_passed = set()


def _slot_arguments(op_type, kind, slots):
    """(slot -> tuple of names, whether each slot holds one name) of append_op's ``inputs``
    or ``outputs`` (``kind``): each slot a name, a Variable, or a list or tuple of them;
    None for no argument. The definition of ``_op_record.op_arguments``, which answers for
    both in C and leaves to this function the arguments whose error it raises."""
    args, single = {}, True
    if slots:
        for slot, value in slots.items():
            if value is not None:
                names = args[slot] = _names(op_type, kind, slot, value)
                single = single and len(names) == 1
    return args, single


#: ``op_arguments(inputs, outputs, Variable)``: (:func:`_slot_arguments` of both, whether
#: every slot holds one name), or None where that function must name an argument's error
_op_arguments = _op_record.op_arguments


def _names(op_type, kind, slot, value):
    """The argument names of one slot given as a list or tuple of Variables and names."""
    names = []
    for item in (value if isinstance(value, (list, tuple)) else [value]):
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, Variable):
            names.append(item.name)
        else:
            raise InvalidType(f"{op_type}: {kind} '{slot}' expected Variable or variable "
                              f"name, but received {type(item).__name__}")
    return tuple(names)


def rename_argument(args_by_slot, old, new):
    """Every ``old`` among an op's arguments (slot -> tuple of names) renamed ``new``."""
    for slot, args in args_by_slot.items():
        if old in args:
            args_by_slot[slot] = tuple(new if a == old else a for a in args)


def _untyped_attrs(op_type, attrs):
    types = {}
    values = {}
    for name, value in attrs.items():
        attr_type = guess_attr_type(value)
        values[name] = normalize_attr(op_type, name, attr_type, value)
        types[name] = attr_type
    return values, types


def _block_lines(block, indent, with_details):
    lines = [f"{indent}{{ // block_idx:{block.idx}  parent_idx:{block.parent_idx}  "
             f"forward_idx:{block.forward_block_idx}"]
    for var in block.vars.values():
        prefix = "persist " if var.persistable else ""
        prefix = ("param " if var.is_parameter else "") + prefix
        lines.append(f"{indent}    {prefix}{var.to_string(with_details=with_details)}")
    if block.vars:
        lines.append("")
    for op in block.ops:
        lines.append(f"{indent}    {_op_line(op)}")
        for name, value in op.attrs.items():
            if value.__class__ not in _NOT_A_BLOCK and op.attr_type(name) == AttrType.BLOCK:
                lines.extend(_block_lines(block.program.block(value), indent + "        ",
                                          with_details))
    lines.append(f"{indent}}}")
    return lines


class Program:
    """A Fluid program: a list of blocks, block 0 global.

    Example::

        prog = fluid.Program()
        with fluid.program_guard(prog):
            x = fluid.layers.data(name='x', shape=[13], dtype='float32')
        print(prog)  # readable listing, nested blocks indented
    """

    def __init__(self):
        self.blocks = [Block(self, 0)]
        self.current_block_idx = 0
        self.random_seed = 0
        self.version = None  # ProgramDesc.version, when known
        self.op_version_map = {}
        self._version = 0
        self._append_hook = None
        self._current_role = 0  # op_role stamped on ops appended now (see op_role_guard)
        self._is_test = False
        self._plans = {}  # executor plans, keyed by the executor; cleared on change

    def _changed(self):
        self._version += 1

    @property
    def random_seed(self):
        """The seed random ops of this program take when their own ``seed`` is 0 (0: a
        different draw every run)."""
        return self._random_seed

    @random_seed.setter
    def random_seed(self, seed):
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise InvalidArgument(expected("Program.random_seed", "seed", "an int",
                                           f"{seed!r} ({type(seed).__name__})"))
        self._random_seed = seed

    # --- blocks -------------------------------------------------------------------------
    def global_block(self):
        return self.blocks[0]

    def block(self, index):
        if not 0 <= index < len(self.blocks):
            raise OutOfRange(f"program: block index expected in [0, {len(self.blocks)}), "
                             f"but received {index}")
        return self.blocks[index]

    def current_block(self):
        return self.blocks[self.current_block_idx]

    @property
    def num_blocks(self):
        return len(self.blocks)

    def _create_block(self, parent_idx=None):
        parent = self.current_block_idx if parent_idx is None else parent_idx
        block = Block(self, len(self.blocks), parent)
        self.blocks.append(block)
        self.current_block_idx = block.idx
        self._changed()
        return block

    def _rollback(self):
        self.current_block_idx = self.current_block().parent_idx

    @contextlib.contextmanager
    def op_role_guard(self, role):
        """Ops appended inside get ``op_role = role`` (Paddle's roles: 1 backward,
        2 optimize, 16 learning-rate schedule), before any append hook sees them."""
        old, self._current_role = self._current_role, role
        try:
            yield
        finally:
            self._current_role = old

    def list_vars(self):
        for block in self.blocks:
            yield from block.vars.values()

    def all_parameters(self):
        return self.global_block().all_parameters()

    # --- text ---------------------------------------------------------------------------
    def to_string(self, throw_on_error=False, with_details=False):
        """Readable listing: variables, then one ``{Out=[..]} = op(inputs={..}, attrs)`` per op."""
        if not isinstance(throw_on_error, bool) or not isinstance(with_details, bool):
            raise InvalidType("to_string: throw_on_error and with_details expected bool, "
                              f"but received {type(throw_on_error).__name__}, "
                              f"{type(with_details).__name__}")
        return "\n".join(_block_lines(self.global_block(), "", with_details))

    def __str__(self):
        return self.to_string()

    # --- bytes --------------------------------------------------------------------------
    def serialize_to_string(self):
        from . import codec
        return codec.encode_program(self)

    @property
    def desc(self):
        """Fluid scripts call ``program.desc.serialize_to_string()``; this serves them."""
        return self

    def _sync_with_cpp(self):
        """Kept for Fluid code that calls it after editing descs: the descs are views of
        this program, so there is nothing to synchronise."""

    @staticmethod
    def parse_from_string(binary_str):
        from . import codec
        return codec.decode_program(binary_str)

    # --- copies -------------------------------------------------------------------------
    def _copy_param_info_from(self, other):
        """Give this program's parameters the training attributes (trainable, learning
        rate, regularizer, clipping, averaging) of ``other``'s parameters of the same name."""
        if not isinstance(other, Program):
            raise InvalidType(expected("Program._copy_param_info_from", "other", "a Program",
                                       type(other).__name__))
        glob = self.global_block()
        for param in other.global_block().all_parameters():
            mine = glob.vars.get(param.name)
            if mine is None:
                continue
            if not mine.is_parameter:  # a plain variable there becomes the parameter it was
                mine.__class__ = Parameter
            for attribute in ("trainable", "optimize_attr", "regularizer", "do_model_average",
                              "need_clip", "initializer", "stop_gradient"):
                setattr(mine, attribute, getattr(param, attribute, None))
        self._changed()

    def _copy_dist_param_info_from(self, other):
        """Take over ``other``'s distributed-training marks (set by the transpiler)."""
        if not isinstance(other, Program):
            raise InvalidType(expected("Program._copy_dist_param_info_from", "other",
                                       "a Program", type(other).__name__))
        for attribute in ("_is_distributed", "_is_chief", "_parameters_on_pservers",
                          "_endpoints", "_ps_endpoint", "_distributed_lookup_table"):
            if hasattr(other, attribute):
                setattr(self, attribute, getattr(other, attribute))

    def clone(self, for_test=False):
        """A deep copy. With ``for_test=True``, a copy of the forward part, as Fluid's: when
        the program has a backward part (``minimize`` or ``append_backward`` ran), the
        backward, optimizer and learning-rate ops go, with the variables only they name
        and the blocks left empty (``prune.prune_backward``); and ops that have ``is_test``
        get it set True (dropout and batch_norm switch to inference)."""
        if for_test:
            from .prune import prune_backward
            twin = prune_backward(self)
            if twin is not None:
                for block in twin.blocks:
                    for op in block.ops:
                        if "is_test" in op.attrs:
                            op.attrs["is_test"] = True
                twin._is_test = True
                twin._copy_dist_param_info_from(self)
                return twin
        return self._copy(for_test)

    def _copy(self, for_test):
        """A deep copy of every block, op and variable; ``for_test``: ``is_test`` set True
        where an op has it."""
        twin = Program()
        twin.blocks = []
        twin.random_seed = self.random_seed
        twin.version = self.version
        twin.op_version_map = dict(self.op_version_map)
        if hasattr(self, "_presence"):
            twin._presence = set(self._presence)
        for block in self.blocks:
            copy_block = Block(twin, block.idx, block.parent_idx, block.forward_block_idx)
            if hasattr(block, "_presence"):
                copy_block._presence = set(block._presence)
            for var in block.vars.values():
                copy_block.vars[var.name] = var._copy(copy_block)
            for op in block.ops:
                copy_op = op._copy(copy_block)
                if for_test and "is_test" in copy_op.attrs:
                    copy_op.attrs["is_test"] = True
                copy_block.ops.append(copy_op)
            twin.blocks.append(copy_block)
        twin._is_test = for_test or self._is_test
        twin._copy_dist_param_info_from(self)  # the transpiler's marks, as Fluid's clone keeps
        return twin

    def _inference_optimize(self, prune_read_op=True):
        """A test-mode copy; with ``prune_read_op``, without the reader ops up to and
        including the first ``read`` and without reader variables (an inference program
        is fed, not read). As Fluid's, it keeps a backward part (``clone(for_test=True)``
        prunes one)."""
        copy = self._copy(for_test=True)
        block = copy.global_block()
        reads = [index for index, op in enumerate(block.ops) if op.type == "read"]
        if prune_read_op and reads:
            for index in reversed(range(reads[0] + 1)):
                block._remove_op(index)
            for name in [name for name, var in block.vars.items()
                         if var.type == VarType.READER]:
                block._remove_var(name)
        return copy

    def _prune(self, targets):
        """A copy with only the ops ``targets`` (Variables, names, Operators) need."""
        return self._prune_with_input([], targets)

    def _prune_with_input(self, feeded_var_names, targets):
        """A copy with only the ops ``targets`` need when ``feeded_var_names`` are fed
        (see :mod:`fluid_nb.framework.prune`)."""
        from .prune import prune_with_input
        return prune_with_input(self, feeded_var_names, targets)


# --- defaults and guards (sugar over explicit programs) --------------------------------
_main_program = Program()
_startup_program = Program()


def without_feed_fetch_ops(program):
    """``program`` without its own feed and fetch ops (a saved model's), as a copy, so a
    caller may feed and fetch other variables; ``program`` itself when it has none."""
    if not any(op.type in ("feed", "fetch") for op in program.global_block().ops):
        return program
    copy = program.clone()
    block = copy.global_block()
    for index in reversed(range(len(block.ops))):
        if block.ops[index].type in ("feed", "fetch"):
            block._remove_op(index)
    return copy


def default_main_program():
    return _main_program


def default_startup_program():
    return _startup_program


def switch_main_program(program):
    global _main_program
    old, _main_program = _main_program, program
    return old


def switch_startup_program(program):
    global _startup_program
    old, _startup_program = _startup_program, program
    return old


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Inside the block, layers add ops to ``main_program`` (and initialisers to
    ``startup_program``, when given)."""
    if not isinstance(main_program, Program):
        raise InvalidType(f"program_guard: main_program expected Program, but received "
                          f"{type(main_program).__name__}")
    if startup_program is not None and not isinstance(startup_program, Program):
        raise InvalidType(f"program_guard: startup_program expected Program, but received "
                          f"{type(startup_program).__name__}")
    old_main = switch_main_program(main_program)
    old_startup = switch_startup_program(startup_program) if startup_program is not None else None
    try:
        yield
    finally:
        switch_main_program(old_main)
        if startup_program is not None:
            switch_startup_program(old_startup)


# --- values of variables (live mode installs a provider) -------------------------------
_value_provider = None


def set_value_provider(provider):
    """Install the object that answers ``Variable.numpy()``/``value`` (the live session)."""
    global _value_provider
    old, _value_provider = _value_provider, provider
    return old


def _require_provider(var):
    from ..errors import PreconditionNotMet
    if _value_provider is None:
        raise PreconditionNotMet(f"variable '{var.name}': a value expected (live mode), but "
                                 f"no live session is active; run the program with an Executor "
                                 f"and fetch it, or use fluid.live()")
    return _value_provider
