"""``fluid.op.Operator``: build one op and run it on a scope, outside any program.

Fluid 1.x scripts and op tests write::

    from fluid_nb.op import Operator
    scope = fluid.core.Scope()
    scope.var("Param").get_tensor().set(np.full((10, 12), 5.0, "float32"), place)
    scope.var("LearningRate").get_tensor().set(np.array([2.0], "float32"), place)
    grad = scope.var("Grad").get_selected_rows()          # a sparse gradient
    grad.set_height(10); grad.set_rows([0, 4, 7])
    grad.get_tensor().set(np.ones((3, 12), "float32"), place)
    sgd = Operator("sgd", Param="Param", Grad="Grad", ParamOut="Param",
                   LearningRate="LearningRate")
    sgd.run(scope, place)                                  # Param -= 2.0 * Grad, rows 0, 4, 7

Keyword arguments named after the op's input and output slots bind variable names (a name
or a list of names); the others are attributes. ``run(scope, place)`` runs the op on the
variables the scope holds, of whatever kind they hold (a LoDTensor, a SelectedRows, a tensor
array): it is the op in a one-op program whose variables are declared as the scope's
values are, run by the Executor, so its result is the result the same op gives inside any
program. Outputs are written into the tensors the scope already holds, as Fluid updates
them in place: a tensor or SelectedRows taken from the scope before ``run`` reads the
result after it.
"""
import numpy as np

from ..errors import InvalidArgument, InvalidType, NotFound, Unimplemented, expected
from ..exec.executor import Executor
from ..exec.scope import Scope
from ..framework.program import EMPTY_VAR_NAME, Program
from ..framework import registry
from ..tensor.dtypes import VarType, convert_dtype
from ..tensor.place import CPUPlace
from ..tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows


class StandaloneOp:
    """One op bound to variable names, run with ``run(scope, place)`` (what
    ``Operator(type, **kwargs)`` returns)."""

    def __init__(self, op_type, inputs, outputs, attrs):
        self._type = op_type
        self._inputs = inputs
        self._outputs = outputs
        self._attrs = attrs

    # --- what Fluid's core operator answers ----------------------------------------------
    def type(self):
        return self._type

    def input(self, slot):
        return list(self._inputs.get(slot, ()))

    def output(self, slot):
        return list(self._outputs.get(slot, ()))

    def inputs(self):
        return {slot: list(args) for slot, args in self._inputs.items()}

    def outputs(self):
        return {slot: list(args) for slot, args in self._outputs.items()}

    def input_vars(self):
        return [n for args in self._inputs.values() for n in args]

    def output_vars(self):
        return [n for args in self._outputs.values() for n in args]

    def no_intermediate_outputs(self):
        slots = registry.get(self._type).output_slots
        return [n for slot, args in self._outputs.items()
                if not slots[slot].intermediate for n in args]

    def attr(self, name):
        if name not in self._attrs:
            raise NotFound(expected(self._type, f"attribute '{name}'", "to exist",
                                    f"only {sorted(self._attrs)}"))
        return self._attrs[name]

    def has_attr(self, name):
        return name in self._attrs

    def support_gpu(self):
        return any(device == "gpu" for device, _ in registry.get(self._type).kernels)

    def __str__(self):
        return (f"Op({self._type}), inputs:{self.inputs()}, outputs:{self.outputs()}, "
                f"attrs:{self._attrs}")

    __repr__ = __str__

    # --- running ---------------------------------------------------------------------------
    def run(self, scope, place=None):
        """Run the op on ``scope``'s variables at ``place`` (CPU when not given)."""
        if not isinstance(scope, Scope):
            raise InvalidType(expected(f"{self._type}: run", "scope", "a Scope",
                                       type(scope).__name__))
        place = CPUPlace() if place is None else place
        program = self._program_on(scope)
        outputs = {n for n in self.output_vars() if n != EMPTY_VAR_NAME}
        before = {}
        for name in outputs:
            holder = scope.find_var(name)
            if holder is not None and holder.value is not None:
                before[name] = holder.value
        had = {name: scope.find_var(name) is not None for name in ("feed", "fetch")}
        try:
            Executor(place).run(program, scope=scope)
        finally:
            for name, present in had.items():  # the run's feed/fetch lists are not the op's
                if not present:
                    scope.erase([name])
        for name, old in before.items():
            holder = scope.find_var(name)
            holder.value = _write_into(old, holder.value)

    def _program_on(self, scope):
        """A one-op program whose variables are declared as ``scope`` holds them."""
        program = Program()
        block = program.global_block()
        for slot, names in self._inputs.items():
            for name in names:
                if name != EMPTY_VAR_NAME and scope.find_var(name) is None:
                    raise NotFound(expected(self._type, f"input '{slot}'", "a variable of "
                                            "the scope", f"'{name}', which it does not have"))
        for name in dict.fromkeys(self.input_vars() + self.output_vars()):
            if name == EMPTY_VAR_NAME:
                continue
            holder = scope.find_var(name)
            block.create_var(name=name, persistable=True,
                             **_declaration(holder.value if holder is not None else None))
        block.append_op(type=self._type, inputs=self._inputs, outputs=self._outputs,
                        attrs=self._attrs)
        return program


