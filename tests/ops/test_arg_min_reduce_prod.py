"""arg_min and reduce_prod against NumPy; reduce_prod's gradient against float64 finite
differences, zeros in X included."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(12)


def r(*shape, dtype="float64"):
    return rng.uniform(0.5, 1.5, shape).astype(dtype)


def prod_ref(axes, keep=False):
    return lambda i, a: {"Out": i["X"].prod(axis=axes, keepdims=keep)}


with_zero = r(3, 4)
with_zero[1, 2] = 0.0
with_zero[2, 0] = with_zero[2, 3] = 0.0

CASES = [
    OpCase("arg_min", {"X": np.array([[3., 1., 1.], [0., 5., -2.]], "float32")},
           attrs={"axis": 1}, ref=lambda i, a: {"Out": i["X"].argmin(axis=1)}),
    OpCase("arg_min", {"X": r(2, 3, 4)}, attrs={"axis": 0, "keepdims": True, "dtype": 2},
           ref=lambda i, a: {"Out": i["X"].argmin(axis=0)[None].astype("int32")},
           name="keepdims_int32"),
    OpCase("arg_min", {"X": r(2, 3)}, attrs={"axis": 0, "flatten": True},
           ref=lambda i, a: {"Out": np.array([i["X"].argmin()])}, name="flatten"),
    OpCase("reduce_prod", {"X": r(2, 3, 4)}, attrs={"dim": [1]}, ref=prod_ref((1,)),
           grad=["X"]),
    OpCase("reduce_prod", {"X": r(2, 3, 4)}, attrs={"dim": [0, 2], "keep_dim": True},
           ref=prod_ref((0, 2), True), grad=["X"], name="two_dims_kept"),
    OpCase("reduce_prod", {"X": r(3, 2)}, attrs={"reduce_all": True},
           ref=prod_ref(None), grad=["X"], name="all"),
    OpCase("reduce_prod", {"X": with_zero}, attrs={"dim": [1]}, ref=prod_ref((1,)),
           grad=["X"], name="zeros"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
