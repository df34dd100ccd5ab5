"""equal_reduce against NumPy: equal and unequal tensors, with axis broadcasting."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(21)
x = rng.randint(0, 3, (2, 3, 4)).astype("int32")


def ref(i, a):
    xv, yv = i["X"], i["Y"]
    axis = a.get("axis", -1)
    if axis != -1 and yv.ndim < xv.ndim:
        yv = yv.reshape(yv.shape + (1,) * (xv.ndim - axis - yv.ndim))
    return {"Out": np.array([np.all(xv == yv)])}


CASES = [
    OpCase("equal_reduce", {"X": x, "Y": x.copy()}, ref=ref, name="equal"),
    OpCase("equal_reduce", {"X": x, "Y": x + (x == 1)}, ref=ref, name="not_equal"),
    OpCase("equal_reduce", {"X": np.ones((2, 3, 4), "float32"), "Y": np.ones(3, "float32")},
           attrs={"axis": 1}, ref=ref, name="broadcast_axis"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
