"""tdm_child against a loop over the tree's info table."""
import numpy as np

import fluid_nb as fluid
from .op_test import OpCase, table_tests

# rows: item id, layer id, parent id, child 0, child 1 (node 0 pads)
TREE = np.array([[0, 0, 0, 1, 2], [0, 1, 0, 3, 4], [0, 1, 0, 5, 0], [7, 2, 1, 0, 0],
                 [8, 2, 1, 0, 0], [9, 2, 2, 0, 0]], "int64")


def child_ref(i, a):
    x, info = i["X"], i["TreeInfo"]
    child = np.zeros(x.shape + (2,), "int32")
    leaf = np.zeros_like(child)
    for idx in np.ndindex(*x.shape):
        if x[idx] != 0:
            child[idx] = info[x[idx], 3:5]
        leaf[idx] = [int(info[c, 0] != 0) for c in child[idx]]
    return {"Child": child, "LeafMask": leaf}


CASES = [
    OpCase("tdm_child", {"X": np.array([[0, 1, 2], [3, 2, 1]], "int64"), "TreeInfo": TREE},
           attrs={"child_nums": 2, "dtype": int(fluid.core.VarDesc.VarType.INT32)},
           ref=child_ref),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
