"""Layers that make tensors, as Fluid 1.8 builds them: sequences (``range``, ``arange``,
``linspace``), filled tensors (``full``, ``full_like``), matrices (``eye``, ``diag``,
``tril``, ``triu``) and random tensors (``randint``, ``randn``, ``randperm`` and the
``*_batch_size_like`` draws whose batch dim follows another tensor's).

Example::

    steps = fluid.layers.arange(0, 10, 2, dtype='int64')          # [0, 2, 4, 6, 8]
    mask = fluid.layers.tril(fluid.layers.full([4, 4], 1.0))       # lower triangle of ones
"""
import numpy as np

from ...errors import InvalidArgument, InvalidAssertion, InvalidType, expected
from ...tensor.dtypes import convert_dtype, dtype_name
from ...framework import program as _fw
from ...framework.program import Variable
from ...framework.transaction import append_one_op, lean, take_back_appended
from ...tensor.dtypes import VarType
from ..layer_helper import LayerHelper
from .arg_checks import (INT, NAME, NON_NEGATIVE_INT, NUMBER, Refused, boolean, check,
                         checks, dims, dtype, int_in, ints, one_of, optional, or_variable,
                         real_in, variable)
from .tensor import assign, cast, fill_constant

__all__ = ["range", "arange", "linspace", "full", "full_like", "eye", "diag", "tril", "triu",
           "randint", "randn", "randperm", "uniform_random_batch_size_like",
           "gaussian_random_batch_size_like"]

_NUMERIC = ("float32", "float64", "int32", "int64")


def _dtype_among(where, name, value, allowed):
    """Fluid's check_dtype: ``value`` names one of ``allowed`` (InvalidType otherwise)."""
    check(where, name, value, dtype)
    got = dtype_name(convert_dtype(value))
    if got not in allowed:
        raise InvalidType(expected(where, name, "one of " + ", ".join(allowed), got))
    return convert_dtype(value)


def _variable_dtype(where, name, var, allowed):
    got = dtype_name(var.dtype)
    if got not in allowed:
        raise InvalidType(expected(where, f"{name}'s dtype", "one of " + ", ".join(allowed),
                                   got))


def _sequence(op_type, bounds):
    """``op_type`` (range, linspace) on its bounds, ``(slot, value, vt, cast)`` each: a
    Variable as it is (cast to ``vt`` when ``cast`` and its type differs), a number as a
    ``fill_constant`` of shape [1] and type ``vt``; Out (no gradient) of the first bound's
    type. Each tensor and the op append all or nothing (``append_one_op``), without a
    transaction's snapshot of both programs: a refused op takes back the tensors made for
    it, newest first."""
    program = _fw._main_program
    block = program.blocks[program.current_block_idx]
    slots, appended = {}, []
    try:
        for slot, value, vt, cast_to in bounds:
            if isinstance(value, Variable) and (value.dtype == vt or not cast_to):
                slots[slot] = value
                continue
            made = cast(value, vt) if isinstance(value, Variable) else fill_constant([1], vt,
                                                                                    value)
            appended.append((block.ops[-1], made.name,
                             "cast" if isinstance(value, Variable) else "fill_constant"))
            slots[slot] = made
        out = append_one_op(block, op_type, {slot: (var.name,) for slot, var in slots.items()},
                            None, slots[bounds[0][0]].dtype, op_type)
    except BaseException:
        take_back_appended(block, appended)
        raise
    out.stop_gradient = True
    return out


_BOUND = or_variable(NUMBER)


@lean  # (its tensors and op each through append_one_op, taken back together)
@checks(start=_BOUND, end=_BOUND, step=_BOUND)
def range(start, end, step, dtype):
    """The 1-D tensor ``start, start + step, ...`` up to but excluding ``end``
    (``range`` op; Out[i] = start + i * step for i < ceil(|end - start| / |step|)).
    Numbers become one-element ``fill_constant`` tensors of ``dtype``, Variables of another
    type are cast to it."""
    vt = _dtype_among("range", "dtype", dtype, _NUMERIC)
    return _sequence("range", (("Start", start, vt, True), ("End", end, vt, True),
                               ("Step", step, vt, True)))


