"""One-op layers made from the op type alone: activations (``sigmoid(x)`` appends a
``sigmoid`` op) and the elementwise binary ops with Paddle's ``axis`` broadcast.

As in Fluid, ``name=`` names the output variable itself for these layers.
"""
from ...errors import InvalidArgument, InvalidType, Unimplemented, expected
from ...tensor.dtypes import convert_dtype, dtype_name
from ...framework import program as _fw
from ...framework.callstack import _op_record
from ...framework.program import Variable
from ...framework.transaction import append_after, append_one_op, atomic, lean, replayed
from ..layer_helper import LayerHelper
from ...ops import registry
from .arg_checks import INT, NAME, activation, boolean, check, checks, optional, variable

#: the activation layers: each op whose record says it has one (``api["layer"]``), in the
#: order the records are defined
_ACTIVATIONS = list(registry.ops_with_api("layer"))

_ELEMENTWISE = ["elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
                "elementwise_max", "elementwise_min", "elementwise_pow", "elementwise_mod",
                "elementwise_floordiv"]

#: Fluid 1.8's dtypes for each layer: an activation's from its record (float types unless
#: it says otherwise: exp, abs and square take integers too), the binary ops' all alike
_INT_OR_FLOAT = ("int32", "int64", "float16", "float32", "float64")
_FLOAT = ("float16", "float32", "float64")
_DTYPES = {op: registry.get(op).api["dtypes"] for op in _ACTIVATIONS
           if "dtypes" in registry.get(op).api}
_DTYPES.update((op, _INT_OR_FLOAT) for op in _ELEMENTWISE)  # x and y alike

#: activation layers whose attributes follow x as positional arguments (Fluid 1.8's order),
#: with the attribute each argument sets: from the records
_PARAMETERS = {op: registry.get(op).api["arguments"] for op in _ACTIVATIONS
               if "arguments" in registry.get(op).api}

__all__ = list(_ACTIVATIONS) + list(_ELEMENTWISE) + ["cumsum"]


def _output(helper, dtype, name):
    if name is None:
        return helper.create_variable_for_type_inference(dtype=dtype)
    return helper.create_variable(name=name, dtype=dtype, persistable=False)


_ALLOWED_TYPES = {}  # op type -> the VarTypes its layer takes (worked out as the layer is made)


def _allowed_types(op_type):
    allowed = _ALLOWED_TYPES.get(op_type)
    if allowed is None:
        allowed = _ALLOWED_TYPES[op_type] = frozenset(
            convert_dtype(name) for name in _DTYPES.get(op_type, _FLOAT))
    return allowed


def _check_dtype(op_type, x, arg="x"):
    if x.dtype not in _allowed_types(op_type):  # Fluid's check_variable_and_dtype: a TypeError
        names = _DTYPES.get(op_type, _FLOAT)
        raise InvalidType(expected(op_type, f"{arg}'s dtype", "one of " + ", ".join(names),
                                   dtype_name(x.dtype)))


def _activation_layer(op_type):
    @lean  # all or nothing by itself: one op, or a transaction where it does more
    def layer(x, name=None, **attrs):
        if not isinstance(x, Variable):
            raise InvalidType(f"{op_type}: x expected Variable, but received "
                              f"{type(x).__name__}")
        check(op_type, "name", name, NAME)
        _check_dtype(op_type, x)
        if registry.find(op_type) is None:  # refused here, not when the program runs
            raise Unimplemented(expected(op_type, "an op definition", f"one for '{op_type}'",
                                         "none: fluid_nb does not define this op yet"))
        if name is None:
            return append_one_op(_fw._main_program.current_block(), op_type,
                                 {"X": (x.name,)}, attrs, x.dtype, op_type)
        with atomic():
            out = _output(LayerHelper(op_type, name=name), x.dtype, name)
            out.block.append_op(type=op_type, inputs={"X": x}, outputs={"Out": out},
                                attrs=attrs)
        return out
    layer.__name__ = layer.__qualname__ = op_type
    layer.__doc__ = f"Appends a ``{op_type}`` op: Out = {op_type}(X), elementwise."
    # its common call (x alone, no name) in C, the function for the rest
    return _op_record.OneOpCall(layer, _op_record.ACTIVATION, op_type, globals(),
                                allowed=_allowed_types(op_type))


