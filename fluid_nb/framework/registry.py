"""The op registry: one record per op type, everything about the op in one place.

An op family module defines each op with :func:`def_op`::

    def_op("relu",
           inputs=["X"], outputs=["Out"],
           infer_shape=same_shape("X", "Out"),
           grad=grad_maker("relu_grad", inputs=["Out"], out_grads=["Out"], in_grads=["X"]),
           kernel=lambda ctx, x: ctx.xp.maximum(x, 0),
           doc="Out = max(X, 0)")

Slot syntax: ``"X"`` plain, ``"X?"`` dispensable, ``"X[]"`` duplicable (a list of
variables), ``"X!"`` intermediate; suffixes combine (``"X[]?"``).
Attributes: ``{"axis": ("int", -1)}``, or ``("int", -1, checker)`` where ``checker(value)``
returns an error string (or None when the value is fine).

Kernels are ``kernel(ctx, *inputs)`` with one positional argument per input slot in
declaration order: an array (``ctx.xp`` module), a list of arrays for a duplicable slot,
``None`` for an absent dispensable slot. With ``lod_aware=True`` the kernel receives the
runtime tensors (``LoDTensor`` etc.) instead of arrays. A kernel returns its outputs in
declaration order (a bare value when the op has one output slot; ``None`` for an output it
did not produce). ``ctx.wants(slot)`` says whether the program asked for an output.
``ctx.attrs`` holds the attributes. Kernels never modify their inputs, with one exception:
an update op declared with ``in_place={"ParamOut": "Param"}`` may write its new value into
the input's own array when the executor lists the input slot in ``ctx.donated`` (the
output names the same variable and no other tensor, view or reference holds the array), as
Paddle updates parameters and optimizer state in place; one declared with
``reuses={"ParamOut": "Grad"}`` may write the output over the input's array when the
executor lists that slot (the input is a temporary of the run that no later op reads, and
nothing else holds its array). The values are the same either way; only the memory
differs.

``host_step(ctx, ins, out, kernel_step) -> step`` (optional, ops with one output slot) builds
the step the executor runs on the host place instead of the kernel's: a closure over the
input holders ``ins`` (in slot order) and the output holder ``out`` that does the op's
common case itself, reading and writing the holders' runtime values, and calls
``kernel_step()`` (the kernel's own step) for anything else, so errors and uncommon inputs
are the kernel's. Worth it for the small ops a loop body runs every iteration, whose kernel
call costs more than their work (tensor-array reads and writes, counters, conditions).

``plain_kernel(ctx, *arrays) -> array`` (optional, ops with one output slot ``Out`` and
``X`` their first input) is the op's common case as a formula op's kernel is: a pure
function of its input arrays, its attributes and ``ctx.xp``, reading nothing else from its
context. For an op that is not ``lod_aware`` it is the kernel itself (``softmax``); for a
``lod_aware`` op, the kernel's dense case over its required input slots, whose output keeps
the first input's LoD (``scale``, which every ``x * 2.0`` appends). A live session's first
run of the op calls it when the op has only those inputs and they hold LoDTensors, and the
op's shape inference is remembered per input signature as a formula op's is.

On a device place (CuPy, or the strict device the tests use) ``ctx.xp`` is the device's
array module and the kernel's arrays live there: a kernel computes with ``ctx.xp`` only, and
never converts a device value to a host one implicitly (``float(a)``, ``a.item()``,
``a.tolist()``, ``np.asarray(a)``, a device value as a condition). Values that stay
arithmetic stay on the device (a learning rate multiplies as a 0-d array). Where the op's
meaning needs a value on the host (a shape tensor, a count that decides an output's shape, a
data-dependent number of boxes), the kernel copies it with
:func:`fluid_nb.tensor.transfer.to_host`, once per run of the op, and the op says so in
``host_reads``; the device tests allow host copies only to ops that declare them. Loop
machinery stays on the host as in Paddle: an op with a true ``force_cpu`` attribute, or the
``host_output`` trait (a rank table's ``max_sequence_len``, an array's length), runs its
kernel on the host whatever the place, and ``kernel_place_of`` names the input whose place
an op's kernel follows (``increment`` of a host counter stays on the host).

An op with the ``stateful`` trait does more than compute its outputs (draws random numbers,
prints, calls Python, reads or writes files, sends messages, or carries a value from one run
to the next in an output, as a quantizer's window does): it runs, and is compiled,
whether or not anything reads its outputs. Any other op is a function of its inputs, so a
gradient op whose outputs nothing reads may be left out of a run, and a live session may let
go of an op's outputs and compute them again when they are read.

An op with the ``infer_from_x`` trait (reshape2, transpose2, squeeze2, unsqueeze2, flatten2,
concat, slice, strided_slice, expand, cumsum, reverse, flip, isinf, isnan, isfinite,
where_index, shape, size, fill_constant_batch_size_like, sum, top_k, top_k_v2, argsort,
dropout, stack, assign, split, unstack: X is its
first input slot, slice's and shape's Input) infers its outputs from X's shape, dtype and
LoD level (each X's, for an X of several variables) and its attributes alone when X is its
only input:
what inference said is remembered per such signature and the outputs' LoD levels before,
for every output (a Transformer appends dozens of alike reshapes; for an output slot of
several variables, split's, per the slots' numbers of variables too). One with the
``infer_from_inputs`` trait (cross_entropy2, softmax_with_cross_entropy, accuracy, gather)
infers its outputs from every input's fields and its attributes: what it said is remembered
per the slots, their variables' fields and the outputs' LoD levels (a layer appending
through ``transaction.append_fresh`` reads the memo in C). An output of another kind than
a LoD tensor is inferred each time (the memo holds fields, not kinds: assign's inference
gives Out X's). One with the ``infer_from_attrs`` trait
(fill_constant, uniform_random, gaussian_random) infers its outputs from its attributes
alone when given no input: what it said is remembered per the attributes and the outputs'
LoD levels (``x > 0.5`` appends a fill_constant for its number; a refusal is not
remembered).

Registering a type twice is an error; a missing op names the op and what to add.

The table fills as it is asked: the ops package hands over an index (op type -> the module
that defines it, see :func:`define_on_demand`), and a lookup of an op not defined yet
(:func:`find`, :func:`get`, decoding a program, appending an op) imports its module first;
:func:`all_ops` imports them all. So a lookup always sees every op, and an import of
``fluid_nb`` defines none it does not use.
"""
import functools
import operator
import sys

