"""The interpreter's host layer norm runs the rows compiled code runs (ops/_norms.cc over
runtime/fluid_native_rows.h): Y, Mean, Variance and the three gradients agree with the
formula in float64 for rows of any width (fewer than the 16 lanes its sums keep, a whole
number of them, a last partial one), with and without Scale and Bias; what it does not take
(half precision, strided rows) is answered NotImplemented and the NumPy formula runs."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.ops import norm

EPSILON = 1e-5
TOLERANCE = {"float32": 2e-5, "float64": 1e-12}


def formula(x, scale, bias, dy):
    """Layer norm of [left, right] rows and its gradients, in float64."""
    x, dy = x.astype("float64"), dy.astype("float64")
    mean = x.mean(axis=1)
    variance = ((x - mean[:, None]) ** 2).mean(axis=1)
    inv_std = 1.0 / np.sqrt(variance + EPSILON)
    x_hat = (x - mean[:, None]) * inv_std[:, None]
    s = np.ones(x.shape[1]) if scale is None else scale.astype("float64")
    y = x_hat * s + (0 if bias is None else bias.astype("float64"))
    g = dy * s
    dx = inv_std[:, None] * (g - g.mean(axis=1, keepdims=True)
                             - x_hat * (g * x_hat).mean(axis=1, keepdims=True))
    return y, mean, variance, dx, (dy * x_hat).sum(axis=0), dy.sum(axis=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("right", [1, 5, 16, 64, 77])
@pytest.mark.parametrize("affine", [True, False], ids=["scale and bias", "neither"])
def test_rows_of_any_width_give_the_formulas_values(dtype, right, affine):
    rng = np.random.RandomState(right)
    for left in [1, 3, 512]:
        x = (rng.randn(left, right) * 3 + 1).astype(dtype)
        dy = rng.randn(left, right).astype(dtype)
        scale = rng.uniform(0.5, 1.5, right).astype(dtype) if affine else None
        bias = rng.randn(right).astype(dtype) if affine else None
        y, mean, variance = norm._norms.layer_norm(x, scale, bias, EPSILON)
        assert y.dtype == mean.dtype == variance.dtype == np.dtype(dtype)
        dx, d_scale, d_bias = norm._norms.layer_norm_grad(
            x, scale, mean, variance, dy, EPSILON, True, affine, affine)
        want = formula(x, scale, bias, dy)
        got = [y, mean, variance, dx] + ([d_scale, d_bias] if affine else [])
        for name, g, w in zip(["Y", "Mean", "Variance", "X@GRAD", "Scale@GRAD", "Bias@GRAD"],
                              got, want):
            scale_of = 1 + np.max(np.abs(w))
            np.testing.assert_allclose(g, w, rtol=0, atol=TOLERANCE[dtype] * scale_of,
                                       err_msg=f"{name} [{left}, {right}]")
        if not affine:
            assert d_scale is None and d_bias is None


def test_a_gradient_not_wanted_is_not_made():
    x = np.random.RandomState(0).randn(4, 8).astype("float32")
    y, mean, variance = norm._norms.layer_norm(x, None, None, EPSILON)
    dx, d_scale, d_bias = norm._norms.layer_norm_grad(x, np.ones(8, "float32"), mean,
                                                        variance, x, EPSILON, False, True,
                                                        False)
    assert dx is None and d_bias is None and d_scale.shape == (8,)


def test_what_the_rows_do_not_take_is_answered_not_implemented():
    module = norm._norms
    half = np.ones((4, 8), "float16")
    strided = np.ones((4, 16), "float32")[:, ::2]
    assert module.layer_norm(half, None, None, EPSILON) is NotImplemented
    assert module.layer_norm(strided, None, None, EPSILON) is NotImplemented
    assert module.layer_norm(np.ones((4, 8), "float32"), np.ones(8, "float64"), None,
                             EPSILON) is NotImplemented  # a Scale of another type
    assert module.layer_norm(np.ones((4, 8), "float32"), np.ones(7, "float32"), None,
                             EPSILON) is NotImplemented  # of another width
    x = np.ones((4, 8), "float32")
    assert module.layer_norm_grad(x, None, np.zeros(4, "float32"), np.ones(4, "float32"),
                                  np.ones((4, 9), "float32"), EPSILON, True, False,
                                  False) is NotImplemented  # dY of another shape


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_layer_norm_program_trains_with_the_formulas_gradients(dtype, monkeypatch):
    module, called = norm._norms, []

    class Counted:  # the rows module, each call counted
        def __getattr__(self, name):
            called.append(name)
            return getattr(module, name)
    monkeypatch.setattr(norm, "_norms", Counted())
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[6, 20], dtype=dtype)
        x.stop_gradient = False
        y = fluid.layers.layer_norm(x, begin_norm_axis=2, epsilon=EPSILON)
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(y, y))
        fluid.backward.append_backward(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    xv = (np.random.RandomState(1).randn(3, 6, 20) * 2 + 0.5).astype(dtype)
    y_out, dx = exe.run(main, feed={"x": xv}, fetch_list=[y, "x@GRAD"], scope=scope)
    assert called == ["layer_norm", "layer_norm_grad"]
    rows = xv.reshape(18, 20)
    scale = np.ones(20, dtype)  # the layer's initial Scale and Bias
    want_y = formula(rows, scale, np.zeros(20, dtype), np.zeros_like(rows))[0]
    want_dx = formula(rows, scale, None, 2 * want_y)[3]
    np.testing.assert_allclose(y_out.reshape(18, 20), want_y, rtol=0,
                               atol=TOLERANCE[dtype] * 10)
    np.testing.assert_allclose(dx.reshape(18, 20), want_dx, rtol=0,
                               atol=TOLERANCE[dtype] * 100)
