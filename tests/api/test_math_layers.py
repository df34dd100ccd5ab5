"""The math layers of fluid.layers against NumPy, as users call them."""
import math

import numpy as np
import pytest

import fluid_nb as fluid

X = np.array([[-1.2, -0.3, 0.2, 0.9, 2.5]], "float32")


def _run(build, x=X):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        v = fluid.data(name="x", shape=list(x.shape), dtype=str(x.dtype))
        out = build(v)
    (value,) = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": x}, fetch_list=[out])
    return main, value


def _erf(x):
    return np.vectorize(math.erf)(x)


@pytest.mark.parametrize("layer, kwargs, reference", [
    ("log1p", {}, lambda x: np.log1p(np.abs(x))),
    ("erf", {}, _erf),
    ("atan", {}, np.arctan),
    ("hard_shrink", {"threshold": 0.5}, lambda x: np.where(np.abs(x) > 0.5, x, 0)),
    ("thresholded_relu", {}, lambda x: np.where(x > 1.0, x, 0)),
    ("selu", {}, lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * (np.exp(x) - 1))),
    ("stanh", {"scale_a": 0.5, "scale_b": 2.0}, lambda x: 2.0 * np.tanh(0.5 * x)),
    ("brelu", {"t_min": 0.0, "t_max": 1.0}, lambda x: np.clip(x, 0, 1)),
    ("soft_relu", {"threshold": 1.0}, lambda x: np.log1p(np.exp(np.clip(x, -1, 1)))),
    ("hard_swish", {}, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("mish", {}, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    ("pow", {"factor": 2.0}, lambda x: x ** 2),
    ("sign", {}, np.sign),
    ("clip_by_norm", {"max_norm": 1.0}, lambda x: x / np.linalg.norm(x)),
])
def test_math_layer_matches_numpy(layer, kwargs, reference):
    x = np.abs(X) if layer == "log1p" else X
    main, value = _run(lambda v: getattr(fluid.layers, layer)(v, **kwargs), x)
    np.testing.assert_allclose(value, reference(x.astype("float64")), rtol=1e-5, atol=1e-6)
    assert main.global_block().ops[-1].type == layer


def test_sum_adds_a_list_and_pow_takes_a_variable_factor():
    def build(v):
        factor = fluid.layers.fill_constant([1], "float32", 3.0)
        return fluid.layers.sum([v, fluid.layers.pow(v, factor=factor)])
    _, value = _run(build)
    np.testing.assert_allclose(value, X + X ** 3, rtol=1e-5)


def test_float_only_layers_refuse_integers_as_a_type_error():
    with pytest.raises(TypeError, match="x's dtype expected float16, float32 or float64"):
        _run(lambda v: fluid.layers.erf(v), np.array([[1, 2]], "int64"))
    with pytest.raises(ValueError, match="t_min expected <= t_max"):
        _run(lambda v: fluid.layers.brelu(v, t_min=2.0, t_max=1.0))