def _declaration(value):
    """The variable fields (type, dtype, shape, lod_level) that describe a runtime value."""
    if isinstance(value, SelectedRows):
        array = value.get_tensor().array
        fields = {"type": VarType.SELECTED_ROWS, "shape": [value.height()]}
        if array is not None:
            fields["shape"] += list(array.shape[1:])
            fields["dtype"] = convert_dtype(array.dtype)
        return fields
    if isinstance(value, LoDTensorArray):
        fields = {"type": VarType.LOD_TENSOR_ARRAY}
        first = next((t for t in value if t is not None and t.array is not None), None)
        if first is not None:
            fields.update(shape=list(first.array.shape), dtype=convert_dtype(first.array.dtype),
                          lod_level=len(first._lod))
        return fields
    if isinstance(value, LoDTensor) and value.array is not None:
        return {"shape": list(value.array.shape), "dtype": convert_dtype(value.array.dtype),
                "lod_level": len(value._lod)}
    return {}


def _write_into(old, new):
    """Keep the object the scope held (callers hold it too) with the run's result in it."""
    if new is old or new is None or type(new) is not type(old):
        return new
    if isinstance(old, SelectedRows):
        old.set_rows(new.rows())
        old.set_height(new.height())
        _write_into(old.get_tensor(), new.get_tensor())
        return old
    if isinstance(old, LoDTensor):
        old.array = new.array
        old._lod = new._lod
        return old
    if isinstance(old, LoDTensorArray):
        old[:] = new
        return old
    return new


def _argument_names(op_type, kind, slot, value):
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise InvalidType(expected(op_type, f"{kind} '{slot}'", "a variable name or a list "
                                   "of them", f"{value!r} ({type(value).__name__})"))
    return list(names)


class OperatorFactory:
    """``Operator(type, **kwargs)``: a :class:`StandaloneOp` of a registered op type."""

    def __call__(self, *args, **kwargs):
        if "type" in kwargs:
            if args:
                raise InvalidArgument(expected("Operator", "arguments", "keyword arguments "
                                               "only besides the type", f"{len(args)} more"))
            op_type = kwargs.pop("type")
        else:
            if len(args) != 1:
                raise InvalidArgument(expected("Operator", "arguments", "the op type and "
                                               "keyword arguments", f"{len(args)} positional"))
            op_type = args[0]
        spec = self.get_op_info(op_type)
        inputs, outputs, attrs = {}, {}, {}
        for key, value in kwargs.items():
            if value is None:
                continue
            if key in spec.input_slots:
                inputs[key] = _argument_names(op_type, "input", key, value)
            elif key in spec.output_slots:
                outputs[key] = _argument_names(op_type, "output", key, value)
            else:
                attrs[key] = value.tolist() if isinstance(value, np.ndarray) else value
        for kind, given, slots in (("input", inputs, spec.input_slots),
                                   ("output", outputs, spec.output_slots)):
            for slot, names in given.items():
                if len(names) > 1 and not slots[slot].duplicable:
                    raise InvalidArgument(expected(op_type, f"{kind} '{slot}'", "one variable",
                                                   f"{len(names)}: {names}"))
        attrs, _ = spec.complete_attrs(attrs)
        return StandaloneOp(op_type, inputs, outputs, attrs)

    def types(self):
        return list(registry.all_ops())

    def get_op_info(self, op_type):
        spec = registry.find(op_type)
        if spec is None:
            raise InvalidArgument(expected("Operator", "type", "a registered op type",
                                           repr(op_type)))
        return spec

    def get_op_inputs(self, op_type):
        return [(s.name, s.duplicable) for s in self.get_op_info(op_type).inputs]

    def get_op_outputs(self, op_type):
        return [(s.name, s.duplicable) for s in self.get_op_info(op_type).outputs]

    def get_op_input_names(self, op_type):
        return [name for name, _ in self.get_op_inputs(op_type)]

    def get_op_output_names(self, op_type):
        return [name for name, _ in self.get_op_outputs(op_type)]

    def get_op_attr_names(self, op_type):
        return list(self.get_op_info(op_type).attrs)


#: the factory Fluid scripts import: ``from paddle.fluid.op import Operator``
Operator = OperatorFactory()


class _RetiredOpFactory:
    """Fluid 1.x's ``RecurrentOp``/``DynamicRecurrentOp``/``CondOp`` factories: importable,
    as in Fluid 1.8, but their ops are gone (``StaticRNN``, ``DynamicRNN`` and ``IfElse``
    build programs instead), so calling one raises Unimplemented."""

    def __init__(self, op_type, instead):
        self.type = op_type
        self._instead = instead

    def __call__(self, *args, **kwargs):
        raise Unimplemented(expected(f"op '{self.type}'", "a registered op type",
                                     f"one Fluid 1.8 has (use {self._instead})",
                                     f"'{self.type}', which Fluid 1.8 no longer defines"))


RecurrentOp = _RetiredOpFactory("recurrent", "fluid.layers.StaticRNN")
DynamicRecurrentOp = _RetiredOpFactory("dynamic_recurrent", "fluid.layers.DynamicRNN")
CondOp = _RetiredOpFactory("cond", "fluid.layers.IfElse or fluid.layers.cond")
