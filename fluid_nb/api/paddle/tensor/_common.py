"""What the ``paddle.tensor`` functions share: where their result goes (``out=`` or a new
variable named after ``name=``), the ``device=`` argument, and the dtype lists they check."""
import contextlib
import warnings

from ....errors import InvalidArgument, InvalidType, expected
from ....framework.annotations import device_guard
from ....framework.type_checks import check_dtype, check_type
from ....framework.program import Variable
from ....tensor.dtypes import convert_dtype, dtype_name

FLOATS = ("float16", "float32", "float64")
FLOAT32_64 = ("float32", "float64")
NUMBERS = ("float32", "float64", "int32", "int64")
CREATION = ("bool", "float16", "float32", "float64", "int32", "int64")


def result(helper, dtype, out=None, name=None):
    """``out`` when the caller gave one (checked to be a Variable), else a new temporary
    ``<name>.tmp_<n>`` (``name`` is the helper's: the caller's ``name=`` or the layer's)."""
    if out is not None:
        check_type(out, "out", Variable, helper.layer_type)
        if name:
            warnings.warn(f"{helper.layer_type}: both out and name were given; the result "
                          f"is stored in out ({out.name})", UserWarning, stacklevel=3)
        return out
    return helper.create_variable_for_type_inference(dtype)


def named_result(helper, dtype, name=None):
    """A new variable called exactly ``name`` (Fluid's layers that take ``name`` as the
    output's own name), or a temporary when ``name`` is None."""
    if name is None:
        return helper.create_variable_for_type_inference(dtype)
    return helper.create_variable(name=name, dtype=dtype, persistable=False)


def check_dtype_arg(where, dtype, allowed):
    """The ``dtype=`` argument names one of ``allowed``; returns its VarType. A name that is
    no dtype at all, or one outside the list, is an InvalidType (a TypeError, and a
    ValueError as Fluid raises for unknown names)."""
    try:
        vt = convert_dtype(dtype)
        shown = dtype_name(vt)
    except Exception:  # noqa: BLE001 - not a dtype at all: refused below by its text
        vt, shown = None, repr(dtype)
    if isinstance(dtype, str) and dtype != shown:
        # Fluid 1.8 takes dtype names exactly ('float32'), not NumPy's aliases ('float')
        vt, shown = None, repr(dtype)
    if vt is None or shown not in allowed:
        raise InvalidType(expected(where, "dtype", "one of " + ", ".join(allowed), shown))
    return vt


def same_dtype_out(where, out, dtype):
    """``out`` must hold the dtype the function computes."""
    check_type(out, "out", Variable, where)
    check_dtype(out.dtype, "out", (dtype_name(convert_dtype(dtype)),), where)


def on_device(where, device):
    """The ``device=`` argument: None (wherever the executor runs), 'cpu' or 'gpu'."""
    if device is None:
        return contextlib.nullcontext()
    if device not in ("cpu", "gpu"):
        raise InvalidArgument(expected(where, "device", "None, 'cpu' or 'gpu'", repr(device)))
    return device_guard(device)


def dims_list(dim):
    """``dim`` as Fluid's reduce ops take it: (attribute list, reduce_all)."""
    if dim is not None and not isinstance(dim, (list, tuple)):
        dim = [dim]
    if dim is None or len(dim) == 0:
        return [0], True
    return [int(d) for d in dim], False
