"""var_conv_2d against a pixel-by-pixel NumPy convolution of each image, with float64
finite-difference gradients for X and W."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(26)
C, OC, KH, KW, SH, SW = 2, 3, 2, 3, 1, 2
ROWS, COLS = [2, 3], [3, 1]


def ref(i, a):
    x = i["X"].reshape(-1)
    w = i["W"]
    outs, offsets, start = [], [0], 0
    for h, wd in zip(ROWS, COLS):
        img = x[start:start + C * h * wd].reshape(C, h, wd)
        start += C * h * wd
        ys, xs = range(0, h, SH), range(0, wd, SW)
        col = np.zeros((C * KH * KW, len(ys) * len(xs)))
        for z in range(C):
            for yi, y in enumerate(ys):
                for xi, xx in enumerate(xs):
                    for ky in range(KH):
                        for kx in range(KW):
                            iy, ix = y + ky - KH // 2, xx + kx - KW // 2
                            if 0 <= iy < h and 0 <= ix < wd:
                                col[z * KH * KW + ky * KW + kx, yi * len(xs) + xi] = \
                                    img[z, iy, ix]
        out = (w @ col).reshape(-1)
        outs.append(out)
        offsets.append(offsets[-1] + out.size)
    return {"Out": (np.concatenate(outs).reshape(-1, 1), [offsets])}


def lod(lengths):
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    return [offsets]


sizes = [C * h * w for h, w in zip(ROWS, COLS)]
CASES = [
    OpCase("var_conv_2d", {"X": rng.uniform(-1, 1, (sum(sizes), 1)),
                           "ROW": rng.uniform(size=(sum(ROWS), 4)),
                           "COLUMN": rng.uniform(size=(sum(COLS), 4)),
                           "W": rng.uniform(-1, 1, (OC, C * KH * KW))},
           attrs={"InputChannel": C, "OutputChannel": OC, "KernelH": KH, "KernelW": KW,
                  "StrideH": SH, "StrideW": SW},
           lod={"X": lod(sizes), "ROW": lod(ROWS), "COLUMN": lod(COLS)}, ref=ref,
           grad=["X", "W"], grad_outputs=["Out"]),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