from ..errors import InvalidArgument, NotFound, Unimplemented, expected
from .attrs import ATTR_TYPE_NAMES, AttrType, normalize_attr
from ..tensor.dtypes import VarType
from . import transaction
from ._op_record import attr_values
from .memo import remember
from .infer import InferShapeContext, set_fields
from .program import EMPTY_VAR_NAME, grad_var_name

_LOD_TENSOR = VarType.LOD_TENSOR
_LOD_TENSORS_ONLY = {_LOD_TENSOR}
_type_of = operator.attrgetter("type")
_fields_of = operator.attrgetter("shape", "dtype", "lod_level")  # (what inference writes)
_lod_level_of = operator.attrgetter("lod_level")
#: the traits whose ops' inference is remembered per signature (``OpDef._infer_from_x``)
_REMEMBERED_INFERENCE = frozenset(("infer_from_x", "infer_from_attrs", "infer_from_inputs"))

#: the classes of attribute values (and of list items) ``OpDef.complete_attrs`` remembers
#: completing
_SCALARS = frozenset((int, float, bool, str, type(None)))

#: a negative zero's class in a memo's key (``-0.0 == 0.0``, but a scale by one is not the
#: other's); ``_op_record.c`` keys by the same string
NEGATIVE_ZERO = "-0.0"


def _key_class(value):
    kind = value.__class__
    return NEGATIVE_ZERO if kind is float and not value and str(value)[0] == "-" else kind

_OPS = {}

#: api key -> (ops defined when ops_with_api last read it, what it found)
_WITH_API = {}

#: op type -> the module that defines it, for every op its index knows (defined or not yet),
#: in the order the definitions read; ``_define_module(name)`` imports one of them
_INDEX = {}
_define_module = None
_all_defined = False
#: op type -> the keys of its record's ``api`` facts, for the index's ops that have any
_API_INDEX = {}
#: op type -> the module whose top level ran its ``def_op`` (how the index is surveyed)
_DEFINED_IN = {}
#: op type -> ``load()``, which imports the module above the ops that attaches the op's
#: kernel (``attach_kernel``): asked when the kernel is first wanted and not there yet
_KERNELS_FROM_ABOVE = {}
#: op type -> ``wrap(host_step)`` for an op not defined yet: see ``attach_host_step``
_HOST_STEPS_FROM_ABOVE = {}