@lean  # (the same)
@checks(start=_BOUND, end=_BOUND, step=_BOUND, name=NAME)
def arange(start, end, step=1, dtype=None, name=None):
    """``range`` with a default step of 1 and dtype float32 (``range`` op): the values of
    [start, end) spaced by ``step``."""
    vt = _dtype_among("arange", "dtype", "float32" if dtype is None else dtype, _NUMERIC)
    return _sequence("range", (("Start", start, vt, True), ("End", end, vt, True),
                               ("Step", step, vt, True)))


@lean  # (the same)
@checks(start=_BOUND, stop=_BOUND, num=or_variable(int_in(1, want="an int >= 1")))
def linspace(start, stop, num, dtype):
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive (``linspace`` op:
    Out[i] = start + i * (stop - start) / (num - 1)); [start] when num is 1."""
    vt = _dtype_among("linspace", "dtype", dtype, ("float32", "float64"))
    for name, value in (("start", start), ("stop", stop)):
        if isinstance(value, Variable):
            _variable_dtype("linspace", name, value, ("float32", "float64"))
    if isinstance(num, Variable):
        _variable_dtype("linspace", "num", num, ("int32",))
    return _sequence("linspace", (("Start", start, vt, False), ("Stop", stop, vt, False),
                                  ("Num", num, VarType.INT32, False)))


_FILL_DTYPES = ("bool", "float16", "float32", "float64", "int32", "int64")


@checks(shape=dims(0), fill_value=or_variable(real_in(finite=False)), out=optional(variable),
        stop_gradient=boolean, name=NAME)
def full(shape, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """A tensor of ``shape`` (ints, Variables, or a Variable) filled with ``fill_value``
    (``fill_constant``; dtype float32 unless given)."""
    vt = _dtype_among("full", "dtype", "float32" if dtype is None else dtype, _FILL_DTYPES)
    if out is None:
        out = LayerHelper("full").create_variable_for_type_inference(dtype=vt)
    out = fill_constant(shape=shape, dtype=vt, value=fill_value, out=out)
    out.stop_gradient = stop_gradient
    return out


@checks(input=variable, fill_value=NUMBER, out=optional(variable), stop_gradient=boolean,
        name=NAME)
def full_like(input, fill_value, out=None, dtype=None, device=None, stop_gradient=True,
              name=None):
    """A tensor shaped like ``input`` filled with ``fill_value`` (``fill_any_like``; of
    ``input``'s type unless ``dtype`` is given)."""
    vt = input.dtype if dtype is None else _dtype_among("full_like", "dtype", dtype,
                                                        _FILL_DTYPES)
    helper = LayerHelper("full_like")
    if out is None:
        out = helper.create_variable_for_type_inference(dtype=vt)
    helper.append_op(type="fill_any_like", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"value": float(fill_value), "dtype": int(vt)})
    out.stop_gradient = stop_gradient
    return out


def _batch_dims(value):
    if not isinstance(value, list) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0
            for d in value):
        raise Refused("None or a list of positive ints", wrong_type=not isinstance(value, list))


@checks(num_rows=NON_NEGATIVE_INT, num_columns=optional(NON_NEGATIVE_INT),
        batch_shape=optional(_batch_dims), dtype=dtype)
def eye(num_rows, num_columns=None, batch_shape=None, dtype="float32"):
    """The identity matrix of ``num_rows`` x ``num_columns`` (square when None), stacked
    into ``batch_shape + [rows, columns]`` when a batch shape is given (``eye``, then
    ``stack`` per batch dim)."""
    helper = LayerHelper("eye")
    vt = convert_dtype(dtype)
    out = helper.create_variable_for_type_inference(dtype=vt)
    helper.append_op(type="eye", outputs={"Out": [out]},
                     attrs={"num_rows": num_rows,
                            "num_columns": num_rows if num_columns is None else num_columns,
                            "dtype": int(vt)})
    out.stop_gradient = True
    if batch_shape is not None:
        from .manip import stack
        for count in reversed(batch_shape):
            out = stack([out] * count, axis=0)
    return out


