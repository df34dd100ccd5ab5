"""Counters and comparisons of Fluid's control_flow module: increment, less_than, equal,
..., and the logical ops. The comparison outputs are bool and carry no gradient."""
from ..errors import InvalidArgument
from ..framework.dtypes import VarType
from ..framework.program import Variable
from ..layer_helper import LayerHelper

__all__ = ["increment", "less_than", "less_equal", "greater_than", "greater_equal", "equal",
           "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not"]


def increment(x, value=1.0, in_place=True):
    """``x + value`` for a one-element ``x``, written back into ``x`` when in_place."""
    if not isinstance(x, Variable):
        raise InvalidArgument(f"increment: x expected Variable, but received "
                              f"{type(x).__name__}")
    helper = LayerHelper("increment")
    out = x if in_place else helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="increment", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"step": float(value)})
    return out


def _compare(op_type, x, y, cond, force_cpu=None):
    for name, value in (("x", x), ("y", y)):
        if not isinstance(value, Variable):
            raise InvalidArgument(f"{op_type}: {name} expected Variable, but received "
                                  f"{type(value).__name__}")
    helper = LayerHelper(op_type)
    if cond is None:
        cond = helper.create_variable_for_type_inference(dtype=VarType.BOOL)
        cond.stop_gradient = True
    attrs = {}
    if force_cpu is not None:
        attrs["force_cpu"] = force_cpu
    helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [cond]},
                     attrs=attrs)
    return cond


def less_than(x, y, force_cpu=None, cond=None):
    return _compare("less_than", x, y, cond, force_cpu)


def less_equal(x, y, cond=None):
    return _compare("less_equal", x, y, cond)


def greater_than(x, y, cond=None):
    return _compare("greater_than", x, y, cond)


def greater_equal(x, y, cond=None):
    return _compare("greater_equal", x, y, cond)


def equal(x, y, cond=None):
    return _compare("equal", x, y, cond)


def not_equal(x, y, cond=None):
    return _compare("not_equal", x, y, cond)


def _logical(op_type, x, y=None, out=None, name=None):
    helper = LayerHelper(op_type, name=name)
    if out is None:
        out = helper.create_variable_for_type_inference(dtype=x.dtype)
    inputs = {"X": [x]} if y is None else {"X": [x], "Y": [y]}
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]})
    return out


def logical_and(x, y, out=None, name=None):
    return _logical("logical_and", x, y, out, name)


def logical_or(x, y, out=None, name=None):
    return _logical("logical_or", x, y, out, name)


def logical_xor(x, y, out=None, name=None):
    return _logical("logical_xor", x, y, out, name)


def logical_not(x, out=None, name=None):
    return _logical("logical_not", x, None, out, name)