class Slot:
    __slots__ = ("name", "duplicable", "dispensable", "intermediate")

    def __init__(self, spec):
        name = spec
        self.intermediate = self.dispensable = self.duplicable = False
        while name[-1] in "?!]":
            if name.endswith("[]"):
                self.duplicable, name = True, name[:-2]
            elif name.endswith("?"):
                self.dispensable, name = True, name[:-1]
            elif name.endswith("!"):
                self.intermediate, name = True, name[:-1]
            else:
                break
        self.name = name

    def __repr__(self):
        return (self.name + ("[]" if self.duplicable else "") + ("?" if self.dispensable else "")
                + ("!" if self.intermediate else ""))


class AttrSpec:
    __slots__ = ("name", "type", "default", "checker")

    def __init__(self, name, type, default=None, checker=None):
        self.name = name
        self.type = ATTR_TYPE_NAMES[type] if isinstance(type, str) else AttrType(type)
        self.default = default
        self.checker = checker


class OpDef:
    """Everything about one op type. Fields are read by the framework, executor, backward,
    code generators and views; nothing about an op is kept anywhere else."""

    def __init__(self, type, inputs, outputs, attrs, infer_shape, infer_var_type, grad,
                 kernel, kernels, lod_aware, share_lod, traits, doc, sub_block_backward=None,
                 host_step=None, in_place=None, host_reads=None, kernel_place_of=None,
                 formula=None, api=None, reuses=None, plain_kernel=None):
        self.type = type
        self.inputs = tuple(Slot(s) for s in inputs)
        self.outputs = tuple(Slot(s) for s in outputs)
        self.input_slots = {s.name: s for s in self.inputs}
        self.output_slots = {s.name: s for s in self.outputs}
        self.attrs = {}
        for name, spec in (attrs or {}).items():
            if isinstance(spec, AttrSpec):
                self.attrs[name] = spec
            else:
                self.attrs[name] = AttrSpec(name, *spec)
        self.infer_shape = infer_shape
        self.infer_var_type = infer_var_type
        self.grad = grad
        self.kernels = dict(kernels or {})
        if kernel is not None:
            self.kernels.setdefault(("cpu", None), kernel)
            self.kernels.setdefault(("gpu", None), kernel)
        self.lod_aware = lod_aware
        #: (input slot, [output slots]): outputs take the LoD of that input's first tensor
        self.share_lod = share_lod
        self.traits = frozenset(traits or ())
        self.doc = doc
        #: for ops with the ``has_sub_block`` trait: ``rule(op, no_grad) -> grad block`` that
        #: differentiates the op's sub-block; backward hands the result to the grad maker as
        #: ``g.grad_block``
        self.sub_block_backward = sub_block_backward
        #: the op's common case as a step of its own on the host (see the module docstring)
        self.host_step = host_step
        #: {output slot: input slot} an update op may write in place (ParamOut: Param) when
        #: both name the same variable and nothing else holds the input's array: the
        #: executor puts those input slots in ``ctx.donated`` (see the module docstring)
        self.in_place = dict(in_place or {})
        #: {output slot: input slot} an op may write over the input's array when the input
        #: is a temporary the run drops right after the op and nothing else holds its array
        #: (adam's new parameter over its gradient): the executor puts those input slots in
        #: ``ctx.donated`` too (see the module docstring)
        self.reuses = dict(reuses or {})
        #: on a device place, the input values the kernel copies to the host and why (a
        #: shape tensor, a size that decides an output's shape): the op's meaning needs them
        #: there (see the module docstring); None: it reads no device value on the host
        self.host_reads = host_reads
        #: an input slot whose place decides the kernel's on a device place: a host value
        #: (a loop counter made with force_cpu) is computed on the host, as Paddle's increment
        self.kernel_place_of = kernel_place_of
        #: an elementwise op's meaning as data (``ops/expr.py``'s Formula: an expression over
        #: named input slots, written to one output slot); the kernel is generated from it,
        #: and the native and ONNX targets render it: one definition, every target
        self.formula = formula
        #: the op's common case as a formula op's kernel is: ``plain_kernel(ctx, *arrays)
        #: -> array``, a pure function of the input arrays, the attributes and ``ctx.xp``
        #: (see the module docstring); ``kernel`` stays the op's meaning for the rest
        self.plain_kernel = plain_kernel
        #: given attribute values -> what complete_attrs made of them (see there)
        self._completed = {}
        #: a formula op's output (or a plain kernel's) follows from its LoD-tensor inputs'
        #: shapes, dtypes and LoD levels, its attributes and Out's LoD level before alone:
        #: what inference said for each of them (``run_infer_shape``)
        self._inferred = {} if infer_var_type is None and (
            formula is not None and formula.output == "Out" and
            set(formula.inputs.values()) <= {"X", "Y"} or
            plain_kernel is not None and [s.name for s in self.outputs] == ["Out"] and
            self.inputs[:1] and self.inputs[0].name == "X") else None
        #: an ``infer_from_x`` (``infer_from_attrs``) op's memo: its outputs' fields (slot
        #: order) per signature
        self._inferred_from_x = {} if self.traits & _REMEMBERED_INFERENCE and \
            infer_var_type is None else None
        #: an ``infer_from_inputs`` op's memo keys by every input slot's variables
        self._every_input = "infer_from_inputs" in self.traits
        #: the name of the op's first input slot (X for most; slice's Input), which an
        #: ``infer_from_x`` op's memo keys by
        self._first_input = self.inputs[0].name if self.inputs else None
        #: facts the layers API reads from the op (``layer``, ``act``, ``dtypes``,
        #: ``arguments``: see ``ops.common.unary_op``); empty for most ops
        self.api = dict(api or {})
        # precomputed so append_op stays cheap
        self._defaults = [(n, s.default) for n, s in self.attrs.items() if s.default is not None]
        self._default_attrs = dict(self._defaults)
        self._list_defaults = [n for n, d in self._defaults if isinstance(d, list)]
        self._required_inputs = [s.name for s in self.inputs
                                 if not s.dispensable and not s.intermediate]
        self._required_outputs = [] if "optional_outputs" in self.traits else [
            s.name for s in self.outputs if not s.dispensable and not s.intermediate]

    #: an update op's part in a run's trailing updates written in place at once
    #: (exec/update_commit.py): ``commit(attrs, values, writes) -> (apply, update) or
    #: None``, ``values`` the inputs' values in slot order, ``writes`` the input slots
    #: whose outputs name the same variable; ``apply(updates)`` checks all of them before
    #: it writes any, then writes them with no Python code run in between. None: the op's
    #: kernel always runs it
    commit = None

    def __repr__(self):
        return f"OpDef({self.type}: {list(self.inputs)} -> {list(self.outputs)})"

    @functools.cached_property
    def plain_attrs(self):
        """The declared attributes that name no blocks (``framework.blocks`` skips them);
        worked out for the ops a program binds, not for every op defined."""
        return frozenset(name for name, spec in self.attrs.items()
                         if spec.type not in (AttrType.BLOCK, AttrType.BLOCKS))

    # --- compile-time checks ---------------------------------------------------------
    def complete_attrs(self, given, program=None):
        """Attribute values checked, normalised and completed with defaults."""
        if not given:  # the common case: all defaults (lists copied, so no op shares one)
            attrs = dict(self._default_attrs)
            for name in self._list_defaults:
                attrs[name] = list(attrs[name])
            return attrs, {}
        # the same values given again (a layer called in a loop): what they completed to,
        # copied. Each value's class is in the key, and a list's items' classes: 1, 1.0 and
        # True are equal keys, but INTS refuses [2.0], and an attribute the op does not
        # declare takes its type from the value's class. Values that are not scalars or
        # lists of them (blocks, variables) are completed afresh: a key would keep them
        key = []
        for name, value in given.items():
            kind = value.__class__
            if kind in _SCALARS:
                key.append((name, _key_class(value) if kind is float else kind, value))
                continue
            if kind is list or kind is tuple:
                classes = tuple(map(type, value))
                if _SCALARS.issuperset(classes):
                    if float in classes:
                        classes = tuple(map(_key_class, value))
                    key.append((name, kind, tuple(value), classes))
                    continue
            key = None
            break
        completed = self._completed.get(tuple(key)) if key is not None else None
        if completed is not None:
            attrs, attr_types, lists = completed
            attrs = dict(attrs)
            for name in lists:
                attrs[name] = list(attrs[name])
            return attrs, dict(attr_types) if attr_types else {}
        attrs, attr_types = self._complete(given)
        if key is not None:
            lists = [name for name, value in attrs.items() if value.__class__ is list]
            kept = dict(attrs)
            for name in lists:  # (the op's own lists are not the memo's)
                kept[name] = list(kept[name])
            remember(self._completed, tuple(key), (kept, dict(attr_types), lists))
        return attrs, attr_types

    def _complete(self, given):
        attrs = {}
        attr_types = {}
        specs = self.attrs
        for name, value in given.items():
            if value is None:
                continue
            spec = specs.get(name)
            if spec is None:
                # Paddle's "extra" attributes (use_mkldnn, op_role, ...) ride along untyped
                from ..framework.attrs import guess_attr_type
                try:
                    attr_type = guess_attr_type(value)
                except InvalidArgument:
                    # not an attribute value at all (an array): Paddle keeps only the
                    # attributes an op declares, so an undeclared one is dropped, not refused
                    continue
                attrs[name] = normalize_attr(self.type, name, attr_type, value)
                attr_types[name] = attr_type
                continue
            value = normalize_attr(self.type, name, spec.type, value)
            if spec.checker is not None:
                problem = spec.checker(value)
                if problem:
                    raise InvalidArgument(expected(self.type, f"attribute '{name}'", problem,
                                                   repr(value)))
            attrs[name] = value
        for name, default in self._defaults:
            if name not in attrs:
                attrs[name] = list(default) if isinstance(default, list) else default
        return attrs, attr_types

    def check_slots(self, inputs, outputs):
        """Every given slot is one of the op's, a non-duplicable slot holds one variable,
        and every required slot is given."""
        self._check_given("input", inputs, self.input_slots, self._required_inputs)
        self._check_given("output", outputs, self.output_slots, self._required_outputs)

    def _check_given(self, kind, given, slots, required):
        for name, args in given.items():
            slot = slots.get(name)
            if slot is None or (len(args) > 1 and not slot.duplicable):
                self._slot_error(kind, name, args, slots)
        for name in required:
            if not given.get(name):
                self._slot_error(kind, name, (), slots)

    def _slot_error(self, kind, name, args, slots):
        if name not in slots:
            raise InvalidArgument(expected(self.type, f"{kind} slot '{name}'",
                                           f"one of {sorted(slots)}", f"'{name}'"))
        if not args:
            raise InvalidArgument(expected(self.type, f"{kind} '{name}'", "a variable", "none"))
        raise InvalidArgument(expected(self.type, f"{kind} '{name}'", "one variable",
                                       f"{len(args)}: {args}"))

    def run_infer_shape(self, op):
        inferred = self._inferred
        if inferred is None:
            if self._inferred_from_x is not None:
                return self._infer_from_x(op)
            return self._infer(op)
        # a formula op: inferred once per signature (live cells append thousands alike)
        block = op.block
        found = block.vars.get
        inputs = op.inputs
        if len(inputs) > 1 and ("Y" not in inputs or len(inputs) > 2):
            return self._infer(op)  # (an optional input given: clip's Min, ScaleTensor)
        try:
            x = found(inputs["X"][0])
            y = found(inputs["Y"][0]) if "Y" in inputs else x
            if x.type is not _LOD_TENSOR or y.type is not _LOD_TENSOR:
                return self._infer(op)  # (a SelectedRows X: scale's Out is one too)
            out = found(op.outputs["Out"][0])
            # (Out's LoD level last: an inference that does not share X's, a reduction's,
            # leaves Out's as it was, so the answer depends on it too)
            key = (x.shape, x.dtype, x.lod_level, y.shape, y.dtype, y.lod_level,
                   block.program.version, *attr_values(op.attrs),
                   out.lod_level if out is not None else None)
            known = inferred.get(key) if out is not None else None
        except (KeyError, IndexError, AttributeError, TypeError):  # (a parent block's input,
            return self._infer(op)                                   # an unhashable attribute)
        if known is not None:
            if transaction.journal is None:  # (set_fields' common case, inline: every op)
                out.shape, out.dtype, out.lod_level = known
            else:
                set_fields(out, *known)
            return
        self._infer(op)
        if out is None:  # (Out a parent block's: a loop's condition, written in its body)
            return
        remember(inferred, key, (out.shape, out.dtype, out.lod_level))

    def _infer_from_x(self, op):
        """run_infer_shape of an ``infer_from_x`` op: remembered per X's fields, the
        program's version, the output slots and the attributes (lists as tuples), when X is
        the op's only input and each output slot names variables of the block (for a slot
        of several, split's, the slots' numbers of variables too, and every one's fields
        remembered; one each is the usual key, which the C paths build); for an X
        of several variables (concat's), per their number and each one's fields; for an
        ``infer_from_inputs`` op, per every slot, its number of variables and their fields;
        for an ``infer_from_attrs`` op given no input, per the rest alone; and per the
        outputs' LoD levels before (slice's leaves Out's as it was). X is the op's first
        input slot (slice's Input). (A memo of its own: ``_inferred``'s keys are also the C
        one-op path's, which knows X and Y and one Out; the C path of
        ``append_with_xshape`` reads this one's, for one X.)"""
        inferred = self._inferred_from_x
        block = op.block
        found = block.vars.get
        inputs, outputs = op.inputs, op.outputs
        try:
            x_names = inputs[self._first_input] if len(inputs) == 1 else ()
            if self._every_input:  # (the slots, their numbers of variables, their fields)
                xs = [found(name) for names in inputs.values() for name in names]
                if not xs or set(map(_type_of, xs)) != _LOD_TENSORS_ONLY:
                    return self._infer(op)  # (a parent block's input, a tensor array)
                fields = (*inputs, *map(len, inputs.values()), *map(_fields_of, xs))
            elif not inputs:  # (an infer_from_attrs op given no tensor)
                fields = ()
            elif len(x_names) == 1:
                x = found(x_names[0])
                if x is None or x.type is not _LOD_TENSOR:
                    return self._infer(op)  # (a parent block's input)
                fields = (x.shape, x.dtype, x.lod_level)
            else:  # (a missing variable has no type: the AttributeError below)
                xs = list(map(found, x_names))
                if not xs or set(map(_type_of, xs)) != _LOD_TENSORS_ONLY:
                    return self._infer(op)  # (a shape tensor given, a tensor array)
                fields = (len(xs), *map(_fields_of, xs))
            slots = outputs.values()
            outs = [found(names[0]) for names in slots]  # (IndexError: an empty slot)
            counts = ()
            for names in slots:
                if len(names) != 1:  # (a slot of several, split's: every variable, and
                    counts = tuple(map(len, slots))  # the numbers in the key)
                    outs = [found(name) for names in slots for name in names]
                    break
            # (``is``: a Variable's == appends an op)
            missing = any(out is None for out in outs)
            if not missing:
                for out in outs:  # (an Out of another kind, which assign's inference sets)
                    if out.type is not _LOD_TENSOR:
                        return self._infer(op)
            # (the outputs' LoD levels: an inference may leave one as it was)
            key = (*fields, block.program.version, *outputs, *counts, *attr_values(op.attrs),
                   *map(_lod_level_of, outs)) if not missing else None
            known = inferred.get(key) if not missing else None
        except (KeyError, IndexError, AttributeError, TypeError):  # (an empty slot, an
            return self._infer(op)                                 # unhashable attribute)
        if known is not None:
            if transaction.journal is None:
                for out, (shape, dtype, lod_level) in zip(outs, known):
                    out.shape, out.dtype, out.lod_level = shape, dtype, lod_level
            else:
                for out, fields in zip(outs, known):
                    set_fields(out, *fields)
            return
        self._infer(op)
        if missing:
            return
        remember(inferred, key, tuple((out.shape, out.dtype, out.lod_level) for out in outs))

    def _infer(self, op):
        ctx = InferShapeContext(op, self)
        self.infer_shape(ctx)
        if self.share_lod is not None:
            src, dsts = self.share_lod
            for dst in dsts:
                ctx.share_lod(src, dst)
        if self.infer_var_type is not None:
            self.infer_var_type(ctx)

    # --- runtime ---------------------------------------------------------------------
    def kernel_for(self, device, dtype=None):
        """The kernel for ``device`` ('cpu'/'gpu') and ``dtype`` (a VarType or None)."""
        kernels = self.kernels
        fn = kernels.get((device, dtype)) if dtype is not None else None
        if fn is None:
            fn = kernels.get((device, None))
        if fn is None and self.type in _KERNELS_FROM_ABOVE:
            _KERNELS_FROM_ABOVE.pop(self.type)()  # the module above that owns it, loaded
            return self.kernel_for(device, dtype)
        if fn is None:
            if "no_kernel" in self.traits:
                return None
            have = sorted(f"{d}/{t.name if isinstance(t, VarType) else 'any'}"
                          for d, t in kernels)
            raise Unimplemented(f"{self.type}: kernel expected for {device}"
                                f"{'/' + dtype.name if dtype is not None else ''}, but the op "
                                f"has only {have or 'none'}; add one in its family module")
        return fn


