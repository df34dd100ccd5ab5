"""proximal_gd and proximal_adagrad against NumPy, with and without the l1 term."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(15)


def r(*shape, dtype="float32"):
    return rng.uniform(-1, 1, shape).astype(dtype)


def prox(p, lr, l1, l2):
    if l1 > 0:
        return np.sign(p) * np.maximum(np.abs(p) - lr * l1, 0) / (1 + lr * l2)
    return p / (1 + lr * l2)


def gd_ref(i, a):
    lr = i["LearningRate"][0]
    return {"ParamOut": prox(i["Param"] - lr * i["Grad"], lr, a["l1"], a["l2"])}


def adagrad_ref(i, a):
    lr = i["LearningRate"][0]
    m = i["Moment"] + i["Grad"] ** 2
    return {"ParamOut": prox(i["Param"] - lr * i["Grad"] / np.sqrt(m), lr, a["l1"], a["l2"]),
            "MomentOut": m}


lr = np.array([0.1], "float32")
CASES = [
    OpCase("proximal_gd", {"Param": r(4, 5), "Grad": r(4, 5), "LearningRate": lr},
           attrs={"l1": 0.1, "l2": 0.2}, ref=gd_ref),
    OpCase("proximal_gd", {"Param": r(6), "Grad": r(6), "LearningRate": lr},
           attrs={"l1": 0.0, "l2": 0.5}, ref=gd_ref, name="no_l1"),
    OpCase("proximal_adagrad", {"Param": r(4, 5), "Moment": np.abs(r(4, 5)) + 0.1,
                                "Grad": r(4, 5), "LearningRate": lr},
           attrs={"l1": 0.1, "l2": 0.2}, ref=adagrad_ref),
    OpCase("proximal_adagrad", {"Param": r(3), "Moment": np.abs(r(3)) + 0.1, "Grad": r(3),
                                "LearningRate": lr},
           attrs={"l1": 0.0, "l2": 0.0}, ref=adagrad_ref, name="plain_adagrad_step"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
