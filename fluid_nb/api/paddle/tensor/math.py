"""Elementwise and reducing math of ``paddle.tensor.math`` (Fluid 1.8).

Most functions append one Fluid op (``sin``, ``elementwise_add``, ``reduce_sum``,
``matmul``, ``sum`` ...) and, unlike the ``fluid.layers`` forms, take ``out=``: an existing
Variable that receives the result instead of a new one."""
from ....errors import InvalidArgument, InvalidAssertion, InvalidType, expected
from ....framework.program import Variable
from ....framework.type_checks import check_type, check_variable_and_dtype
from ...layer_helper import LayerHelper
from ... import layers
# addmm and clamp are fluid_nb.api.layers' own: same signature, checks and ops as here
from ...layers.math import addmm, clamp
from ....tensor.dtypes import VarType, convert_dtype, dtype_name
from ._common import FLOATS, FLOAT32_64, NUMBERS, dims_list, result, same_dtype_out

__all__ = ["atan", "mul", "pow", "sin", "sqrt", "sum", "tanh", "elementwise_sum", "max",
           "min", "mm", "div", "add", "logsumexp", "log1p", "addcmul", "addmm", "clamp"]


def _unary(op_type, formula):
    def func(x, name=None, out=None):
        check_variable_and_dtype(x, "x", FLOATS, op_type)
        helper = LayerHelper(op_type, name=name)
        out = result(helper, x.dtype, out, name)
        helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]})
        return out
    func.__name__ = func.__qualname__ = op_type
    func.__doc__ = (f"{formula}, elementwise (the ``{op_type}`` op); ``x`` is float16, "
                    f"float32 or float64. ``out``, when given, receives the result.")
    return func


atan = _unary("atan", "out = arctan(x)")
sin = _unary("sin", "out = sin(x)")
sqrt = _unary("sqrt", "out = sqrt(x)")
tanh = _unary("tanh", "out = (e^x - e^-x) / (e^x + e^-x)")


def log1p(x, out=None, name=None):
    """out = ln(x + 1), elementwise (``log1p``); ``x`` is float32 or float64."""
    check_variable_and_dtype(x, "x", FLOAT32_64, "log1p")
    helper = LayerHelper("log1p", name=name)
    out = result(helper, x.dtype, out, name)
    helper.append_op(type="log1p", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def pow(input, exponent, out=None, name=None):
    """out = input ^ exponent, elementwise (``pow``); ``exponent`` is a number (the
    ``factor`` attribute) or a shape-[1] Variable (the ``FactorTensor`` input, which gets
    no gradient)."""
    check_type(input, "input", Variable, "pow")
    helper = LayerHelper("pow", name=name)
    inputs, attrs = {"X": [input]}, {}
    if isinstance(exponent, Variable):
        exponent.stop_gradient = True
        inputs["FactorTensor"] = [exponent]
    else:
        attrs["factor"] = float(exponent)
    if out is not None:
        same_dtype_out("pow", out, input.dtype)
    out = result(helper, input.dtype, out, name)
    helper.append_op(type="pow", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, out=None, name=None):
    """The matrix product of ``x`` and ``y`` flattened to 2-D (``mul``): ``x`` to
    [prod(x.shape[:x_num_col_dims]), prod(x.shape[x_num_col_dims:])], ``y`` likewise;
    the result has shape x.shape[:x_num_col_dims] + y.shape[y_num_col_dims:]."""
    check_variable_and_dtype(x, "x", FLOATS, "mul")
    check_variable_and_dtype(y, "y", FLOATS, "mul")
    helper = LayerHelper("mul", name=name)
    if out is not None:
        same_dtype_out("mul", out, x.dtype)
    out = result(helper, x.dtype, out, name)
    helper.append_op(type="mul", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"x_num_col_dims": x_num_col_dims,
                            "y_num_col_dims": y_num_col_dims})
    return out


