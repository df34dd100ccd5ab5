"""Fluid's argument type and dtype checks, one place for every layer and API function.

Fluid 1.8 checks a layer's inputs when the layer is called (``check_variable_and_dtype``,
``check_type``, ``check_dtype`` in ``fluid.data_feeder``) and raises ``TypeError`` for a
value of the wrong kind or dtype; scripts and tests catch exactly that. Here the error is
:class:`~fluid_nb.errors.InvalidType` (a ``TypeError`` and an ``InvalidArgument``) with the
project's one message shape: ``relu: x's dtype expected one of float16, float32, float64, but
received int32``.
"""
from ..errors import InvalidType, expected
from ..tensor.dtypes import convert_dtype, dtype_name
from .program import Variable

__all__ = ["check_type", "check_dtype", "check_variable_and_dtype", "require_variable"]

FLOATS = ("float16", "float32", "float64")


def _type_names(expected_type):
    kinds = expected_type if isinstance(expected_type, tuple) else (expected_type,)
    return " or ".join(getattr(kind, "__name__", str(kind)) for kind in kinds)


def _dtype_text(dtype):
    try:
        return dtype_name(convert_dtype(dtype))
    except Exception:  # noqa: BLE001 - a dtype we cannot even name is shown as given
        return str(dtype)


def require_variable(where, name, value):
    """``value`` must be a Variable: InvalidType (a TypeError) naming ``where`` otherwise."""
    if not isinstance(value, Variable):
        raise InvalidType(expected(where, name, "Variable", type(value).__name__))


def check_type(input, input_name, expected_type, op_name, extra_message=""):
    """``isinstance(input, expected_type)`` or InvalidType, as Fluid 1.8's check_type."""
    if not isinstance(input, expected_type):
        got = type(input).__name__ + (f" ({extra_message})" if extra_message else "")
        raise InvalidType(expected(op_name, input_name, _type_names(expected_type), got))


def check_dtype(input_dtype, input_name, expected_dtype, op_name, extra_message=""):
    """The dtype's name must be one of ``expected_dtype`` (names like ``'float32'``)."""
    allowed = (expected_dtype,) if isinstance(expected_dtype, str) else tuple(expected_dtype)
    if input_dtype.__class__ is str and input_dtype in allowed:
        return  # (an allowed name as given: the usual call)
    got = _dtype_text(input_dtype)
    if got not in allowed:
        shown = got + (f" ({extra_message})" if extra_message else "")
        raise InvalidType(expected(op_name, f"{input_name}'s dtype",
                                   "one of " + ", ".join(allowed), shown))


def check_variable_and_dtype(input, input_name, expected_dtype, op_name, extra_message=""):
    """A Variable whose dtype is one of ``expected_dtype``; InvalidType otherwise."""
    check_type(input, input_name, Variable, op_name, extra_message)
    check_dtype(input.dtype, input_name, expected_dtype, op_name, extra_message)
