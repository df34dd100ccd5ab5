"""Tensor creation layers: fill_constant, zeros/ones(_like), assign, cast, concat, sums,
argmax/argmin, random tensors, and explicit variables (create_tensor, create_parameter,
create_global_var)."""
import numpy as np

from ...errors import InvalidArgument, InvalidAssertion, InvalidType, expected
from ...tensor.dtypes import VarType, convert_dtype, dtype_name
from ...framework import program as _fw
from ...framework.type_checks import check_dtype, require_variable
from ...framework.program import Variable
from ...framework.transaction import (append_fresh, append_one_op, atomic, created, lean,
                                      replayed)
from ..initializer import ConstantInitializer, assign_value_op, force_init_on_cpu
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr
from .arg_checks import (INT, NAME, NON_NEGATIVE_INT, NUMBER, boolean, checks, dims, dtype,
                         int_typed, ints, optional, or_variable, plain_ints, real_in, variable,
                         variables)

__all__ = ["create_tensor", "create_parameter", "create_global_var", "cast", "concat", "sums",
           "assign", "fill_constant", "fill_constant_batch_size_like", "zeros", "ones", "zeros_like", "ones_like", "argmax",
           "argmin", "uniform_random", "gaussian_random"]


_check_variable = require_variable


@checks(dtype=dtype, name=NAME, persistable=boolean)
def create_tensor(dtype, name=None, persistable=False):
    """An empty variable named ``name`` (or ``create_tensor_<n>``) for ops to write."""
    helper = LayerHelper("create_tensor", name=name)
    return helper.create_variable(name=helper.name, dtype=dtype, persistable=persistable)


@checks(shape=ints(None, 1, 'dims'), dtype=dtype, name=NAME, is_bias=boolean)
def create_parameter(shape, dtype, name=None, attr=None, is_bias=False,
                     default_initializer=None):
    """A standalone parameter (``create_parameter_<n>.w_0`` unless named)."""
    helper = LayerHelper("create_parameter")
    if attr is None:
        attr = ParamAttr(name=name)
    return helper.create_parameter(attr, shape, convert_dtype(dtype), is_bias,
                                   default_initializer)


@checks(shape=ints(None, 1, 'dims'), value=NUMBER, dtype=dtype, persistable=boolean,
        force_cpu=boolean, name=NAME)
