"""A formula of one NumPy ufunc runs from C (``ops/_special.c``'s UfuncKernel, made by
``expr.host_kernel``): for NumPy arrays it gives what the Python kernel generated from the
same formula gives, value, dtype, shape and kind of result, and every other call is that
Python kernel's."""
import types
import warnings

import numpy as np
import pytest

from fluid_nb.framework import registry
from fluid_nb.ops import expr
from fluid_nb.ops.expr import X, Y, maximum

EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, 3.0, -7.25]


def _ctx(axis=-1, xp=np):
    return types.SimpleNamespace(attrs={"axis": axis}, xp=xp)


def _ufunc_kernel_ops():
    found = {}
    for op_type, op_def in registry.all_ops().items():
        kernel = op_def.kernels.get(("cpu", None))
        if isinstance(kernel, expr._special_part().UfuncKernel):
            found[op_type] = kernel
    return found


UFUNC_OPS = _ufunc_kernel_ops()
UNARY = sorted(t for t, k in UFUNC_OPS.items() if max(o for o in k.operands
                                                      if isinstance(o, int)) == 0)
BINARY = sorted(set(UFUNC_OPS) - set(UNARY))


def _same(expected, got):
    assert type(got) is type(expected)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    assert np.shape(got) == np.shape(expected)
    assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()


def _values(shape, dtype):
    x = np.asarray(np.random.RandomState(7).randn(*shape) * 4)
    if x.size >= len(EDGES) and np.dtype(dtype).kind == "f":
        x.flat[:len(EDGES)] = EDGES
    return x.astype(dtype)


def _not_asked(ctx, *arrays):
    raise AssertionError("the Python kernel was asked for NumPy arrays")


def test_the_one_ufunc_formulas_run_from_c():
    assert {"relu", "exp", "tanh", "sqrt", "square", "reciprocal"} <= set(UNARY)
    assert {"elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_max",
            "elementwise_min"} <= set(BINARY)
    # a quotient of integers truncates in Paddle: no formula, so no C kernel
    assert "elementwise_div" not in UFUNC_OPS and "sigmoid" not in UFUNC_OPS