def _elementwise_layer(op_type):
    allowed = _allowed_types(op_type)

    @lean  # all or nothing by itself: one op, or a transaction where it does more
    def layer(x, y, axis=-1, act=None, name=None):
        if not isinstance(x, Variable) or not isinstance(y, Variable):
            for arg, value in (("x", x), ("y", y)):
                if not isinstance(value, Variable):
                    raise InvalidType(f"{op_type}: {arg} expected Variable, but received "
                                      f"{type(value).__name__}")
        if x.dtype not in allowed or y.dtype not in allowed:  # (the error names which)
            _check_dtype(op_type, x)
            _check_dtype(op_type, y, "y")
        # the defaults (a plain int axis, no act, no name) pass their rules by construction
        if axis.__class__ is not int:
            check(op_type, "axis", axis, INT)
        # the default axis left to the op's definition: completing defaults is its fast path
        attrs = None if axis == -1 else {"axis": axis}
        if act is None and name is None:  # the common call: one op, no helper object
            program = _fw._main_program  # (its current_block(), inline)
            return append_one_op(program.blocks[program.current_block_idx], op_type,
                                 {"X": (x.name,), "Y": (y.name,)}, attrs, x.dtype, op_type)
        if act is not None:
            check(op_type, "act", act, activation)
            if name is None and act.__class__ is str:  # (the op, then its activation)
                block = _fw._main_program.current_block()
                out = append_one_op(block, op_type, {"X": (x.name,), "Y": (y.name,)}, attrs,
                                    x.dtype, op_type)
                return append_after(block, [(block.ops[-1], out.name, op_type)], act,
                                    {"X": (out.name,)}, out.dtype, {}, op_type)
        if name is not None:
            check(op_type, "name", name, NAME)
        with atomic():
            helper = LayerHelper(op_type, act=act, name=name)
            out = _output(helper, x.dtype, name)
            out.block.append_op(type=op_type, inputs={"X": x, "Y": y}, outputs={"Out": out},
                                attrs=attrs)
            return out if act is None else helper.append_activation(out)
    layer.__name__ = layer.__qualname__ = op_type
    layer.__doc__ = (f"Appends ``{op_type}`` (Y broadcast onto X from dim ``axis``; -1 "
                     f"aligns the trailing dims), then ``act``.")
    # its common call (x, y, an int axis, no act, no name) in C, the function for the rest
    return _op_record.OneOpCall(layer, _op_record.ELEMENTWISE, op_type, globals(),
                                allowed=allowed)


for _op in _ACTIVATIONS:
    globals()[_op] = _activation_layer(_op)
for _op in _ELEMENTWISE:
    globals()[_op] = _elementwise_layer(_op)
del _op


def _parameterised(op_type, parameters):
    """An activation layer taking its attributes positionally after ``x``, as Fluid 1.8's
    ``elu(x, alpha=1.0, name=None)``; an argument left None keeps the op's default."""
    plain = _activation_layer(op_type)

    @lean  # checks, then the plain layer, which keeps itself all or nothing
    def layer(x, *args, **kwargs):
        names = [p for p, _, _ in parameters] + ["name"]
        if len(args) > len(names):
            raise InvalidArgument(f"{op_type}: arguments expected at most "
                                  f"{len(names) + 1}, but received {len(args) + 1}")
        given = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names or key in given:
                raise InvalidArgument(f"{op_type}: arguments expected x, "
                                      f"{', '.join(names)}, but received {key}=")
            given[key] = value
        attrs = {}
        for param, attr, default in parameters:
            value = given.get(param, default)
            if value is not None:
                attrs[attr] = value
        return plain(x, name=given.get("name"), **attrs)
    signature = ", ".join(f"{p}={d!r}" for p, _, d in parameters)
    layer.__name__ = op_type
    layer.__doc__ = (f"Appends a ``{op_type}`` op: {op_type}(x, {signature}, name=None), "
                     f"elementwise.")
    return layer


for _op, _params in _PARAMETERS.items():
    globals()[_op] = _parameterised(_op, _params)
del _op, _params


@lean  # (one op through append_one_op)
@checks(x=variable, axis=optional(INT), exclusive=optional(boolean),
        reverse=optional(boolean))
def cumsum(x, axis=None, exclusive=None, reverse=None):
    """The running sum of ``x`` along ``axis`` (the last when None) (``cumsum``):
    Out[i] = x[0] + ... + x[i]; ``exclusive`` leaves x[i] out (Out[0] = 0), ``reverse``
    sums from the end."""
    attrs = {key: value for key, value in
             (("axis", axis), ("exclusive", exclusive), ("reverse", reverse)) if value is not None}
    program = _fw._main_program
    return append_one_op(program.blocks[program.current_block_idx], "cumsum",
                         {"X": (x.name,)}, attrs, x.dtype, "cumsum")


cumsum = replayed(cumsum, globals())