def def_op(type, inputs=(), outputs=(), attrs=None, infer_shape=None, infer_var_type=None,
           grad=None, kernel=None, kernels=None, lod_aware=False, share_lod=None, traits=(),
           doc=None, sub_block_backward=None, host_step=None, in_place=None, host_reads=None,
           kernel_place_of=None, formula=None, api=None, reuses=None, plain_kernel=None):
    """Register op ``type``; see the module docstring for the conventions."""
    if type in _OPS:
        raise InvalidArgument(f"def_op: op type '{type}' expected to be new, but it is already "
                              f"registered")
    opdef = OpDef(type, inputs, outputs, attrs, infer_shape, infer_var_type, grad, kernel,
                  kernels, lod_aware, share_lod, traits, doc, sub_block_backward, host_step,
                  in_place, host_reads, kernel_place_of, formula, api, reuses, plain_kernel)
    wrap = _HOST_STEPS_FROM_ABOVE.pop(type, None)
    if wrap is not None:
        opdef.host_step = wrap(opdef.host_step)
    _OPS[type] = opdef
    _DEFINED_IN[type] = _module_running_top_level()
    return opdef


def _module_running_top_level():
    # the innermost module whose top-level code is running: the family module, also when
    # the def_op call comes through a factory (``unary_op``) of another module
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    return None if frame is None else frame.f_globals.get("__name__")


