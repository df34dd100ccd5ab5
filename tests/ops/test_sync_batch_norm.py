"""sync_batch_norm on one device: batch_norm's training statistics and gradients."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(23)


def bn_ref(i, a):
    x = i["X"]
    mu = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    shape = (1, -1, 1, 1)
    y = (x - mu.reshape(shape)) / np.sqrt(var.reshape(shape) + a["epsilon"])
    y = y * i["Scale"].reshape(shape) + i["Bias"].reshape(shape)
    m = a["momentum"]
    return {"Y": y, "MeanOut": i["Mean"] * m + mu * (1 - m),
            "VarianceOut": i["Variance"] * m + var * (1 - m)}


CASES = [
    OpCase("sync_batch_norm", {"X": rng.uniform(-1, 1, (2, 3, 2, 2)),
                               "Scale": rng.uniform(0.5, 1.5, 3), "Bias": rng.uniform(-1, 1, 3),
                               "Mean": np.zeros(3), "Variance": np.ones(3)},
           attrs={"epsilon": 1e-5, "momentum": 0.9}, ref=bn_ref,
           grad=["X", "Scale", "Bias"], grad_outputs=["Y"]),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