def diag(diagonal):
    """The square matrix with ``diagonal`` (a 1-D Variable or NumPy array) on its diagonal
    (``diag``)."""
    if not isinstance(diagonal, (Variable, np.ndarray)):
        raise InvalidType(expected("diag", "diagonal", "a Variable or numpy.ndarray",
                                   type(diagonal).__name__))
    allowed = ("float32", "float64", "int32", "int64")
    if isinstance(diagonal, np.ndarray):
        if diagonal.dtype.name not in allowed:
            raise InvalidType(expected("diag", "diagonal's dtype", "one of " +
                                       ", ".join(allowed), diagonal.dtype.name))
        diagonal = assign(diagonal)
    else:
        _variable_dtype("diag", "diagonal", diagonal, allowed)
    helper = LayerHelper("diag")
    out = helper.create_variable_for_type_inference(dtype=diagonal.dtype)
    helper.append_op(type="diag", inputs={"Diagonal": [diagonal]}, outputs={"Out": [out]})
    out.stop_gradient = True
    return out


def _tril_triu(layer, input, diagonal, name, lower):
    _variable_dtype(layer, "input", input, _NUMERIC)
    if len(input.shape) < 2:
        raise InvalidArgument(expected(layer, "input", "a tensor of rank 2 or more",
                                       f"shape {list(input.shape)}"))
    helper = LayerHelper(layer, name=name)
    if name is None:
        out = helper.create_variable_for_type_inference(dtype=input.dtype)
    else:
        out = helper.create_variable(name=name, dtype=input.dtype, persistable=False)
    helper.append_op(type="tril_triu", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"diagonal": diagonal, "lower": lower})
    return out


@checks(input=variable, diagonal=INT, name=NAME)
def tril(input, diagonal=0, name=None):
    """The lower triangle of each matrix in ``input``'s last two dims, on and below
    diagonal ``diagonal`` (positive: above the main one), zeros elsewhere (``tril_triu``
    with lower=True)."""
    return _tril_triu("tril", input, diagonal, name, True)


@checks(input=variable, diagonal=INT, name=NAME)
def triu(input, diagonal=0, name=None):
    """The upper triangle, on and above diagonal ``diagonal`` (``tril_triu`` with
    lower=False)."""
    return _tril_triu("triu", input, diagonal, name, False)


def _random_shape(shape, inputs, attrs):
    """Fluid's shape rules for the random layers: an attribute when every dim is an int,
    else ShapeTensor / ShapeTensorList (int64 tensors for randint's dims)."""
    if isinstance(shape, Variable):
        shape.stop_gradient = True
        inputs["ShapeTensor"] = [shape]
        return
    if any(isinstance(d, Variable) for d in shape):
        tensors = []
        for d in shape:
            if isinstance(d, Variable):
                d.stop_gradient = True
                tensors.append(d)
            else:
                tensors.append(fill_constant([1], "int64", d, force_cpu=True))
        inputs["ShapeTensorList"] = tensors
        return
    attrs["shape"] = [int(d) for d in shape]


@checks(low=INT, high=optional(INT), shape=optional(dims(1)), out=optional(variable),
        stop_gradient=boolean, seed=INT, name=NAME)
