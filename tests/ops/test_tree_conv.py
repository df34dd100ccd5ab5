"""tree_conv against a patch-by-patch NumPy reference (TBCNN's eta weights), with float64
finite-difference gradients for the node vectors and the filter."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(27)
EDGES = [[1, 2], [1, 3], [1, 4], [2, 5], [2, 6], [4, 7], [0, 0]]  # the last row pads
N, F, MAX_DEPTH = 7, 2, 3


def ref(i, a):
    x, w = i["NodesVector"], i["Filter"]
    depth_max = a["max_depth"]
    children = {}
    for p, c in EDGES:
        if p and c:
            children.setdefault(p, []).append(c)
    out = np.zeros((x.shape[0], N) + w.shape[2:])
    for u in range(1, N + 1):
        patch = [(u, 1, 1, 0)]

        def walk(node, depth):
            kids = children.get(node, [])
            for idx, kid in enumerate(kids, 1):
                if depth + 1 < depth_max:
                    patch.append((kid, idx, len(kids), depth + 1))
                    walk(kid, depth + 1)
        walk(u, 0)
        for v, idx, n, d in patch:
            eta_t = (depth_max - d) / depth_max
            eta_l = (1 - eta_t) * (0.5 if n == 1 else (idx - 1) / (n - 1))
            eta_r = (1 - eta_t) * (1 - eta_l)
            mix = eta_l * w[:, 0] + eta_r * w[:, 1] + eta_t * w[:, 2]
            out[:, u - 1] += np.einsum("bk,kof->bof", x[:, v - 1], mix)
    return {"Out": out}


CASES = [
    OpCase("tree_conv", {"NodesVector": rng.uniform(-1, 1, (2, N, F)),
                         "EdgeSet": np.tile(np.array(EDGES, "int32")[None], (2, 1, 1)),
                         "Filter": rng.uniform(-1, 1, (F, 3, 2, 1))},
           attrs={"max_depth": MAX_DEPTH}, ref=ref, grad=["NodesVector", "Filter"]),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