def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A global variable filled with ``value`` by the startup program."""
    helper = LayerHelper("global_var")
    var = helper.create_global_variable(dtype=dtype, shape=list(shape), persistable=persistable,
                                        name=name, stop_gradient=True)
    helper.set_variable_initializer(var, ConstantInitializer(float(value), force_cpu=force_cpu))
    return var


def _one_op(op_type, x, attrs, dtype, layer_type):
    """One ``op_type`` op on ``x`` (a Variable, or slot -> tuple of names) to a fresh
    temporary named for ``layer_type``, all or nothing itself."""
    program = _fw._main_program
    return append_one_op(program.blocks[program.current_block_idx], op_type,
                         {"X": (x.name,)} if x.__class__ is not dict else x, attrs, dtype,
                         layer_type)


@lean  # (one op through append_one_op)
@checks(x=variable, dtype=dtype)
def cast(x, dtype):
    """``x`` converted to ``dtype`` (``cast``)."""
    _check_variable("cast", "x", x)
    check_dtype(dtype, "dtype", ("bool", "float16", "float32", "float64", "int8", "int32",
                                 "int64", "uint8"), "cast")
    out_dtype = convert_dtype(dtype)
    return _one_op("cast", x, {"in_dtype": int(x.dtype), "out_dtype": int(out_dtype)},
                   out_dtype, "cast")


cast = replayed(cast, globals())


_CONCAT_DTYPES = frozenset((VarType.FP16, VarType.FP32, VarType.FP64, VarType.INT32,
                            VarType.INT64))


@lean  # (one op through append_fresh, or a transaction of its own)
@checks(input=variables, axis=int_typed(or_variable(INT)), name=NAME)
def concat(input, axis=0, name=None):
    """Join a list of tensors along ``axis`` (``concat``); a tensor array given alone is
    joined by ``tensor_array_to_tensor``, and a single tensor is taken as a list of one."""
    if isinstance(input, Variable):
        input = [input]
    if name is None and axis.__class__ is int and input:
        dtype = input[0].dtype
        if dtype in _CONCAT_DTYPES and all(x.type == VarType.LOD_TENSOR and x.dtype == dtype
                                           for x in input):
            # (the usual call: dense tensors of one allowed dtype, an int axis; its X of
            # several names, which append_fresh's C path takes)
            return append_fresh(_fw._main_program.current_block(), "concat",
                                {"X": tuple(x.name for x in input)}, {"Out": [(dtype, False)]},
                                {"axis": axis}, "concat")["Out"][0]
    with atomic():
        return _concat(input, axis, name)


def _concat(input, axis, name):
    for i, x in enumerate(input):
        if x.type != VarType.LOD_TENSOR_ARRAY:
            check_dtype(x.dtype, f"input[{i}]", ("float16", "float32", "float64", "int32",
                                                  "int64"), "concat")
    helper = LayerHelper("concat", input=input, name=name)
    if input[0].type == VarType.LOD_TENSOR_ARRAY:
        if len(input) != 1 or isinstance(axis, Variable):
            raise InvalidArgument(expected("concat", "input", "one tensor array and an int "
                                           "axis", f"{len(input)} inputs"))
        out = helper.create_variable_for_type_inference(dtype=input[0].dtype)
        out_index = helper.create_variable_for_type_inference(dtype=VarType.INT32)
        helper.append_op(type="tensor_array_to_tensor", inputs={"X": input},
                         outputs={"Out": [out], "OutIndex": [out_index]},
                         attrs={"axis": axis, "use_stack": False})
        return out
    inputs = {"X": helper.multiple_input()}
    attrs = {}
    if isinstance(axis, Variable):
        inputs["AxisTensor"] = [axis]
    else:
        attrs["axis"] = axis
    out = helper.create_variable_for_type_inference(dtype=helper.input_dtype())
    helper.append_op(type="concat", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(input=variables, out=optional(variable))
def sums(input, out=None):
    """The elementwise sum of a list of tensors (``sum``)."""
    if out is None:
        xs = [input] if isinstance(input, Variable) else list(input)
        dtype = xs[0].dtype
        if all(x.dtype == dtype for x in xs):  # (the usual call: a fresh output, one op)
            return _one_op("sum", {"X": tuple(x.name for x in xs)}, {"use_mkldnn": False},
                           dtype, "sum")
    with atomic():
        helper = LayerHelper("sum", input=input)
        inputs = helper.multiple_input()
        if out is None:
            out = helper.create_variable_for_type_inference(dtype=helper.input_dtype())
        helper.append_op(type="sum", inputs={"X": inputs}, outputs={"Out": [out]},
                         attrs={"use_mkldnn": False})
        return out


_ASSIGN_VALUE_DTYPES = ("bool", "float32", "int32", "int64")


@lean  # (one op through append_one_op, or a transaction of its own)
def assign(input, output=None):
    """Copy a Variable (``assign``) or a NumPy array / list (``assign_value``) into
    ``output`` (a new variable when None)."""
    if isinstance(input, Variable):
        check_dtype(input.dtype, "input", ("float32", "float64", "int32", "int64", "bool"),
                    "assign")
        if output is None:  # (the usual call: a copy into a fresh temporary, one op)
            return _one_op("assign", input, None, input.dtype, "assign")
    with atomic():
        return _assign(input, output)


assign = replayed(assign, globals())


def _assign(input, output):
    helper = LayerHelper("assign")
    if isinstance(input, Variable):
        if output is None:
            output = helper.create_variable_for_type_inference(dtype=input.dtype)
        helper.append_op(type="assign", inputs={"X": [input]}, outputs={"Out": [output]})
        return output
    if isinstance(input, (list, tuple, int, float, bool, np.generic)):
        input = np.array(input)
        if input.dtype == np.float64:
            input = input.astype(np.float32)  # Python floats become float32 constants
    if not isinstance(input, np.ndarray):
        raise InvalidType(f"assign: input expected Variable, numpy.ndarray or list, but "
                          f"received {type(input).__name__}")
    if input.dtype.name not in _ASSIGN_VALUE_DTYPES:
        # assign_value stores bool, float32, int32 or int64 values only: a float64 array
        # would silently lose precision, so Fluid asks for an explicit astype
        raise InvalidType(expected("assign", "input's dtype (a numpy.ndarray)",
                                   "one of " + ", ".join(_ASSIGN_VALUE_DTYPES),
                                   input.dtype.name))
    if input.size > 1024 * 1024:
        raise InvalidArgument(f"assign: input size expected at most 1048576 elements (it is "
                              f"stored in the program), but received {input.size}")
    if output is None:
        output = helper.create_variable_for_type_inference(dtype=convert_dtype(input.dtype))
    declared = output.shape
    if tuple(declared) != input.shape:
        # the value's shape wins, as Fluid's assign_value shape inference writes it
        output.shape = input.shape
    try:
        assign_value_op(helper.main_program.current_block(), output, input)
    except BaseException:
        output.shape = declared  # a refused value leaves the variable as it was
        raise
    return output


def _shape_inputs(shape, inputs, attrs, op_type):
    """Fluid's shape handling: a Variable -> ShapeTensor; a list holding Variables ->
    ShapeTensorList (ints become int32 fill_constant tensors, -1 in the attribute)."""
    if isinstance(shape, Variable):
        shape.stop_gradient = True
        inputs["ShapeTensor"] = [shape]
        return
    if not isinstance(shape, (list, tuple)):
        raise InvalidArgument(f"{op_type}: shape expected list, tuple or Variable, but "
                              f"received {type(shape).__name__}")
    if not shape:  # Fluid 1.8 asserts it (scripts catch AssertionError)
        raise InvalidAssertion(expected(op_type, "shape", "at least one dim", "[]"))
    if any(isinstance(d, Variable) for d in shape):
        tensors = []
        for d in shape:
            if isinstance(d, Variable):
                tensors.append(d if d.dtype == VarType.INT32 else cast(d, "int32"))
            else:
                tensors.append(fill_constant([1], "int32", d, force_cpu=True))
        inputs["ShapeTensorList"] = tensors
        attrs["shape"] = [-1 if isinstance(d, Variable) else int(d) for d in shape]
    else:
        attrs["shape"] = [int(d) for d in shape]


def _fill_value(value):
    """A number, or a bool (``fill_constant([1], 'bool', True)``)."""
    if not isinstance(value, (bool, np.bool_)):
        real_in(finite=False, want="a number or a bool")(value)


_FILL_DTYPES = ("bool", "float16", "float32", "float64", "int32", "int64")


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(shape=dims(0), dtype=dtype, value=or_variable(_fill_value),
        force_cpu=boolean, out=optional(variable))
def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    """A tensor of ``shape`` filled with ``value`` (``fill_constant``); no gradient."""
    check_dtype(dtype, "dtype", _FILL_DTYPES, "fill_constant")
    vt = convert_dtype(dtype)
    if out is None and shape and plain_ints(shape) and not isinstance(value, Variable):
        # (the usual call: a number over plain dims, appended as the transaction below would)
        out = append_one_op(_fw._main_program.current_block(), "fill_constant", {},
                            _fill_attrs(force_cpu, value, vt, list(shape)), vt, "fill_constant")
        out.stop_gradient = True
        return out
    with atomic():
        return _fill_constant(shape, value, force_cpu, out, vt)


def _fill_attrs(force_cpu, value, vt, shape=None):
    """fill_constant's attributes for a number ``value`` of VarType ``vt``, the ``shape``
    list when given, in the order Fluid's layer writes them (the dtype comes last)."""
    integral = vt in (VarType.INT32, VarType.INT64, VarType.INT16, VarType.INT8, VarType.UINT8)
    attrs = {"force_cpu": force_cpu or force_init_on_cpu(), "value": float(value),
             "str_value": str(int(value)) if integral else str(float(value))}
    if shape is not None:
        attrs["shape"] = shape
        attrs["dtype"] = int(vt)
    return attrs