def define_on_demand(index, define_module, api_index=None):
    """Lookups of an op type that ``index`` (op type -> module name, in definition order)
    names and that is not defined yet call ``define_module(name)`` first, which imports the
    module (its ``def_op`` calls define the op); ``api_index`` (op type -> the keys of its
    record's ``api``) lets :func:`ops_with_api` load only the ops it names. Called once, by
    the ops package."""
    global _define_module, _all_defined
    _INDEX.update(index)
    _API_INDEX.update(api_index or {})
    _define_module = define_module
    _all_defined = False


def _define(op_type):
    module = _INDEX.get(op_type)
    if module is None or _define_module is None:
        return None
    _define_module(module)
    return _OPS.get(op_type)


def find(op_type):
    """The OpDef for ``op_type``, or None."""
    opdef = _OPS.get(op_type)
    if opdef is None:
        opdef = _define(op_type)
    return opdef


def get(op_type):
    """The OpDef for ``op_type``; NotFound names the op and how to add it."""
    opdef = _OPS.get(op_type)
    if opdef is None:
        opdef = _define(op_type)
    if opdef is None:
        raise NotFound(f"op '{op_type}': a registered op type expected, but fluid_nb has no "
                       f"definition for it; define it with def_op in a family module of "
                       f"fluid_nb/ops")
    return opdef


