"""fused_elemwise_activation against NumPy compositions, both functor orders, with axis
broadcasting either way, and float64 finite-difference gradients."""
import numpy as np

from .op_test import OpCase, assert_build_fails, table_tests

rng = np.random.RandomState(20)


def r(*shape):
    v = rng.uniform(-1, 1, shape)
    v[np.abs(v) < 0.05] = 0.3  # away from relu's kink
    return v


UNARY = {"scale": lambda v, s: v * s, "relu": lambda v, s: np.maximum(v, 0),
         "tanh": lambda v, s: np.tanh(v), "sigmoid": lambda v, s: 1 / (1 + np.exp(-v))}
BINARY = {"elementwise_add": np.add, "elementwise_mul": np.multiply}


def fused_ref(i, a):
    x, y = i["X"], i["Y"]
    axis, (f1, f2), s = a.get("axis", -1), a["functor_list"], a.get("scale", 0.0)

    def align(p, q):  # the smaller operand's dims line up with the larger's from axis
        if axis == -1 or p.ndim == q.ndim:
            return p, q
        if p.ndim > q.ndim:
            return p, q.reshape(q.shape + (1,) * (p.ndim - axis - q.ndim))
        return p.reshape(p.shape + (1,) * (q.ndim - axis - p.ndim)), q
    if f1 in BINARY:
        inner = UNARY[f2](y, s)
        out = BINARY[f1](*align(x, inner))
    else:
        inner = BINARY[f2](*align(x, y))
        out = UNARY[f1](inner, s)
    return {"Out": out, "IntermediateOut": inner}


def case(f1, f2, x, y, axis=-1, name=""):
    return OpCase("fused_elemwise_activation", {"X": x, "Y": y},
                  attrs={"functor_list": [f1, f2], "axis": axis, "scale": 0.5},
                  ref=fused_ref, grad=["X", "Y"], grad_outputs=["Out"],
                  name=name or f"{f1}_{f2}")


CASES = [
    case("elementwise_add", "scale", r(2, 3), r(2, 3)),
    case("elementwise_mul", "tanh", r(2, 3, 4), r(3), axis=1, name="mul_tanh_axis"),
    case("relu", "elementwise_add", r(2, 3, 4), r(4)),
    case("sigmoid", "elementwise_mul", r(3), r(3, 2, 2), axis=0, name="x_broadcast"),
    case("scale", "elementwise_add", r(2, 1), r(1), axis=1, name="rowwise"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_two_unary_functors_are_refused():
    assert_build_fails("fused_elemwise_activation", {"X": r(2), "Y": r(2)},
                       {"functor_list": ["relu", "scale"]}, "functor_list", "binary")