def _fill_constant(shape, value, force_cpu, out, vt):
    if out is not None and out.dtype != vt:
        raise InvalidType(expected("fill_constant", "out's dtype", dtype_name(vt),
                                   dtype_name(out.dtype)))
    helper = LayerHelper("fill_constant")
    inputs = {}
    if isinstance(value, Variable):
        attrs = {"force_cpu": force_cpu or force_init_on_cpu()}
        inputs["ValueTensor"] = [value]
    else:
        attrs = _fill_attrs(force_cpu, value, vt)
    _shape_inputs(shape, inputs, attrs, "fill_constant")
    if out is None:
        out = helper.create_variable_for_type_inference(dtype=vt)
    attrs["dtype"] = int(out.dtype)
    helper.append_op(type="fill_constant", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


@lean  # (one op through append_one_op)
@checks(input=variable, shape=ints(None, -1, 'dims'), dtype=dtype, value=_fill_value,
        input_dim_idx=NON_NEGATIVE_INT, output_dim_idx=NON_NEGATIVE_INT, force_cpu=boolean)
def fill_constant_batch_size_like(input, shape, dtype, value, input_dim_idx=0,
                                  output_dim_idx=0, force_cpu=False):
    """A tensor of ``shape`` filled with ``value`` whose dim ``output_dim_idx`` is, at run
    time, ``input``'s dim ``input_dim_idx`` (the batch size); no gradient."""
    _check_variable("fill_constant_batch_size_like", "input", input)
    vt = convert_dtype(dtype)
    integral = vt in (VarType.INT32, VarType.INT64, VarType.INT16, VarType.INT8, VarType.UINT8)
    out = _one_op("fill_constant_batch_size_like", {"Input": (input.name,)},
                  {"shape": [int(d) for d in shape], "dtype": int(vt), "value": float(value),
                   "str_value": str(int(value)) if integral else str(float(value)),
                   "input_dim_idx": input_dim_idx, "output_dim_idx": output_dim_idx,
                   "force_cpu": force_cpu}, vt, "fill_constant_batch_size_like")
    out.stop_gradient = True
    return out


#: fill_constant's body, its arguments checked by the caller (zeros and ones check theirs)
_filled = fill_constant.__wrapped__
# (the commonest layer of a cell's constants: its repeated calls replayed, keyed also by
# init_on_cpu(), which sets force_cpu)
fill_constant = created(fill_constant, globals(), force_init_on_cpu)


@lean  # (fill_constant's body: one op, all or nothing itself)
@checks(shape=dims(0), dtype=dtype, force_cpu=boolean)
def zeros(shape, dtype, force_cpu=False):
    return _filled(shape, dtype, 0.0, force_cpu)


@lean  # (the same)
@checks(shape=dims(0), dtype=dtype, force_cpu=boolean)
def ones(shape, dtype, force_cpu=False):
    return _filled(shape, dtype, 1.0, force_cpu)


zeros = created(zeros, globals(), force_init_on_cpu)
ones = created(ones, globals(), force_init_on_cpu)


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(x=variable, out=optional(variable))
def zeros_like(x, out=None):
    """Zeros shaped like ``x`` (``fill_zeros_like``)."""
    _check_variable("zeros_like", "x", x)
    if out is None:
        out = _one_op("fill_zeros_like", x, None, x.dtype, "zeros_like")
        out.stop_gradient = True
        return out
    with atomic():
        LayerHelper("zeros_like").append_op(type="fill_zeros_like", inputs={"X": [x]},
                                            outputs={"Out": [out]})
    out.stop_gradient = True
    return out


zeros_like = replayed(zeros_like, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(x=variable, out=optional(variable))
def ones_like(x, out=None):
    """Ones shaped like ``x`` (``fill_any_like`` with value 1)."""
    _check_variable("ones_like", "x", x)
    if out is None:
        return _one_op("fill_any_like", x, {"value": 1.0}, x.dtype, "ones_like")
    with atomic():
        LayerHelper("ones_like").append_op(type="fill_any_like", inputs={"X": [x]},
                                           outputs={"Out": [out]}, attrs={"value": 1.0})
    return out


ones_like = replayed(ones_like, globals())


def _arg(op_type, x, axis):
    _check_variable(op_type, "x", x)
    out = _one_op(op_type, x, {"axis": axis}, VarType.INT64, op_type)
    out.stop_gradient = True
    return out


@lean  # (one op through append_one_op)
@checks(x=variable, axis=INT)
def argmax(x, axis=0):
    """int64 index of the largest element along ``axis`` (``arg_max``)."""
    return _arg("arg_max", x, axis)


argmax = replayed(argmax, globals())


@lean  # (one op through append_one_op)
@checks(x=variable, axis=INT)
def argmin(x, axis=0):
    return _arg("arg_min", x, axis)


argmin = replayed(argmin, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(shape=dims(1), dtype=dtype, min=NUMBER, max=NUMBER, seed=NON_NEGATIVE_INT)
def uniform_random(shape, dtype="float32", min=-1.0, max=1.0, seed=0):
    """U[min, max) of ``shape`` (``uniform_random``)."""
    check_dtype(dtype, "dtype", ("float32", "float64"), "uniform_random")
    attrs = {"seed": seed, "min": float(min), "max": float(max),
             "dtype": int(convert_dtype(dtype))}
    return _random("uniform_random", shape, attrs, dtype)


def _random(op_type, shape, attrs, dtype):
    """``op_type`` (a random tensor of ``shape``) writing a fresh temporary: one op when the
    shape is ints, a transaction where it holds Variables (ShapeTensor, ShapeTensorList)."""
    if isinstance(shape, (list, tuple)) and shape and \
            not any(isinstance(d, Variable) for d in shape):
        attrs["shape"] = [int(d) for d in shape]
        return _one_op(op_type, {}, attrs, convert_dtype(dtype), op_type)
    with atomic():
        helper = LayerHelper(op_type)
        inputs = {}
        _shape_inputs(shape, inputs, attrs, op_type)
        out = helper.create_variable_for_type_inference(dtype)
        helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
        return out


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(shape=dims(1), mean=NUMBER, std=real_in(0.0), seed=NON_NEGATIVE_INT, dtype=dtype)
def gaussian_random(shape, mean=0.0, std=1.0, seed=0, dtype="float32"):
    """N(mean, std^2) of ``shape`` (``gaussian_random``)."""
    attrs = {"mean": float(mean), "std": float(std), "seed": seed,
             "dtype": int(convert_dtype(dtype))}
    return _random("gaussian_random", shape, attrs, dtype)


uniform_random = created(uniform_random, globals())
gaussian_random = created(gaussian_random, globals())