@pytest.mark.parametrize("op_type", UNARY)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("shape", [(3, 11), (), (0, 3), (2, 3, 4)])
def test_an_activation_gives_its_python_kernels_result(op_type, dtype, shape):
    kernel = UFUNC_OPS[op_type]
    x = _values(shape, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(kernel.fallback(_ctx(), x), kernel(_ctx(), x))


@pytest.mark.parametrize("op_type", BINARY)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64", "bool"])
@pytest.mark.parametrize("x_shape, y_shape, axis", [
    ((4, 5), (4, 5), -1), ((2, 3, 4), (4,), -1), ((2, 3, 4), (3, 4), 1), ((), (), -1),
    ((3, 1), (1, 4), -1), ((2, 3, 4), (2, 3, 4), 0), ((2, 3, 4), (3,), 1),
    ((2, 3, 4), (2,), 0), ((2, 3, 4), (3, 1), 1)])
def test_an_elementwise_op_gives_its_python_kernels_result(op_type, dtype, x_shape, y_shape,
                                                          axis):
    kernel = UFUNC_OPS[op_type]
    x, y = _values(x_shape, dtype), _values(y_shape, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = kernel.fallback(_ctx(axis), x, y)
        except TypeError as refused:  # (bool - bool: NumPy refuses it, both ways)
            with pytest.raises(TypeError, match=str(refused)[:30]):
                kernel(_ctx(axis), x, y)
            return
        _same(expected, kernel(_ctx(axis), x, y))


def test_operands_of_one_rank_broadcast_as_numpy_does_whatever_the_axis():
    """(The Python kernel aligns nothing then: the C kernel takes them all.)"""
    kernel = expr.host_kernel(X + Y, ["x", "y"], _not_asked, axis_rule=True)
    x, y = np.arange(6.0).reshape(2, 3), np.array([[2.0, 2.0, 2.0]])
    for axis in (-1, 0, 1):
        assert kernel(_ctx(axis), x, y).tolist() == (x + y).tolist()
    assert kernel(_ctx(2), np.zeros((2, 3, 4)), np.ones(4)).shape == (2, 3, 4)  # (rank less)


def test_paddles_axis_rule_is_the_python_kernels():
    """Y of dims 1..1 of X (axis 1): NumPy's trailing broadcast would refuse it or pair
    the wrong dims, so the Python kernel aligns them."""
    add = UFUNC_OPS["elementwise_add"]
    x, y = np.zeros((2, 3, 4), "float32"), np.arange(3, dtype="float32")
    got = add(_ctx(1), x, y)
    assert got.tobytes() == (x + y.reshape(3, 1)).tobytes()
    with pytest.raises(ValueError):  # (NumPy's own broadcast of the same two)
        np.add(x, y)


def test_operands_that_do_not_broadcast_raise_numpys_error_both_ways():
    add = UFUNC_OPS["elementwise_add"]
    x, y = np.zeros((2, 3), "float32"), np.zeros((4,), "float32")
    with pytest.raises(ValueError) as python_way:
        add.fallback(_ctx(), x, y)
    with pytest.raises(ValueError) as c_way:
        add(_ctx(), x, y)
    assert str(c_way.value) == str(python_way.value)


def test_strided_views_and_nan_keep_numpys_answers():
    x = _values((6, 10), "float32")[:, ::3]
    x[0, 0] = np.nan
    relu = UFUNC_OPS["relu"]
    _same(relu.fallback(_ctx(), x), relu(_ctx(), x))
    assert np.isnan(relu(_ctx(), x)[0, 0])


class _Recording:
    """Stands in for another array module: the Python kernel is asked, not NumPy."""

    def __init__(self):
        self.asked = []

    def maximum(self, a, b):
        self.asked.append("maximum")
        return np.maximum(a, b)


def test_another_array_module_gets_the_python_kernel():
    xp = _Recording()
    got = UFUNC_OPS["elementwise_max"](_ctx(xp=xp), np.ones(3), np.zeros(3))
    assert xp.asked == ["maximum"] and got.tolist() == [1.0, 1.0, 1.0]
    # X + Y reads no array module: NumPy's own ufunc either way
    assert UFUNC_OPS["elementwise_add"](_ctx(xp=xp), np.ones(2), np.ones(2)).tolist() == [2, 2]


def test_what_is_no_plain_ndarray_gets_the_python_kernel():
    class Marked(np.ndarray):
        pass

    calls = []

    def python_kernel(ctx, x):
        calls.append(type(x).__name__)
        return "python"

    kernel = expr.host_kernel(maximum(X, 0), ["x"], python_kernel, cast_like="x")
    assert kernel(_ctx(), np.ones(2).view(Marked)) == "python"
    assert kernel(_ctx(), [1.0, -1.0]) == "python"
    assert kernel(_ctx(), np.float64(2.0)) == "python"
    assert kernel(_ctx(), x=np.ones(2)) == "python"
    assert calls == ["Marked", "list", "float64", "ndarray"]
    assert kernel(_ctx(), np.array([-1.0, 2.0])).tolist() == [0.0, 2.0]


def test_a_formula_of_more_than_one_ufunc_keeps_its_python_kernel():
    def python_kernel(ctx, x):
        return None

    assert expr.host_kernel(maximum(X, 0) * 2, ["x"], python_kernel) is python_kernel
    assert expr.host_kernel(expr.attr("alpha") * X, ["x"], python_kernel) is python_kernel
    assert expr.host_kernel(expr.erf(X), ["x"], python_kernel) is python_kernel


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("constant", [0.0, 1.0, 0.1, 1e6, -3.5])
def test_a_constant_beside_floats_is_what_numpy_makes_of_it(dtype, constant):
    """The constant as a 0-d array of the arrays' type where that type holds it exactly;
    else NumPy's own conversion of the Python float at each call, with its warnings (1e6
    overflows half precision every time, not only the first)."""
    kernel = expr.host_kernel(X + constant, ["x"], _not_asked, cast_like="x")
    x = _values((3, 4), dtype)
    for _ in range(2):
        with warnings.catch_warnings(record=True) as c_warned:
            warnings.simplefilter("always")
            got = kernel(_ctx(), x)
        with warnings.catch_warnings(record=True) as numpy_warned:
            warnings.simplefilter("always")
            expected = np.add(x, constant)
        _same(expected, got)
        assert [str(w.message) for w in c_warned] == [str(w.message) for w in numpy_warned]


def test_the_typed_constants_follow_the_arrays_type():
    """(A constant kept as a float32 0-d array would make a half-precision result single.)"""
    kernel = expr.host_kernel(maximum(X, 0.5), ["x"], _not_asked)
    for dtype in ["float32", "float64", "float32", "float16", "int64", "float32"]:
        x = _values((5,), dtype)
        _same(np.maximum(x, 0.5), kernel(_ctx(), x))


def test_an_integer_result_of_a_float_formula_is_cast_back_as_the_python_kernel_casts():
    relu = UFUNC_OPS["relu"]
    x = np.array([-3, 0, 5], "int32")
    assert np.maximum(x, 0.0).dtype == np.float64
    got = relu(_ctx(), x)
    assert got.dtype == np.int32 and got.tolist() == [0, 0, 5]
    scalar = relu(_ctx(), np.array(-2, "int64"))  # (0-d: NumPy answers a scalar)
    assert type(scalar) is np.int64 and scalar == 0


def test_a_live_relu_and_add_run_their_c_kernels():
    import fluid_nb as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=fluid.Scope()):
        x = fluid.layers.assign(np.array([[-1.5, 2.0]], "float32"))
        out = fluid.layers.relu(x + x)
        assert out.numpy().tolist() == [[0.0, 4.0]]