def all_ops():
    """Every op type -> its OpDef: the index's modules all imported first; the index's ops
    in its order (whatever order they were defined in), then any others."""
    global _all_defined
    if not _all_defined and _define_module is not None:
        for module in dict.fromkeys(_INDEX.values()):
            _define_module(module)
        _all_defined = True
    ops = {op_type: _OPS[op_type] for op_type in _INDEX if op_type in _OPS}
    ops.update(_OPS)
    return ops


def ops_with_api(key):
    """Op type -> OpDef of every op whose record's ``api`` has ``key`` (``"layer"``,
    ``"act"``), in the index's order: what the layers API reads from the records, without
    loading the modules of the other ops. Read again only after more ops are defined
    (``act=`` asks on every layer call)."""
    known = _WITH_API.get(key)
    if known is not None and known[0] == len(_OPS):
        return dict(known[1])
    found = {}
    for op_type, keys in _API_INDEX.items():
        if key in keys:
            opdef = find(op_type)
            if opdef is not None and opdef.api.get(key):
                found[op_type] = opdef
    for op_type, opdef in _OPS.items():  # (ops the index does not know: defined elsewhere)
        if opdef.api.get(key) and op_type not in found:
            found[op_type] = opdef
    _WITH_API[key] = (len(_OPS), found)  # (counted after: finding loads modules)
    return dict(found)


