"""Arithmetic ops against NumPy, with float64 finite-difference gradients."""
import numpy as np
import pytest

from .op_test import OpCase, case_id, check_grad, check_output

rng = np.random.RandomState(0)


def r(*shape, dtype="float32"):
    return rng.uniform(-1, 1, shape).astype(dtype)


CASES = [
    OpCase("elementwise_add", {"X": r(3, 4), "Y": r(3, 4)},
           ref=lambda i, a: {"Out": i["X"] + i["Y"]}, grad=["X", "Y"], name="same_shape"),
    OpCase("elementwise_add", {"X": r(2, 3, 4), "Y": r(3)}, attrs={"axis": 1},
           ref=lambda i, a: {"Out": i["X"] + i["Y"].reshape(1, 3, 1)}, grad=["X", "Y"],
           name="axis1"),
    OpCase("elementwise_add", {"X": r(2, 3, 4), "Y": r(4)},
           ref=lambda i, a: {"Out": i["X"] + i["Y"]}, grad=["X", "Y"], name="trailing"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_output_matches_numpy(case):
    check_output(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad_matches_finite_differences(case):
    check_grad(case)
