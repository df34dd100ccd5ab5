"""Activation ops against NumPy, with float64 finite-difference gradients."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.ops import registry

from .op_test import OpCase, build, table_tests

rng = np.random.RandomState(1)


def r(*shape, low=-1, high=1, dtype="float32"):
    return rng.uniform(low, high, shape).astype(dtype)


def away_from_zero(*shape):
    """Values with |x| in [0.1, 1]: no kinks for relu, leaky_relu and abs."""
    return (rng.uniform(0.1, 1, shape) * rng.choice([-1, 1], shape)).astype("float32")


def sigmoid(x):
    return 1 / (1 + np.exp(-x.astype("float64")))


CASES = [
    OpCase("relu", {"X": away_from_zero(3, 4)},
           ref=lambda i, a: {"Out": np.maximum(i["X"], 0)}, grad=["X"]),
    OpCase("leaky_relu", {"X": away_from_zero(3, 4)},
           ref=lambda i, a: {"Out": np.where(i["X"] > 0, i["X"], 0.02 * i["X"])}, grad=["X"],
           name="default_alpha"),
    OpCase("leaky_relu", {"X": away_from_zero(3, 4)}, attrs={"alpha": 0.3},
           ref=lambda i, a: {"Out": np.where(i["X"] > 0, i["X"], 0.3 * i["X"])}, grad=["X"],
           name="alpha"),
    OpCase("sigmoid", {"X": r(3, 4, low=-4, high=4)},
           ref=lambda i, a: {"Out": sigmoid(i["X"])}, grad=["X"]),
    OpCase("sigmoid", {"X": np.array([-80, -30, 0, 30, 100], "float32")},
           ref=lambda i, a: {"Out": sigmoid(i["X"])}, atol=0, rtol=1e-5, name="saturated"),
    OpCase("tanh", {"X": r(3, 4, low=-2, high=2)},
           ref=lambda i, a: {"Out": np.tanh(i["X"])}, grad=["X"]),
    OpCase("exp", {"X": r(3, 4)}, ref=lambda i, a: {"Out": np.exp(i["X"])}, grad=["X"]),
    OpCase("log", {"X": r(3, 4, low=0.5, high=2)},
           ref=lambda i, a: {"Out": np.log(i["X"])}, grad=["X"]),
    OpCase("sqrt", {"X": r(3, 4, low=0.5, high=2)},
           ref=lambda i, a: {"Out": np.sqrt(i["X"])}, grad=["X"]),
    OpCase("square", {"X": r(3, 4)}, ref=lambda i, a: {"Out": i["X"] ** 2}, grad=["X"]),
    OpCase("abs", {"X": away_from_zero(3, 4)},
           ref=lambda i, a: {"Out": np.abs(i["X"])}, grad=["X"]),
    OpCase("relu", {"X": r(4, 2)}, lod={"X": [[0, 1, 4]]},
           ref=lambda i, a: {"Out": (np.maximum(i["X"], 0), [[0, 1, 4]])}, name="lod"),
    OpCase("clip", {"X": np.array([[-0.9, -0.3, 0.1], [0.35, 0.6, 0.95]], "float32")},
           attrs={"min": -0.5, "max": 0.5},
           ref=lambda i, a: {"Out": np.clip(i["X"], -0.5, 0.5)}, grad=["X"]),
    OpCase("clip", {"X": np.array([-0.9, -0.3, 0.1, 0.6], "float32"),
                    "Min": np.array([-0.2], "float32"), "Max": np.array([0.4], "float32")},
           attrs={"min": -5.0, "max": 5.0},
           ref=lambda i, a: {"Out": np.clip(i["X"], -0.2, 0.4)}, grad=["X"],
           name="tensor_bounds"),
    OpCase("clip", {"X": np.array([-7, 0, 7], "int32")}, attrs={"min": -2.0, "max": 3.0},
           ref=lambda i, a: {"Out": np.array([-2, 0, 3], "int32")}, name="int"),
]



def _erf(x):
    import math
    return np.vectorize(math.erf)(np.asarray(x, "float64"))


def _f64(x):
    return np.asarray(x, "float64")


def _away_from(points, *shape):
    """Values at least 0.05 from each kink in ``points`` (finite differences stay smooth)."""
    values = rng.uniform(-3, 3, shape)
    for point in points:
        near = np.abs(values - point) < 0.05
        values[near] += 0.1
    return values.astype("float32")


CASES += [
    OpCase("logsigmoid", {"X": r(3, 4, low=-4, high=4)},
           ref=lambda i, a: {"Out": -np.log1p(np.exp(-_f64(i["X"])))}, grad=["X"]),
    OpCase("tanh_shrink", {"X": r(3, 4, low=-2, high=2)},
           ref=lambda i, a: {"Out": _f64(i["X"]) - np.tanh(_f64(i["X"]))}, grad=["X"]),
    OpCase("rsqrt", {"X": r(3, 4, low=0.5, high=3)},
           ref=lambda i, a: {"Out": 1 / np.sqrt(_f64(i["X"]))}, grad=["X"]),
    OpCase("sin", {"X": r(3, 4, low=-3, high=3)}, ref=lambda i, a: {"Out": np.sin(i["X"])},
           grad=["X"]),
    OpCase("round", {"X": np.array([[-1.5, -0.4, 0.5, 1.5, 2.6]], "float32")},
           ref=lambda i, a: {"Out": np.round(i["X"])}),
    OpCase("round", {"X": _away_from([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], 3, 4)},
           ref=lambda i, a: {"Out": np.round(i["X"])}, grad=["X"], name="grad_is_zero"),
    OpCase("reciprocal", {"X": r(3, 4, low=0.5, high=2)},
           ref=lambda i, a: {"Out": 1 / _f64(i["X"])}, grad=["X"]),
    OpCase("softplus", {"X": r(3, 4, low=-4, high=4)},
           ref=lambda i, a: {"Out": np.log1p(np.exp(_f64(i["X"])))}, grad=["X"]),
    OpCase("softplus", {"X": np.array([[-3.0, 1.0, 5.0, 30.0]], "float32")},
           attrs={"beta": 2.0, "threshold": 8.0},
           ref=lambda i, a: {"Out": np.where(2 * _f64(i["X"]) > 8, i["X"],
                                             np.log1p(np.exp(2 * _f64(i["X"]))) / 2)},
           grad=["X"], name="beta_threshold"),
    OpCase("softsign", {"X": r(3, 4, low=-3, high=3)},
           ref=lambda i, a: {"Out": _f64(i["X"]) / (1 + np.abs(_f64(i["X"])))}, grad=["X"]),
    OpCase("relu6", {"X": _away_from([0, 6], 3, 4) * 3},
           ref=lambda i, a: {"Out": np.clip(i["X"], 0, 6)}, grad=["X"]),
    OpCase("relu6", {"X": _away_from([0, 2], 3, 4)}, attrs={"threshold": 2.0},
           ref=lambda i, a: {"Out": np.clip(i["X"], 0, 2)}, grad=["X"], name="threshold"),
    OpCase("softshrink", {"X": _away_from([-0.5, 0.5], 3, 4)},
           ref=lambda i, a: {"Out": np.where(i["X"] > 0.5, i["X"] - 0.5,
                                             np.where(i["X"] < -0.5, i["X"] + 0.5, 0))},
           grad=["X"]),
    OpCase("hard_sigmoid", {"X": _away_from([-2.5, 2.5], 3, 4)},
           ref=lambda i, a: {"Out": np.clip(0.2 * _f64(i["X"]) + 0.5, 0, 1)}, grad=["X"]),
    OpCase("swish", {"X": r(3, 4, low=-3, high=3)}, attrs={"beta": 1.5},
           ref=lambda i, a: {"Out": _f64(i["X"]) / (1 + np.exp(-1.5 * _f64(i["X"])))},
           grad=["X"]),
    OpCase("gelu", {"X": r(3, 4, low=-3, high=3)},
           ref=lambda i, a: {"Out": 0.5 * _f64(i["X"]) * (1 + _erf(_f64(i["X"]) / np.sqrt(2)))},
           grad=["X"]),
    OpCase("gelu", {"X": r(3, 4, low=-3, high=3)}, attrs={"approximate": True},
           ref=lambda i, a: {"Out": 0.5 * _f64(i["X"]) * (1 + np.tanh(np.sqrt(2 / np.pi) * (
               _f64(i["X"]) + 0.044715 * _f64(i["X"]) ** 3)))},
           grad=["X"], name="approximate"),
    OpCase("elu", {"X": away_from_zero(3, 4) * 3}, attrs={"alpha": 0.7},
           ref=lambda i, a: {"Out": np.where(i["X"] > 0, i["X"],
                                             0.7 * (np.exp(_f64(i["X"])) - 1))},
           grad=["X"]),
]

CASES += [
    OpCase("log1p", {"X": r(3, 4, low=0, high=2)},
           ref=lambda i, a: {"Out": np.log1p(_f64(i["X"]))}, grad=["X"]),
    OpCase("erf", {"X": r(3, 4, low=-2, high=2)}, ref=lambda i, a: {"Out": _erf(i["X"])},
           grad=["X"]),
    OpCase("atan", {"X": r(3, 4, low=-3, high=3)}, ref=lambda i, a: {"Out": np.arctan(i["X"])},
           grad=["X"]),
    OpCase("acos", {"X": r(3, 4, low=-0.9, high=0.9)},
           ref=lambda i, a: {"Out": np.arccos(i["X"])}, grad=["X"]),
    OpCase("asin", {"X": r(3, 4, low=-0.9, high=0.9)},
           ref=lambda i, a: {"Out": np.arcsin(i["X"])}, grad=["X"]),
    OpCase("hard_shrink", {"X": _away_from([-0.5, 0.5], 3, 4)},
           ref=lambda i, a: {"Out": np.where(np.abs(i["X"]) > 0.5, i["X"], 0)}, grad=["X"]),
    OpCase("thresholded_relu", {"X": _away_from([1.0], 3, 4)},
           ref=lambda i, a: {"Out": np.where(i["X"] > 1.0, i["X"], 0)}, grad=["X"]),
    OpCase("selu", {"X": away_from_zero(3, 4) * 2},
           ref=lambda i, a: {"Out": 1.0507009873554805 * np.where(
               i["X"] > 0, i["X"], 1.6732632423543772 * (np.exp(_f64(i["X"])) - 1))},
           grad=["X"]),
    OpCase("stanh", {"X": r(3, 4, low=-2, high=2)},
           ref=lambda i, a: {"Out": 1.7159 * np.tanh(0.67 * _f64(i["X"]))}, grad=["X"]),
    OpCase("brelu", {"X": _away_from([1.0, 2.0], 3, 4)}, attrs={"t_min": 1.0, "t_max": 2.0},
           ref=lambda i, a: {"Out": np.clip(i["X"], 1.0, 2.0)}, grad=["X"]),
    OpCase("soft_relu", {"X": _away_from([-2.0, 2.0], 3, 4)}, attrs={"threshold": 2.0},
           ref=lambda i, a: {"Out": np.log1p(np.exp(np.clip(_f64(i["X"]), -2, 2)))}),
    OpCase("soft_relu", {"X": r(3, 4, low=-1.5, high=1.5)}, attrs={"threshold": 2.0},
           ref=lambda i, a: {"Out": np.log1p(np.exp(_f64(i["X"])))}, grad=["X"],
           name="inside_the_clip"),
    OpCase("hard_swish", {"X": _away_from([-3.0, 3.0], 3, 4) * 1.5},
           ref=lambda i, a: {"Out": _f64(i["X"]) * np.clip(_f64(i["X"]) + 3, 0, 6) / 6},
           grad=["X"]),
    OpCase("mish", {"X": r(3, 4, low=-3, high=3)},
           ref=lambda i, a: {"Out": _f64(i["X"]) * np.tanh(np.log1p(np.exp(_f64(i["X"]))))},
           grad=["X"]),
    # past +-threshold Paddle takes softplus as X and as e^X
    OpCase("mish", {"X": _away_from([-1.0, 1.0], 3, 4)}, attrs={"threshold": 1.0},
           ref=lambda i, a: {"Out": _f64(i["X"]) * np.tanh(np.where(
               i["X"] > 1, _f64(i["X"]), np.where(i["X"] < -1, np.exp(_f64(i["X"])),
                                                  np.log1p(np.exp(_f64(i["X"]))))))},
           grad=["X"], name="threshold"),
]


(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


@pytest.mark.parametrize("op_type, needs", [
    ("relu", "Out"), ("sigmoid", "Out"), ("tanh", "Out"), ("exp", "Out"), ("sqrt", "Out"),
    ("leaky_relu", "X"), ("log", "X"), ("square", "X"), ("abs", "X"), ("clip", "X"),
])
def test_grad_op_takes_only_what_it_needs(op_type, needs):
    attrs = {"min": -1.0, "max": 1.0} if op_type == "clip" else {}
    _, op, _, _ = build(OpCase(op_type, {"X": r(2, low=0.5)}, attrs=attrs))
    (spec,) = registry.make_grad_ops(op)
    assert spec.type == op_type + "_grad"
    assert set(spec.inputs) == {needs, "Out@GRAD"}
    assert spec.outputs == {"X@GRAD": ["x@GRAD"]}


def _append_clip(attrs):
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(2, 3), dtype="float32")
    block.create_var(name="out")
    block.append_op(type="clip", inputs={"X": ["x"]}, outputs={"Out": ["out"]}, attrs=attrs)


def test_clip_min_above_max_raises():
    with pytest.raises(InvalidArgument, match=r"^clip: attribute 'min' expected at most max"):
        _append_clip({"min": 2.0, "max": 1.0})


def test_clip_without_bounds_raises():
    with pytest.raises(InvalidArgument, match=r"^clip: attribute 'min' expected a float"):
        _append_clip({"max": 1.0})


@pytest.mark.parametrize("op_type", ["sigmoid", "tanh", "log", "sqrt", "atan", "mish"])
def test_float_only_activation_refuses_an_integer_tensor_when_built(op_type):
    from fluid_nb.errors import InvalidType
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(3,), dtype="int32")
    block.create_var(name="out")
    with pytest.raises(InvalidType, match=rf"^{op_type}: input 'X' expected a float16, "
                                          r"float32 or float64 tensor, but received int32"):
        block.append_op(type=op_type, inputs={"X": ["x"]}, outputs={"Out": ["out"]})
