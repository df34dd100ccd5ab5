"""Tensors made from nothing or shaped like another (``paddle.tensor.creation`` of Fluid 1.8):
constants (``full``, ``ones``, ``zeros`` and their ``_like`` forms), ranges (``arange``,
``linspace``), ``eye``, the triangles ``tril`` / ``triu`` and ``meshgrid``.

Each appends the op Fluid 1.8 appends (``fill_constant``, ``fill_any_like``, ``range``,
``linspace``, ``eye``, ``tril_triu``, ``meshgrid``), so the programs match Paddle's."""
from ....errors import InvalidArgument, InvalidAssertion, InvalidType, expected
from ....framework.program import Variable
from ....framework.type_checks import check_type, check_variable_and_dtype
from ...layer_helper import LayerHelper
from ...layers.math import meshgrid as _meshgrid
from ...layers.tensor import fill_constant
from ....tensor.dtypes import convert_dtype
from ._common import (CREATION, NUMBERS, check_dtype_arg, named_result, on_device, result,
                      same_dtype_out)

__all__ = ["fill_constant", "linspace", "ones", "ones_like", "zeros", "zeros_like", "arange",
           "eye", "full", "full_like", "triu", "tril", "meshgrid"]


def full(shape, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """A tensor of ``shape`` whose every element is ``fill_value`` (``fill_constant``).

    ``shape`` is a list or tuple of ints, a list mixing ints and int32/int64 Variables, or
    one int32/int64 Variable; ``dtype`` is bool, float16, float32 (the default), float64,
    int32 or int64. ``out``, when given, receives the result.

    Example::

        ones = paddle.full(shape=[2, 3], fill_value=1.5, dtype='float32')
    """
    dtype = "float32" if dtype is None else dtype
    check_dtype_arg("full", dtype, CREATION)
    check_type(shape, "shape", (Variable, list, tuple), "full")
    if isinstance(shape, (list, tuple)) and len(shape) == 0:
        raise InvalidAssertion(expected("full", "shape", "at least one dim", "[]"))
    helper = LayerHelper("full", name=name)
    if out is not None:
        same_dtype_out("full", out, dtype)
    out = result(helper, convert_dtype(dtype), out, name)
    out.stop_gradient = stop_gradient
    with on_device("full", device):
        out = fill_constant(shape=shape, dtype=dtype, value=fill_value, out=out)
    out.stop_gradient = stop_gradient
    return out


def ones(shape, dtype=None, out=None, device=None):
    """A tensor of ``shape`` filled with 1 (``fill_constant``, value 1.0)."""
    check_dtype_arg("ones", dtype, CREATION)
    with on_device("ones", device):
        return fill_constant(value=1.0, shape=shape, dtype=dtype, out=out)


def zeros(shape, dtype, out=None, device=None):
    """A tensor of ``shape`` filled with 0 (``fill_constant``, value 0.0)."""
    check_dtype_arg("zeros", dtype, CREATION)
    with on_device("zeros", device):
        return fill_constant(value=0.0, shape=shape, dtype=dtype, out=out)


def _fill_like(where, input, value, dtype, device, name, allowed, out=None):
    check_type(input, "input", Variable, where)
    attrs = {"value": float(value)}
    if dtype is None:
        vt = input.dtype
    else:
        vt = check_dtype_arg(where, dtype, allowed)
        attrs["dtype"] = int(vt)
    helper = LayerHelper(where, name=name)
    if out is not None:
        same_dtype_out(where, out, vt)
    out = result(helper, vt, out, name)
    with on_device(where, device):
        helper.append_op(type="fill_any_like", inputs={"X": [input]},
                         outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


def full_like(input, fill_value, out=None, dtype=None, device=None, stop_gradient=True,
              name=None):
    """A tensor shaped like ``input`` filled with ``fill_value`` (``fill_any_like``); the
    dtype is ``dtype`` (bool, float16, float32, int32 or int64) or float32."""
    dtype = "float32" if dtype is None else dtype
    out = _fill_like("full_like", input, fill_value, dtype, device, name,
                     ("bool", "float16", "float32", "int32", "int64"), out)
    out.stop_gradient = stop_gradient
    return out


def ones_like(input, dtype=None, device=None, name=None):
    """Ones shaped like ``input`` (``fill_any_like``, value 1), of ``input``'s dtype unless
    ``dtype`` is given."""
    return _fill_like("ones_like", input, 1.0, dtype, device, name, CREATION)


def zeros_like(input, dtype=None, device=None, name=None):
    """Zeros shaped like ``input`` (``fill_any_like``, value 0), of ``input``'s dtype unless
    ``dtype`` is given."""
    return _fill_like("zeros_like", input, 0.0, dtype, device, name,
                      ("bool", "float32", "float64", "int32", "int64"))


def _scalar_tensor(value, dtype):
    return value if isinstance(value, Variable) else fill_constant([1], dtype, value)


def linspace(start, stop, num, dtype, out=None, device=None, name=None):
    """``num`` evenly spaced values from ``start`` to ``stop``, both included
    (``linspace``): out[i] = start + i * (stop - start) / (num - 1); [start] when num is 1.

    ``start`` and ``stop`` are numbers or shape-[1] Variables, ``num`` an int or an int32
    Variable; ``dtype`` is float32 or float64."""
    check_dtype_arg("linspace", dtype, ("float32", "float64"))
    helper = LayerHelper("linspace", name=name)
    start, stop = _scalar_tensor(start, dtype), _scalar_tensor(stop, dtype)
    num = _scalar_tensor(num, "int32")
    if out is not None:
        same_dtype_out("linspace", out, start.dtype)
    out = result(helper, start.dtype, out, name)
    with on_device("linspace", device):
        helper.append_op(type="linspace", inputs={"Start": [start], "Stop": [stop],
                                                  "Num": [num]}, outputs={"Out": [out]})
    return out


def arange(start, end, step=1, dtype=None, name=None):
    """The values start, start + step, ... up to but excluding ``end`` (``range``):
    ceil((end - start) / step) elements; float32 unless ``dtype`` says float64, int32 or
    int64. Bounds and step are numbers or shape-[1] Variables."""
    dtype = "float32" if dtype is None else dtype
    check_dtype_arg("arange", dtype, NUMBERS)
    start, end = _scalar_tensor(start, dtype), _scalar_tensor(end, dtype)
    step = _scalar_tensor(step, dtype)
    helper = LayerHelper("range", name=name)
    out = helper.create_variable_for_type_inference(start.dtype)
    helper.append_op(type="range", inputs={"Start": [start], "End": [end], "Step": [step]},
                     outputs={"Out": [out]})
    out.stop_gradient = True
    return out


def _count(name, value):
    # bool is an int in Python, but not a row count
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidType(expected("eye", name, "a non-negative int", repr(value)))


def eye(num_rows, num_columns=None, out=None, dtype="float32", stop_gradient=True,
        name=None):
    """The [num_rows, num_columns] matrix with ones on its main diagonal and zeros
    elsewhere (``eye``); square when ``num_columns`` is None."""
    _count("num_rows", num_rows)
    if num_columns is None:
        num_columns = num_rows
    _count("num_columns", num_columns)
    vt = convert_dtype(dtype)
    helper = LayerHelper("eye", name=name)
    out = result(helper, vt, out, name)
    helper.append_op(type="eye", outputs={"Out": [out]},
                     attrs={"num_rows": num_rows, "num_columns": num_columns,
                            "dtype": int(vt)})
    out.stop_gradient = stop_gradient
    return out


def _tril_triu(layer, input, diagonal, name):
    check_variable_and_dtype(input, "x", NUMBERS, layer)
    if len(input.shape) < 2:
        raise InvalidArgument(expected(layer, "input", "a tensor of rank 2 or more",
                                       f"shape {list(input.shape)}")
                              + f" (input shape in {layer} must be at least 2-D)")
    if not isinstance(diagonal, int) or isinstance(diagonal, bool):
        raise InvalidType(expected(layer, "diagonal", "an int", repr(diagonal))
                          + f" (diagonal in {layer} must be a python Int)")
    helper = LayerHelper(layer, name=name)
    out = named_result(helper, input.dtype, name)
    helper.append_op(type="tril_triu", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"diagonal": diagonal, "lower": layer == "tril"})
    return out


def tril(input, diagonal=0, name=None):
    """The lower triangle of each matrix in ``input``'s last two dims (``tril_triu`` with
    lower=True): out[..., i, j] = input[..., i, j] when j - i <= diagonal, else 0.
    ``diagonal`` > 0 keeps diagonals above the main one, < 0 drops some below it."""
    return _tril_triu("tril", input, diagonal, name)


def triu(input, diagonal=0, name=None):
    """The upper triangle (``tril_triu`` with lower=False): out[..., i, j] =
    input[..., i, j] when j - i >= diagonal, else 0."""
    return _tril_triu("triu", input, diagonal, name)


def meshgrid(input, name=None):
    """N 1-D tensors of lengths s1..sN spread over the grid [s1, ..., sN]: returns N
    tensors, the k-th holding input[k][i_k] at index (i_1, ..., i_N) (``meshgrid``)."""
    if not isinstance(input, list):
        raise InvalidType(expected("meshgrid", "input", "a list of Variables",
                                   type(input).__name__))
    for var in input:
        check_variable_and_dtype(var, "input", ("float16", "float32", "float64", "int32",
                                                "int64"), "meshgrid")
    return _meshgrid(input, name=name)
