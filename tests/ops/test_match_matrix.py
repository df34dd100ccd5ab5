"""match_matrix_tensor against per-pair NumPy products, with float64 finite-difference
gradients for X, Y and W."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(24)
X_LOD, Y_LOD = [[0, 1, 3]], [[0, 2, 3]]
h, t = 3, 2


def ref(i, a):
    x, y, w = i["X"], i["Y"], i["W"]
    outs, offsets = [], [0]
    for k in range(len(X_LOD[0]) - 1):
        xs = x[X_LOD[0][k]:X_LOD[0][k + 1]]
        ys = y[Y_LOD[0][k]:Y_LOD[0][k + 1]]
        m = np.stack([xs @ w[:, j, :] @ ys.T for j in range(w.shape[1])])
        outs.append(m.reshape(-1))
        offsets.append(offsets[-1] + m.size)
    return {"Out": (np.concatenate(outs).reshape(-1, 1), [offsets])}


CASES = [
    OpCase("match_matrix_tensor", {"X": rng.uniform(-1, 1, (3, h)),
                                   "Y": rng.uniform(-1, 1, (3, h)),
                                   "W": rng.uniform(-1, 1, (h, t, h))},
           attrs={"dim_t": t}, lod={"X": X_LOD, "Y": Y_LOD}, ref=ref,
           grad=["X", "Y", "W"], grad_outputs=["Out"]),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