def attach_kernel(op_type, kernel, host_step=None):
    """Give op ``op_type`` (defined without a kernel) its kernel for every device: for ops
    whose kernels drive the executor (``while``, ``conditional_block``) or read runtime
    objects (``read``), which live in a layer above the op definitions."""
    opdef = get(op_type)
    if opdef.kernels:
        raise InvalidArgument(f"attach_kernel: op '{op_type}' expected to have no kernel yet, "
                              f"but it has {sorted(d for d, _ in opdef.kernels)}")
    opdef.kernels[("cpu", None)] = opdef.kernels[("gpu", None)] = kernel
    if host_step is not None:
        opdef.host_step = host_step


def attach_host_step(op_type, wrap):
    """Give op ``op_type`` the host step ``wrap(its own host step)``, from a layer above the
    op definitions (the interpreter's C steps): now when the op is defined, else when it
    is (its family module loads on demand)."""
    opdef = _OPS.get(op_type)
    if opdef is None:
        _HOST_STEPS_FROM_ABOVE[op_type] = wrap
    else:
        opdef.host_step = wrap(opdef.host_step)


def attach_commit(op_type, commit):
    """Give the update op ``op_type`` its in-place commit (see ``OpDef.commit``)."""
    get(op_type).commit = commit


def attach_kernels_on_demand(loaders):
    """``loaders``: op type -> ``load()`` that imports the module attaching its kernel (the
    RPC runtime's ``send``, the reader's ``read``): called the first time the op's kernel
    is asked for, so the module loads when a program runs the op, not at import."""
    _KERNELS_FROM_ABOVE.update(loaders)


