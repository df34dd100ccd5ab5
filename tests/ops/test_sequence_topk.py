"""sequence_topk_avg_pooling against a row-by-row NumPy reference, with float64
finite-difference gradients (values kept distinct so the top-k sets are stable)."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(28)
C, TOPKS, ROWS, COLS = 2, [1, 3], [2, 1], [4, 2]


def lod(lengths):
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    return [offsets]


def ref(i, a):
    x = i["X"].reshape(-1)
    out, start = [], 0
    for r, c in zip(ROWS, COLS):
        block = x[start:start + C * r * c].reshape(C, r, c)
        start += C * r * c
        for row in range(r):
            feats = []
            for ch in range(C):
                top = np.sort(block[ch, row])[::-1]
                feats += [top[:k].sum() / k for k in TOPKS]
            out.append(feats)
    return {"Out": (np.array(out), lod(ROWS))}


sizes = [C * r * c for r, c in zip(ROWS, COLS)]
CASES = [
    OpCase("sequence_topk_avg_pooling",
           {"X": rng.permutation(sum(sizes)).astype("float64").reshape(-1, 1) / 10,
            "ROW": rng.uniform(size=(sum(ROWS), 3)), "COLUMN": rng.uniform(size=(sum(COLS), 3))},
           attrs={"topks": TOPKS, "channel_num": C},
           lod={"X": lod(sizes), "ROW": lod(ROWS), "COLUMN": lod(COLS)}, ref=ref,
           grad=["X"], grad_outputs=["Out"]),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
