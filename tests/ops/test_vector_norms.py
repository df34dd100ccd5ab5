"""norm, p_norm, l1_norm, frobenius_norm and squared_l2_distance against NumPy, with float64
finite-difference gradients."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(13)


def r(*shape, low=-1.0, high=1.0, dtype="float64"):
    return rng.uniform(low, high, shape).astype(dtype)


def norm_ref(i, a):
    x = i["X"]
    norm = np.sqrt((x * x).sum(axis=a["axis"], keepdims=True) + a.get("epsilon", 1e-10))
    return {"Out": x / norm, "Norm": norm}


def p_norm_ref(i, a):
    x, p = i["X"], a.get("porder", 2.0)
    axis = a.get("axis", -1)
    keep = a.get("keepdim", False)
    if p == np.inf:
        out = np.abs(x).max(axis=axis, keepdims=keep)
    else:
        out = (np.abs(x) ** p).sum(axis=axis, keepdims=keep) ** (1.0 / p)
    return {"Out": out}


def fro_ref(i, a):
    axes = tuple(a["dim"])
    return {"Out": np.sqrt((i["X"] ** 2).sum(axis=axes, keepdims=a.get("keep_dim", False)))}


def sq_l2_ref(i, a):
    x, y = i["X"], i["Y"]
    sub = x.reshape(len(x), -1) - y.reshape(len(y), -1)
    return {"sub_result": sub, "Out": (sub * sub).sum(1, keepdims=True)}


CASES = [
    OpCase("norm", {"X": r(2, 3, 4)}, attrs={"axis": 1, "epsilon": 1e-8}, ref=norm_ref,
           grad=["X"], grad_outputs=["Out"]),
    OpCase("norm", {"X": r(3, 5, dtype="float32")}, attrs={"axis": -1}, ref=norm_ref,
           name="last_axis_float32"),
    OpCase("p_norm", {"X": r(2, 3, 4, low=0.5, high=1.5)}, attrs={"porder": 2.0, "axis": 1},
           ref=p_norm_ref, grad=["X"], grad_rtol=1e-4),
    OpCase("p_norm", {"X": r(3, 4)}, attrs={"porder": 3.0, "axis": -1, "keepdim": True},
           ref=p_norm_ref, grad=["X"], name="p3_keepdim"),
    OpCase("p_norm", {"X": r(3, 4)}, attrs={"porder": float("inf"), "axis": 0},
           ref=p_norm_ref, grad=["X"], name="inf"),
    OpCase("l1_norm", {"X": r(3, 4)},
           ref=lambda i, a: {"Out": np.abs(i["X"]).sum().reshape(1)}, grad=["X"]),
    OpCase("frobenius_norm", {"X": r(2, 3, 4)}, attrs={"dim": [1, 2]}, ref=fro_ref,
           grad=["X"]),
    OpCase("frobenius_norm", {"X": r(3, 3, 2)}, attrs={"dim": [0, 1], "keep_dim": True},
           ref=fro_ref, grad=["X"], name="keep_dim"),
    OpCase("squared_l2_distance", {"X": r(4, 3), "Y": r(4, 3)}, ref=sq_l2_ref,
           grad=["X", "Y"], grad_outputs=["Out"]),
    OpCase("squared_l2_distance", {"X": r(3, 2, 2), "Y": r(1, 2, 2)}, ref=sq_l2_ref,
           grad=["X", "Y"], grad_outputs=["Out"], name="broadcast_y"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_norm_rejects_an_axis_outside_x():
    from .op_test import assert_build_fails
    assert_build_fails("norm", {"X": r(2, 3)}, {"axis": 2}, "axis", "[-2, 2)")
