"""fusion_seqpool_concat and fusion_seqpool_cvm_concat against loop-by-loop NumPy pools."""
import numpy as np

from .op_test import EachLoD, OpCase, table_tests

rng = np.random.RandomState(22)
LODS = EachLoD([[[0, 2, 2, 5]], [[0, 1, 4, 6]]])  # the second sequence of X_0 is empty
xs = [rng.uniform(0.1, 1, (5, 4)).astype("float32"),
      rng.uniform(0.1, 1, (6, 4)).astype("float32")]


def pools(i, a):
    out = []
    for x, lod in zip(i["X"], LODS):
        offsets = lod[0]
        rows = []
        for b, e in zip(offsets[:-1], offsets[1:]):
            seq = x[b:e]
            if e == b:
                rows.append(np.zeros(x.shape[1], x.dtype))
            elif a["pooltype"] == "SUM":
                rows.append(seq.sum(0))
            elif a["pooltype"] == "AVERAGE":
                rows.append(seq.mean(0))
            else:
                rows.append(seq.sum(0) / np.sqrt(e - b))
        out.append(np.array(rows, x.dtype))
    return out


def concat_ref(i, a):
    return {"Out": np.concatenate(pools(i, a), axis=1)}


def cvm_ref(i, a):
    parts = []
    for p in pools(i, a):
        if a.get("use_cvm", True):
            p = p.copy()
            p[:, 0] = np.log(p[:, 0] + 1)
            p[:, 1] = np.log(p[:, 1] + 1) - p[:, 0]
        else:
            p = p[:, 2:]
        parts.append(p)
    return {"Out": np.concatenate(parts, axis=1)}


cvm = np.array([[0.6, 0.4]], "float32")
CASES = [
    OpCase("fusion_seqpool_concat", {"X": xs}, attrs={"pooltype": pool, "axis": 1},
           lod={"X": LODS}, ref=concat_ref, name=pool.lower())
    for pool in ("SUM", "AVERAGE", "SQRT")
] + [
    OpCase("fusion_seqpool_cvm_concat", {"X": xs, "CVM": cvm},
           attrs={"pooltype": "SUM", "axis": 1, "use_cvm": use}, lod={"X": LODS},
           ref=cvm_ref, name=f"use_cvm_{use}")
    for use in (True, False)
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