def _elementwise(op_type, where, x, y, out, name):
    check_variable_and_dtype(x, "x", ("float16",) + NUMBERS, where)
    check_variable_and_dtype(y, "y", ("float16",) + NUMBERS, where)
    helper = LayerHelper(op_type, name=name)
    out = result(helper, x.dtype, out, name)
    helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"axis": -1})
    return out


def add(x, y, alpha=1, out=None, name=None):
    """out = x + alpha * y, with NumPy-style broadcasting of ``y`` against ``x``
    (``elementwise_add``; a ``scale`` op first when alpha is not 1)."""
    if alpha != 1:
        check_type(y, "y", Variable, "add")
        y = layers.scale(y, scale=alpha)
    return _elementwise("elementwise_add", "add", x, y, out, name)


def div(x, y, out=None, name=None):
    """out = x / y, with ``y`` broadcast against ``x`` (``elementwise_div``)."""
    return _elementwise("elementwise_div", "div", x, y, out, name)


def _reduce(op_type, where, input, dim, keep_dim, out, name, extra=None):
    check_variable_and_dtype(input, "input", NUMBERS, where)
    dim, reduce_all = dims_list(dim)
    helper = LayerHelper(where, name=name)
    attrs = {"dim": dim, "keep_dim": keep_dim, "reduce_all": reduce_all}
    attrs.update(extra or {})
    out_dtype = VarType(extra["out_dtype"]) if extra else input.dtype
    out = result(helper, out_dtype, out, name)
    helper.append_op(type=op_type, inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs=attrs)
    return out


def sum(input, dim=None, dtype=None, keep_dim=False, name=None):
    """The sum of ``input``'s elements over ``dim`` (an int or a list; every dim when None
    or []), keeping the reduced dims as size 1 when ``keep_dim`` (``reduce_sum``).

    ``dtype`` may be 'float64' or 'int64' to sum a float32 / int32 input in the wider type
    (the op's in_dtype / out_dtype attributes); other values are refused."""
    extra = None
    if dtype is not None:
        if dtype not in ("float64", "int64"):
            raise InvalidArgument(expected("sum", "dtype", "'float64' or 'int64'",
                                           repr(dtype)))
        check_type(input, "input", Variable, "sum")
        widened = {("float32", "float64"), ("int32", "int64")}
        if (dtype_name(input.dtype), dtype) in widened:
            extra = {"in_dtype": int(input.dtype), "out_dtype": int(convert_dtype(dtype))}
    return _reduce("reduce_sum", "sum", input, dim, keep_dim, None, name, extra)


def max(input, dim=None, keep_dim=False, out=None, name=None):
    """The largest element of ``input`` over ``dim`` (every dim when None)
    (``reduce_max``)."""
    return _reduce("reduce_max", "max", input, dim, keep_dim, out, name)


def min(input, dim=None, keep_dim=False, out=None, name=None):
    """The smallest element of ``input`` over ``dim`` (every dim when None)
    (``reduce_min``)."""
    return _reduce("reduce_min", "min", input, dim, keep_dim, out, name)


def elementwise_sum(inputs, name=None):
    """out = inputs[0] + inputs[1] + ..., tensors of one shape and dtype (the ``sum`` op);
    ``inputs`` is a Variable or a list or tuple of them."""
    check_type(inputs, "inputs", (Variable, tuple, list), "elementwise_sum")
    listed = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    for var in listed:
        check_variable_and_dtype(var, "inputs", NUMBERS, "elementwise_sum")
    helper = LayerHelper("elementwise_sum", name=name)
    dtypes = {var.dtype for var in listed}
    if len(dtypes) > 1:
        raise InvalidArgument(expected("elementwise_sum", "inputs", "one dtype",
                                       ", ".join(sorted(dtype_name(d) for d in dtypes))))
    out = helper.create_variable_for_type_inference(listed[0].dtype)
    helper.append_op(type="sum", inputs={"X": listed}, outputs={"Out": [out]},
                     attrs={"use_mkldnn": False})
    return out


