"""cos_sim against NumPy, with float64 finite-difference gradients for matching and
broadcast (one-row) Y."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(5)


def r(*shape, dtype="float64"):
    return rng.uniform(-1, 1, shape).astype(dtype)


def cos_ref(i, a):
    x = i["X"].reshape(len(i["X"]), -1).astype("float64")
    y = i["Y"].reshape(len(i["Y"]), -1).astype("float64")
    xn = np.linalg.norm(x, axis=1, keepdims=True)
    yn = np.linalg.norm(y, axis=1, keepdims=True)
    out = (x * y).sum(1, keepdims=True) / (xn * yn)
    dtype = i["X"].dtype
    return {"Out": out.astype(dtype), "XNorm": xn.astype(dtype), "YNorm": yn.astype(dtype)}


CASES = [
    OpCase("cos_sim", {"X": r(4, 5, dtype="float32"), "Y": r(4, 5, dtype="float32")},
           ref=cos_ref),
    OpCase("cos_sim", {"X": r(3, 4), "Y": r(3, 4)}, ref=cos_ref, grad=["X", "Y"],
           grad_outputs=["Out"], name="grad"),
    OpCase("cos_sim", {"X": r(4, 2, 3), "Y": r(1, 2, 3)}, ref=cos_ref, grad=["X", "Y"],
           grad_outputs=["Out"], name="broadcast_y_rank3"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_out_keeps_the_lod_of_x():
    from .op_test import check_output
    x = r(3, 2)
    result = check_output(OpCase("cos_sim", {"X": x, "Y": r(1, 2)}, lod={"X": [[0, 1, 3]]},
                                 ref=cos_ref))
    assert result["Out"].lod() == [[0, 1, 3]]