def attach_sub_block_backward(op_type, rule):
    """Give op ``op_type`` the rule that differentiates its sub-block (``rule(op,
    no_grad) -> grad block``): backward's, which lives above the op definitions."""
    opdef = get(op_type)
    if opdef.sub_block_backward is not None:
        raise InvalidArgument(f"attach_sub_block_backward: op '{op_type}' expected to have "
                              f"no rule yet, but it has one")
    opdef.sub_block_backward = rule


# --- grad makers ---------------------------------------------------------------------
class GradContext:
    """What a grad maker sees of the forward op: argument names and gradient names.

    ``input_grad(slot)`` names the gradients the backward pass wants for that input
    (``@EMPTY@`` where it wants none); ``output_grad(slot)`` names the incoming gradients.
    """

    def __init__(self, op, no_grad_set=frozenset()):
        self.fwd = op
        self.type = op.type
        self.attrs = op.attrs
        self.no_grad_set = no_grad_set

    def input(self, slot):
        return list(self.fwd.inputs.get(slot, ()))

    def output(self, slot):
        return list(self.fwd.outputs.get(slot, ()))

    def input_grad(self, slot):
        return [EMPTY_VAR_NAME if n in self.no_grad_set else grad_var_name(n)
                for n in self.fwd.inputs.get(slot, ())]

    def output_grad(self, slot):
        return [grad_var_name(n) for n in self.fwd.outputs.get(slot, ())]

    def has_input(self, slot):
        return bool(self.fwd.inputs.get(slot))

    def op(self, type, inputs, outputs, attrs=None):
        """A grad op spec: (type, inputs, outputs, attrs); attrs default to the forward's."""
        return GradOpSpec(type, {k: v for k, v in inputs.items() if v},
                          {k: v for k, v in outputs.items() if v},
                          dict(self.attrs) if attrs is None else attrs)


class GradOpSpec:
    __slots__ = ("type", "inputs", "outputs", "attrs")

    def __init__(self, type, inputs, outputs, attrs):
        self.type, self.inputs, self.outputs, self.attrs = type, inputs, outputs, attrs

    def __repr__(self):
        return f"GradOpSpec({self.type}, {self.inputs} -> {self.outputs})"


def grad_maker(grad_type, inputs=(), outputs=(), out_grads=("Out",), in_grads=("X",)):
    """The common grad maker: ``grad_type`` takes the named forward inputs and outputs plus
    the gradients of ``out_grads``, and produces the gradients of ``in_grads``.

    Name only what the gradient really needs: a maker that takes everything keeps every
    forward activation alive and defeats memory optimisation.
    """
    def make(g):
        ins = {slot: g.input(slot) for slot in inputs}
        ins.update({slot: g.output(slot) for slot in outputs})
        ins.update({slot + "@GRAD": g.output_grad(slot) for slot in out_grads})
        outs = {slot + "@GRAD": g.input_grad(slot) for slot in in_grads if g.has_input(slot)}
        return [g.op(grad_type, ins, outs)]
    make.grad_type = grad_type
    return make


def make_grad_ops(op, no_grad_set=frozenset()):
    """Grad op specs for forward ``op`` (empty list if the op has no gradient)."""
    opdef = get(op.type)
    if opdef.grad is None:
        return []
    return opdef.grad(GradContext(op, no_grad_set))


# --- shape-inference helpers shared by many ops ------------------------------------------
def no_gradient(grad_context):
    """The grad maker of an op whose output does not depend on its inputs' values (only on
    their shapes): no grad ops, and the gradient stops there (Paddle's EmptyGradOpMaker)."""
    return []


def same_shape(src="X", dst="Out", dtype=None):
    """infer_shape: ``dst`` has the shape (and dtype, unless given) of ``src``."""
    def infer(ctx):
        # (``is None``: BOOL is VarType 0, a dtype like any other)
        ctx.set_output(dst, ctx.input_shape(src), ctx.input_dtype(src) if dtype is None
                       else dtype)
    return infer


def grads_like(**pairs):
    """infer_shape for grad ops: ``grads_like(**{'X@GRAD': 'X'})``: each gradient output has
    the shape and dtype of the named input, when the output is asked for."""
    def infer(ctx):
        for out, src in pairs.items():
            if ctx.has_output(out):
                ctx.set_outputs(out, ctx.input_shapes(src), ctx.input_dtype(src))
    return infer