def _check_matmul_shapes(where, x, y, transpose_x=False, transpose_y=False):
    """Fluid's compile-time matmul check: inner sizes agree (unless unknown), and batch
    dims agree when both are above rank 2."""
    x_shape, y_shape = list(x.shape), list(y.shape)
    if len(x_shape) == 1:
        x_shape = [1] + x_shape
    if len(y_shape) == 1:
        y_shape = y_shape + [1]
    if transpose_x:
        x_shape[-2], x_shape[-1] = x_shape[-1], x_shape[-2]
    if transpose_y:
        y_shape[-2], y_shape[-1] = y_shape[-1], y_shape[-2]
    if x_shape[-1] != y_shape[-2] and x_shape[-1] != -1 and y_shape[-2] != -1:
        raise InvalidArgument(expected(where, "x's width", f"y's height {y_shape[-2]}",
                                       f"{x_shape[-1]} (shapes {list(x.shape)} and "
                                       f"{list(y.shape)})"))
    if len(x_shape) > 2 and len(y_shape) > 2:
        for i, (dx, dy) in enumerate(zip(x_shape[:-2], y_shape[:-2])):
            if dx >= 0 and dy >= 0 and dx != dy:
                raise InvalidArgument(expected(where, f"y's dim {i}", f"x's dim {i} ({dx})",
                                               f"{dy} (shapes {list(x.shape)} and "
                                               f"{list(y.shape)})"))


def mm(input, mat2, out=None, name=None):
    """The matrix product input @ mat2 (``matmul``): batched over the leading dims when the
    ranks exceed 2; a 1-D operand is a row (input) or column (mat2) vector, that dim
    dropped from the result."""
    check_variable_and_dtype(input, "x", FLOATS, "mm")
    check_variable_and_dtype(mat2, "y", FLOATS, "mm")
    _check_matmul_shapes("mm", input, mat2)
    helper = LayerHelper("mm", name=name)
    out = result(helper, input.dtype, out, name)
    helper.append_op(type="matmul", inputs={"X": [input], "Y": [mat2]},
                     outputs={"Out": [out]})
    return out


def logsumexp(x, dim=None, keepdim=False, out=None, name=None):
    """out = log(sum(exp(x))) over ``dim`` (every dim when None) (``exp``, ``reduce_sum``
    and ``log`` ops); ``x`` is float32 or float64."""
    if x is None:  # Fluid 1.8 asserts it (scripts catch AssertionError)
        raise InvalidAssertion(expected("logsumexp", "x", "a Variable", "None"))
    check_variable_and_dtype(x, "x", FLOAT32_64, "logsumexp")
    total = layers.reduce_sum(layers.exp(x), dim, keepdim)
    if out is None:
        return layers.log(total, name)
    check_variable_and_dtype(out, "out", (dtype_name(x.dtype),), "logsumexp")
    LayerHelper("logsumexp").append_op(type="log", inputs={"X": [total]},
                                       outputs={"Out": [out]})
    return out


def addcmul(input, tensor1, tensor2, value=1.0, out=None, name=None):
    """out = input + value * tensor1 * tensor2, the three broadcast together
    (``elementwise_mul``, ``scale``, ``elementwise_add``; ``assign`` into ``out`` when
    given). ``value`` is a float for float inputs, an int for int inputs."""
    for arg, var in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        check_variable_and_dtype(var, arg, NUMBERS, "addcmul")
    want = float if dtype_name(input.dtype) in FLOAT32_64 else int
    if not isinstance(value, want) or isinstance(value, bool):
        raise InvalidType(expected("addcmul", "value", f"{want.__name__} (as input's dtype "
                                   f"{dtype_name(input.dtype)})", type(value).__name__))
    product = layers.scale(layers.elementwise_mul(tensor1, tensor2), scale=float(value))
    total = layers.elementwise_add(input, product)
    if out is None:
        return total
    return layers.assign(total, out)