def randint(low, high=None, shape=None, out=None, dtype=None, device=None,
            stop_gradient=False, seed=0, name=None):
    """Uniform random integers in [low, high) (``randint``); with only ``low`` given, in
    [0, low). ``shape`` defaults to [1]; dtype int64 unless given."""
    vt = _dtype_among("randint", "dtype", "int64" if dtype is None else dtype,
                      ("int32", "int64"))
    if high is None:
        low, high = 0, low
    if low >= high:
        raise InvalidArgument(expected("randint", "low", f"less than high ({high})", low))
    inputs, attrs = {}, {"low": low, "high": high, "seed": seed}
    _random_shape([1] if shape is None else shape, inputs, attrs)
    helper = LayerHelper("randint", name=name)
    if out is None:
        out = helper.create_variable_for_type_inference(dtype=vt) if name is None else \
            helper.create_variable(name=name, dtype=vt, persistable=False)
    elif out.dtype != vt:
        raise InvalidType(expected("randint", "dtype", f"{dtype_name(out.dtype)} (out's)",
                                   dtype_name(vt)))
    attrs["dtype"] = int(out.dtype)
    out.stop_gradient = stop_gradient
    helper.append_op(type="randint", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@checks(shape=ints(None, 1, "dims"), out=optional(variable), stop_gradient=boolean, name=NAME)
def randn(shape, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """Standard normal draws of ``shape`` (``gaussian_random`` with mean 0, std 1; dtype
    float32 unless given). As in Fluid 1.8 the op's seed is drawn from NumPy's generator
    when the layer is called."""
    vt = _dtype_among("randn", "dtype", "float32" if dtype is None else dtype,
                      ("float32", "float64"))
    if not shape:
        raise InvalidAssertion(expected("randn", "shape", "at least one dim", list(shape)))
    helper = LayerHelper("randn")
    if out is None:
        out = helper.create_variable_for_type_inference(dtype=vt)
    else:
        _variable_dtype("randn", "out", out, (dtype_name(vt),))
    out.stop_gradient = stop_gradient
    helper.append_op(type="gaussian_random", outputs={"Out": [out]},
                     attrs={"shape": [int(d) for d in shape], "mean": 0.0, "std": 1.0,
                            "seed": int(np.random.randint(0, 100)), "dtype": int(vt),
                            "use_mkldnn": False})
    return out


@checks(n=int_in(1, want="an int >= 1"), out=optional(variable),
        device=optional(one_of("cpu", "gpu")), stop_gradient=boolean, seed=INT)
def randperm(n, out=None, dtype="int64", device=None, stop_gradient=True, seed=0):
    """A random permutation of 0 .. n-1 (``randperm``; int64 unless ``dtype`` says
    int32)."""
    vt = _dtype_among("randperm", "dtype", dtype, ("int64", "int32"))
    helper = LayerHelper("randperm")
    if out is None:
        out = helper.create_variable_for_type_inference(dtype=vt)
    else:
        _variable_dtype("randperm", "out", out, (dtype_name(vt),))
    if stop_gradient:
        out.stop_gradient = True
    helper.append_op(type="randperm", outputs={"Out": [out]},
                     attrs={"n": n, "dtype": int(out.dtype), "seed": seed})
    return out


_BATCH_SHAPE = ints(None, -1, "dims")


@checks(input=variable, shape=_BATCH_SHAPE, input_dim_idx=NON_NEGATIVE_INT,
        output_dim_idx=NON_NEGATIVE_INT, min=NUMBER, max=NUMBER, seed=INT)
def uniform_random_batch_size_like(input, shape, dtype="float32", input_dim_idx=0,
                                   output_dim_idx=0, min=-1.0, max=1.0, seed=0):
    """U[min, max) draws of ``shape`` whose dim ``output_dim_idx`` is, at run time,
    ``input``'s dim ``input_dim_idx`` (``uniform_random_batch_size_like``)."""
    _variable_dtype("uniform_random_batch_size_like", "input", input, ("float32", "float64"))
    vt = _dtype_among("uniform_random_batch_size_like", "dtype", dtype,
                      ("float32", "float64"))
    helper = LayerHelper("uniform_random_batch_size_like")
    out = helper.create_variable_for_type_inference(vt)
    helper.append_op(type="uniform_random_batch_size_like", inputs={"Input": [input]},
                     outputs={"Out": [out]},
                     attrs={"shape": [int(d) for d in shape], "input_dim_idx": input_dim_idx,
                            "output_dim_idx": output_dim_idx, "min": float(min),
                            "max": float(max), "seed": seed, "dtype": int(vt)})
    return out


@checks(input=variable, shape=_BATCH_SHAPE, input_dim_idx=NON_NEGATIVE_INT,
        output_dim_idx=NON_NEGATIVE_INT, mean=NUMBER, std=NUMBER, seed=INT)
def gaussian_random_batch_size_like(input, shape, input_dim_idx=0, output_dim_idx=0,
                                    mean=0.0, std=1.0, seed=0, dtype="float32"):
    """N(mean, std^2) draws of ``shape`` whose dim ``output_dim_idx`` is, at run time,
    ``input``'s dim ``input_dim_idx`` (``gaussian_random_batch_size_like``)."""
    vt = _dtype_among("gaussian_random_batch_size_like", "dtype", dtype,
                      ("float16", "float32", "float64"))
    helper = LayerHelper("gaussian_random_batch_size_like")
    out = helper.create_variable_for_type_inference(vt)
    helper.append_op(type="gaussian_random_batch_size_like", inputs={"Input": [input]},
                     outputs={"Out": [out]},
                     attrs={"shape": [int(d) for d in shape], "input_dim_idx": input_dim_idx,
                            "output_dim_idx": output_dim_idx, "mean": float(mean),
                            "std": float(std), "seed": seed, "dtype": int(vt)})
    return out
